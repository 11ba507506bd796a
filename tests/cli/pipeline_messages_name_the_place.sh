# Messages that named the wrong place or said something untrue: a "print"
# that is not a list blamed "outputs", two outputs to one dataset said
# "'/d' already exists" (nothing did), a dtype that is not a string said
# "missing".
$PY -c "import h5py, numpy as np
with h5py.File('a.h5', 'w') as f:
    f['x'] = np.array([1.0, 2.0, 3.0])" || exit 99
echo '{"inputs": {"x": "a.h5:/x"}, "steps": [{"name": "r", "op": "sum",
 "args": ["x"]}], "print": "r"}' > a.json
$CHUNKCTL run a.json && exit 97
echo '{"inputs": {"x": "a.h5:/x"}, "steps": [{"name": "y", "op": "add",
 "args": ["x", 1]}, {"name": "w", "op": "add", "args": ["x", 2]}],
 "outputs": {"y": "o.h5:/d", "w": "o.h5:/d"}}' > b.json
$CHUNKCTL run b.json && exit 96
[ ! -e o.h5 ] || exit 98
echo '{"inputs": {"x": "a.h5:/x"}, "steps": [{"name": "y", "op": "astype",
 "args": ["x"], "dtype": 5}], "outputs": {"y": "c.zarr"}}' > c.json
$CHUNKCTL run c.json
