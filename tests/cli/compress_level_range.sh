# A known codec with a level it does not take names the level and its range.
$CHUNKCTL gen --quiet --shape 10 a.h5:/x || exit 99
$CHUNKCTL copy --compress zstd:99 a.h5 out.h5
