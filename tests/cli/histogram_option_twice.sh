# reduce and histogram take each value option once, as one-step ops take
# their keys: the last one silently winning hid a typo in a script.
$CHUNKCTL gen --quiet --shape 100 a.h5:/x || exit 99
$CHUNKCTL histogram a.h5:/x --bins 3 --range 0,1 --range 5,13
r1=$?
$CHUNKCTL reduce std a.h5:/x --ddof 1 --ddof 0
r2=$?
exit $((r1 * 10 + r2))
