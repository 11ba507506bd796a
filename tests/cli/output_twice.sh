# -o given twice is a usage error naming both (a script's second -o used
# to win silently), for commands with their own options and one-step ops.
$CHUNKCTL gen --quiet --shape 10 --chunks 5 x.h5:/x || exit 99
$CHUNKCTL reduce sum x.h5:/x -o a.h5 -o b.h5
echo "exit $?" >&2
$CHUNKCTL sum x.h5:/x -o a.h5 --output b.h5
echo "exit $?" >&2
test -e a.h5 && echo "a.h5 appeared" >&2
test -e b.h5 && echo "b.h5 appeared" >&2
$CHUNKCTL histogram x.h5:/x --range 3,1
