# "PATH:" (nothing after the ':') names no dataset: said so, exit 2, where
# it read as a file named "n.h5:" ("cannot tell the output format") or
# "q.h5:: No such file or directory"; nothing is written.  A file whose
# name ends in ':' is still read as given.
$CHUNKCTL gen --quiet --shape 4 a.h5:/x || exit 99
$CHUNKCTL add --quiet a.h5:/x 1 -o n.h5:
rc=$?
test -e n.h5 || test -e n.h5: && echo "an output was written" >&2
cp a.h5 'b.h5:' || exit 99
$CHUNKCTL sum --quiet 'b.h5:' >/dev/null || echo "b.h5: not read" >&2
exit $rc
