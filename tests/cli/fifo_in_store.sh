# A FIFO where a chunk or a file should be: reported, not waited on for a
# writer that never comes (timeout turns a hang into a failure here).
$CHUNKCTL gen --quiet --shape 10,10 --chunks 5,5 --compress zstd s.zarr || exit 99
rm s.zarr/0.1 && mkfifo s.zarr/0.1 || exit 99
mkfifo f.h5 || exit 99
timeout 60 $CHUNKCTL copy --quiet s.zarr out.h5
echo "exit $?" >&2
timeout 60 $CHUNKCTL info f.h5:/x
rc=$?
test -e out.h5 && echo "output appeared" >&2
exit $rc
