# take with one index given as a number (NumPy's scalar take drops the
# axis; chunkctl's list form keeps it): the refusal says how to get either.
$CHUNKCTL gen --quiet --shape 4,5 a.h5:/x || exit 99
$CHUNKCTL take a.h5:/x --indices 4 --axis 1 -o o.h5:/r --quiet
