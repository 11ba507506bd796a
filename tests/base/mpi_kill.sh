#!/bin/sh
# tests/base/mpi_kill.sh MAX_SECONDS MPIEXEC [ARGS...] - runs
# "MPIEXEC ARGS..." (mpi_check kill ...: rank 1 kills itself with SIGKILL
# and prints when) and checks that the launcher ends the job, non-zero,
# within MAX_SECONDS of the kill.  Prints the measured time.
set -u
max=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s%N)
"$@" >"$out" 2>&1
rc=$?
end=$(date +%s%N)
killed=$(sed -n 's/^mpi_check: rank 1: SIGKILL at \([0-9]*\)$/\1/p' "$out")
if [ -z "$killed" ]; then
    echo "mpi_kill: rank 1 never reported its SIGKILL (exit $rc):"
    cat "$out"
    exit 1
fi
ms=$(((end - killed) / 1000000))
total=$(((end - start) / 1000000))
echo "mpi_kill: the job ended ${ms} ms after rank 1's SIGKILL" \
    "(${total} ms in all), exit status $rc"
if [ "$rc" -eq 0 ]; then
    echo "mpi_kill: the launcher reported success"
    cat "$out"
    exit 1
fi
if grep -q "still running" "$out"; then
    cat "$out"
    exit 1
fi
if [ "$ms" -gt $((max * 1000)) ]; then
    echo "mpi_kill: more than ${max} s"
    exit 1
fi
exit 0
