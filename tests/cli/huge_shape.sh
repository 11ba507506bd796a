# A shape beyond what JSON numbers hold exactly is refused by name.
mkdir big.zarr
cat > big.zarr/.zarray <<'J'
{"zarr_format": 2, "shape": [9223372036854775807, 4], "chunks": [1000, 4],
 "dtype": "<f8", "compressor": null, "fill_value": 0, "order": "C",
 "filters": null}
J
$CHUNKCTL info big.zarr
