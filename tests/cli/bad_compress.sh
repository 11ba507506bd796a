# An unknown compressor is a usage error (exit 2).
$CHUNKCTL gen --quiet --shape 10 a.h5:/x || exit 99
$CHUNKCTL copy --compress lz5 a.h5 out.h5
