# --resume onto an output that exists (without --force) said
# "nothing to resume; starting afresh" before refusing to overwrite it.
$CHUNKCTL gen --quiet --shape 50,3 a.h5:/X || exit 99
$CHUNKCTL copy --quiet a.h5 b.zarr || exit 99
$CHUNKCTL copy a.h5 b.zarr --resume
