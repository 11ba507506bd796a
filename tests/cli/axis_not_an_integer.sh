# An axis list element that is not a number ([[1]], true) said "axis
# nan out of range", and one that is not whole "axis 1.5 out of range":
# it is not an axis at all.  Said so for a pipeline step, a one-step
# command, and the ops that take "axis" as a list of axes (squeeze).
$CHUNKCTL gen --quiet --shape 3,2 a.h5:/x || exit 99
echo '{"inputs": {"x": "a.h5:/x"}, "steps": [{"name": "s", "op": "sum",
 "args": ["x"], "axis": [[1]]}], "print": ["s"]}' > p.json
$CHUNKCTL run --quiet p.json
$CHUNKCTL sum --quiet a.h5:/x --axis '[[1]]'
$CHUNKCTL sum --quiet a.h5:/x --axis '[0, 1.5]'
$CHUNKCTL squeeze --quiet a.h5:/x --axis '[[0]]' -o q.h5
$CHUNKCTL sum --quiet a.h5:/x --axis '[2]'
