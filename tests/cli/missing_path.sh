# A path that does not exist.
$CHUNKCTL info nope.h5
