# Every command has a man page, and every long option its --help lists is
# documented there (so the two cannot drift apart silently).
for cmd in $($CHUNKCTL --help | awk '/^commands:/{on=1; next} on && NF==0{exit} on{print $1}'); do
    page="$SRC/man/chunkctl-$cmd.1"
    [ -f "$page" ] || { echo "no man page for $cmd" >&2; continue; }
    for opt in $($CHUNKCTL "$cmd" --help | grep -E '^ +-' | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        grep -q -- "$(echo "$opt" | sed 's/-/\\\\-/g')" "$page" ||
            echo "chunkctl-$cmd.1 does not document $opt" >&2
    done
done
grep -q "chunkctl\\\\-copy" "$SRC/man/chunkctl.1" || echo "chunkctl.1 misses copy" >&2
# Every command chunkctl(1) lists (.TP then .B name, before the op
# section) is one chunkctl --help lists.
listed=$($CHUNKCTL --help | awk '/^commands:/{on=1; next} on && NF==0{exit} on{print $1}')
for cmd in $(awk '/^\.SS Every pipeline op/{exit} prev==".TP" && $1==".B"{print $2} {prev=$0}' "$SRC/man/chunkctl.1" | sed 's/\\-/-/g'); do
    echo "$listed" | grep -qx -- "$cmd" ||
        echo "chunkctl --help does not list $cmd, which chunkctl.1 documents" >&2
done
# Every op in the op table (the ops chunkctl --help lists) has its line in
# chunkctl-pipeline(5).
for op in $($CHUNKCTL --help | awk '/^pipeline ops/{on=1; next}
        on && NF==0{exit} on && /^     /{for(i=1;i<=NF;i++) print $i; next}
        on && $1 !~ /:$/ {print $1}'); do
    grep -qw -- "$op" "$SRC/man/chunkctl-pipeline.5" ||
        echo "chunkctl-pipeline.5 does not document op $op" >&2
done
