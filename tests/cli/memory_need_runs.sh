# The need a --memory refusal states is one that runs: a rerun with exactly
# that figure succeeds.  It once left out the results charged before the
# workers (and rounded down), so "needs 39.7 MiB" was refused at 39.7M.
$CHUNKCTL gen --quiet --shape 2000,5000 --chunks 2000,1000 a.h5:/x || exit 99
$CHUNKCTL reduce sum a.h5:/x --axis 0 --memory 32M -o s.h5:/s 2>err
echo "exit $?" >&2
cat err >&2
need=$(sed -n 's/.* needs \([0-9.]*\) MiB with one worker.*/\1/p' err)
test -n "$need" || exit 98
$CHUNKCTL reduce sum a.h5:/x --axis 0 --memory "${need}M" -o s.h5:/s
