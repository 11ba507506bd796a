# reduce --axis given twice is refused, as for the one-step ops.
$CHUNKCTL gen --quiet --shape 4,3 a.h5:/x || exit 99
$CHUNKCTL reduce mean a.h5:/x --axis 0 --axis 1
