# --power-iters, --oversample and --seed (and a pipeline's "power_iters",
# "oversample" and "seed") were ignored by an exact svd: exit 0 and a
# result as if they had not been given.
$CHUNKCTL gen --quiet --shape 50,3 a.h5:/X || exit 99
$CHUNKCTL svd a.h5:/X --power-iters 3 -o o.h5 && exit 97
$CHUNKCTL svd a.h5:/X --k 2 --seed 7 -o o.h5 && exit 97
[ ! -e o.h5 ] || exit 98
printf '%s' '{"inputs": {"x": "a.h5:/X"}, "steps": [{"name": "s",
 "op": "svd", "args": ["x"], "oversample": 4}], "print": ["s.S"]}' > p.json
$CHUNKCTL run p.json
