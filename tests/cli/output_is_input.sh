# Writing over the input is refused even with --force.
$CHUNKCTL gen --quiet --shape 10 a.h5:/x || exit 99
$CHUNKCTL copy --force a.h5 a.h5
