# A chunk key that is a symlink leading out of the store is refused.
$CHUNKCTL gen --quiet --shape 20,20 --chunks 10,10 --compress none a.zarr || exit 99
head -c 800 /dev/zero > outside
rm a.zarr/0.1 && ln -s ../outside a.zarr/0.1
$CHUNKCTL copy --quiet a.zarr out.h5
rc=$?
test -e out.h5 && echo "output appeared" >&2
exit $rc
