# --chunks must match the array's dimensions.
$CHUNKCTL gen --quiet --shape 10,10 a.h5:/x || exit 99
$CHUNKCTL copy --quiet --chunks 5 a.h5 out.h5
