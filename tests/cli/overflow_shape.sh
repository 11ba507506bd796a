# A shape whose element count overflows 64 bits: refused, never allocated.
mkdir big.zarr
cat > big.zarr/.zarray <<'J'
{"zarr_format": 2, "shape": [4294967296, 4294967296, 1024], "chunks": [1000, 1000, 4],
 "dtype": "<f8", "compressor": null, "fill_value": 0, "order": "C",
 "filters": null}
J
$CHUNKCTL copy --quiet big.zarr out.h5
rc=$?
test -e out.h5 && echo "output appeared" >&2
exit $rc
