# `chunkctl OP --help` starts with that op's own usage line (its args,
# whether -o is needed) and description, not a generic OP text; every
# op's help exits 0 and every help line fits 80 columns.
$CHUNKCTL histogram2d --help | head -3 >h2d || exit 99
printf '%s\n' 'usage: chunkctl histogram2d X Y [--KEY VALUE ...] [-o DST]' '' \
    'histogram2d: numpy.histogram2d of x and y (bins, range, density, weights).' >want
cmp -s h2d want || { echo "histogram2d --help:"; cat h2d; } >&2
$CHUNKCTL add --help | head -1 >add
echo 'usage: chunkctl add X Y [--KEY VALUE ...] -o DST' | cmp -s - add ||
    { echo "add --help:"; cat add; } >&2
$CHUNKCTL concatenate --help | head -1 | grep -q ' X \[X \.\.\.\] ' ||
    echo "concatenate --help does not take X [X ...]" >&2
for op in $($CHUNKCTL --help | awk '/^pipeline ops/{on=1; next}
        on && NF==0{exit} on && /^     /{for(i=1;i<=NF;i++) print $i; next}
        on && $1 !~ /:$/ {print $1}'); do
    $CHUNKCTL "$op" --help >out 2>&1 || echo "$op --help: exit $?" >&2
    head -1 out | grep -q "^usage: chunkctl $op[ ]" ||
        echo "$op --help: $(head -1 out)" >&2
    awk -v op="$op" 'length > 79 && !/^  chunkctl / {print op ": long line: " $0}' out >&2
done
exit 0
