# Several arrays cannot go into one named dataset.
$CHUNKCTL gen --quiet --shape 10 a.zarr:/x || exit 99
mkdir -p a.zarr/y && cp a.zarr/x/.zarray a.zarr/y/
$CHUNKCTL copy --quiet a.zarr out.h5:/z
