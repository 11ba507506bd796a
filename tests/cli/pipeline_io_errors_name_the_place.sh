# An input or output target refused for its form named neither the
# pipeline file nor the place ("chunkctl: '': no file name", "chunkctl:
# o.txt: cannot tell the output format ..."), where every other error of
# inputs and outputs says "FILE: inputs.x: ...".  Nothing is written.
$CHUNKCTL gen --quiet --shape 3 a.h5:/x || exit 99
echo '{"inputs": {"x": ""}, "steps": [{"name": "s", "op": "sum",
 "args": ["x"]}], "print": ["s"]}' > in.json
$CHUNKCTL run --quiet in.json
echo '{"inputs": {"x": "a.h5:/x"}, "steps": [{"name": "s", "op": "add",
 "args": ["x", 1]}], "outputs": {"s": "o.txt"}}' > out.json
$CHUNKCTL run --quiet out.json
test -e o.txt && echo "o.txt written" >&2
echo '{"inputs": {"x": "a.h5:/x"}, "steps": [{"name": "s", "op": "add",
 "args": ["x", 1]}], "outputs": {"s": "n.h5:"}}' > colon.json
$CHUNKCTL run --quiet colon.json
