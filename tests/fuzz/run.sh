#!/bin/sh
# tests/fuzz/run.sh [DIR [SECONDS [JOBS]]] - builds the libFuzzer targets
# with clang into DIR (default build-fuzz) and runs each for SECONDS
# (default 50), JOBS at a time (default 2), starting from the seeds in
# tests/fuzz/corpus/<target>/ (read only: what a run adds goes to
# DIR/corpus/<target>/).  Exits 1 on any finding, naming the target and
# the input, which is kept in DIR/artifacts/.  .ci/test calls it when
# clang is installed; tests/fuzz/README.md says more.
set -eu
cd "$(dirname "$0")/../.."
dir=${1:-build-fuzz}
secs=${2:-50}
jobs=${3:-2}
cc=""
for c in clang clang-14; do
    if command -v "$c" >/dev/null; then
        cc=$c
        break
    fi
done
[ -n "$cc" ] || {
    echo "fuzz: no clang" >&2
    exit 1
}
cmake -S . -B "$dir" -DCMAKE_C_COMPILER="$cc" -DCHUNKCTL_FUZZ=ON \
    -DCHUNKCTL_TESTS=OFF -DCHUNKCTL_CUDA=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$dir" -j "$jobs" --target fuzz
dir=$(cd "$dir" && pwd)
mkdir -p "$dir/artifacts" "$dir/logs"
targets=$(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')
# CK_FUZZ_SEED: libFuzzer's -seed (0, the default: a new one each run).
# CI fixes it, so a run explores the same inputs for the same code and a
# finding there is a finding, not luck; discovery is the long runs' job.
start=$(date +%s)
# One line per target; the exit status of each run is kept in a file.
echo "$targets" | xargs -P "$jobs" -I{} sh -c '
    t=$1 dir=$2 secs=$3
    mkdir -p "$dir/corpus/$t"
    "$dir/tests/fuzz/$t" -max_total_time="$secs" -timeout=25 \
        -seed="${CK_FUZZ_SEED:-0}" \
        -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$dir/artifacts/$t-" \
        "$dir/corpus/$t" "tests/fuzz/corpus/$t" >"$dir/logs/$t.log" 2>&1
    echo $? >"$dir/logs/$t.rc"
    echo "fuzz: $t: exit $(cat "$dir/logs/$t.rc"), $(sed -n \
        "s/^stat::number_of_executed_units: *//p" "$dir/logs/$t.log") runs, \
$(ls "$dir/corpus/$t" | wc -l) new inputs"
' sh {} "$dir" "$secs"
bad=0
for t in $targets; do
    if [ "$(cat "$dir/logs/$t.rc")" != 0 ]; then
        bad=1
        echo "fuzz: $t found a problem (log: $dir/logs/$t.log):" >&2
        grep -E "ERROR|SUMMARY|runtime error|Test unit written|round trip|does not parse|abort" \
            "$dir/logs/$t.log" | head -20 >&2
    fi
done
echo "fuzz: $(echo "$targets" | wc -l) targets, ${secs}s each, $jobs at a time: $(($(date +%s) - start))s"
exit $bad
