# A key given twice in one JSON object: the first value was used and the
# second ignored silently (sum ran, "max" and "axis": 5 were dropped).
$PY -c "import h5py, numpy as np
with h5py.File('a.h5', 'w') as f:
    f['x'] = np.array([1.0, 2.0, 3.0])" || exit 99
printf '%s' '{"inputs": {"x": "a.h5:/x"}, "steps": [{"name": "r",
 "op": "sum", "op": "max", "args": ["x"]}], "print": ["r"]}' > p.json
$CHUNKCTL run p.json && exit 97
printf '%s' '{"inputs": {"x": "a.h5:/x"}, "inputs": {"x": "a.h5:/x"},
 "steps": [{"name": "r", "op": "sum", "args": ["x"]}], "print": ["r"]}' > q.json
$CHUNKCTL run q.json
