# glm-predict names an array that glm-fit did not write: a usage error
# that names the model, not "glm-predict: : model: ...: no attribute".
$CHUNKCTL gen --quiet --shape 20,3 a.h5:/X || exit 99
$CHUNKCTL glm-predict a.h5:/X a.h5:/X -o p.h5
