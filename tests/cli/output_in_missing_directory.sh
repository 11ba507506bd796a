# An output in a directory that does not exist (or under a file) is
# named as the output, not as the hidden temporary chunkctl writes beside
# it ("cannot create nosuchdir/.n.h5.ck-tmp-...").
$CHUNKCTL gen --quiet --shape 4 a.h5:/x || exit 99
$CHUNKCTL add --quiet a.h5:/x 1 -o nosuchdir/n.h5:/y
touch afile
$CHUNKCTL add --quiet a.h5:/x 1 -o afile/n.zarr
