# A model file that is not there is named as the model.
$CHUNKCTL gen --quiet --shape 20,3 a.h5:/X || exit 99
$CHUNKCTL glm-predict model.h5 a.h5:/X -o p.h5
