# verify lists every damaged chunk in order, reads the rest, and exits 1.
$CHUNKCTL gen --quiet --shape 40,30 --chunks 10,10 --compress zstd:3 a.zarr || exit 99
$CHUNKCTL verify --quiet a.zarr >/dev/null || echo "clean store failed" >&2
printf 'garbage' > a.zarr/2.1
head -c 10 a.zarr/0.0 > t && mv t a.zarr/0.0
$CHUNKCTL verify --quiet a.zarr >out
rc=$?
sed 's/decoded in .*),/decoded,/' out >&2
exit $rc
