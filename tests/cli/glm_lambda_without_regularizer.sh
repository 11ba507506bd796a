# --lambda without --regularizer was ignored: the fit came out
# unpenalised, exit 0, as if the option had not been given.
$CHUNKCTL gen --quiet --shape 50,3 a.h5:/X || exit 99
$CHUNKCTL gen --quiet --shape 50 --dist integers --high 2 b.h5:/y || exit 99
$CHUNKCTL glm-fit a.h5:/X b.h5:/y --lambda 0.1
