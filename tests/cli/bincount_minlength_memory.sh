# A minlength the memory cannot hold is named as the reason, not the
# data's largest value (which was printed as minlength - 1).
$CHUNKCTL gen --quiet --shape 4 --dtype int32 --dist integers --high 5 a.h5:/i || exit 99
$CHUNKCTL bincount a.h5:/i --minlength 1e12 --memory 64M
