# A one-step op's key given twice is refused: --axis 0 --axis 1 reduced
# over axis 1 alone, where the user may have meant both.
$CHUNKCTL gen --quiet --shape 4,3 a.h5:/x || exit 99
$CHUNKCTL std a.h5:/x --axis 0 --axis 1
