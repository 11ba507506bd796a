# Naming a dataset that does not exist lists the ones that do.
$CHUNKCTL gen --quiet --shape 10,10 a.h5:/x || exit 99
$CHUNKCTL gen --quiet --shape 10 b.h5:/g/y || exit 99
$CHUNKCTL info a.h5:/y
