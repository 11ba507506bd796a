# An output inside the input (a Zarr store is a folder), or an input inside
# an output that --force would replace: refused before anything is
# written, the input left as it was.
$CHUNKCTL gen --quiet --shape 10,10 --chunks 5,5 s.zarr || exit 99
mkdir par.zarr
$CHUNKCTL gen --quiet --shape 10 --chunks 5 par.zarr/in.h5:/x || exit 99
ln -s s.zarr link.zarr
$CHUNKCTL copy --quiet s.zarr s.zarr/inner.zarr
echo "exit $?" >&2
$CHUNKCTL negative --quiet s.zarr -o s.zarr/sub/m.zarr
echo "exit $?" >&2
$CHUNKCTL copy --quiet link.zarr link.zarr/x.zarr
echo "exit $?" >&2
$CHUNKCTL copy --quiet --force par.zarr/in.h5:/x par.zarr
rc=$?
test -e s.zarr/inner.zarr -o -e s.zarr/sub -o -e s.zarr/x.zarr &&
    echo "written into the input" >&2
test -e par.zarr/in.h5 || echo "input deleted" >&2
exit $rc
