# Broken .zarray JSON: the message gives line and column.
mkdir bad.zarr
printf '{\n  "zarr_format": 2,\n  "shape": [10, 10\n}\n' > bad.zarr/.zarray
$CHUNKCTL info bad.zarr
