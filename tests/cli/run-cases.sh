#!/bin/sh
# tests/cli/run-cases.sh CHUNKCTL CASEDIR - run every CASEDIR/<case>.sh in a
# fresh temporary directory with $CHUNKCTL set, and compare its exit status
# and standard error exactly with <case>.exit and <case>.stderr.
# CK_UPDATE=1 rewrites the expected files instead (review the diff!).
set -u
bin=$1
dir=$(cd "$2" && pwd)
pass=0
fail=0
for case in "$dir"/*.sh; do
    name=$(basename "$case" .sh)
    [ "$name" = run-cases ] && continue
    tmp=$(mktemp -d)
    mkdir "$tmp/work"
    (cd "$tmp/work" && CHUNKCTL=$bin PY=/usr/bin/python3 SRC="$dir/../.." sh "$case" \
        >"$tmp/.stdout" 2>"$tmp/.stderr")
    status=$?
    if [ "${CK_UPDATE:-0}" = 1 ]; then
        echo "$status" >"$dir/$name.exit"
        cp "$tmp/.stderr" "$dir/$name.stderr"
    fi
    if [ "$status" = "$(cat "$dir/$name.exit")" ] &&
        cmp -s "$tmp/.stderr" "$dir/$name.stderr"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $name: exit $status, expected $(cat "$dir/$name.exit")"
        diff "$dir/$name.stderr" "$tmp/.stderr" | sed 's/^/    /'
    fi
    rm -rf "$tmp"
done
echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
