# --k 0 passed the option's check ("an integer >= 0") and was then
# refused by the pipeline as "k must be an integer in 1..N".
$CHUNKCTL gen --quiet --shape 50,3 a.h5:/X || exit 99
$CHUNKCTL svd a.h5:/X --k 0
