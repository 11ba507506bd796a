# A dtype chunkctl does not handle.
mkdir c.zarr
cat > c.zarr/.zarray <<'J'
{"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<c16",
 "compressor": null, "fill_value": 0, "order": "C", "filters": null}
J
$CHUNKCTL info c.zarr
