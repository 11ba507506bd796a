#!/bin/bash
# tests/interop/mpi_netns.sh - chunkctl under mpirun with its ranks on
# several "hosts": one network namespace per host (issue 16, Tests, "Several
# hosts").
#
#   tests/interop/mpi_netns.sh [CHUNKCTL]     (as root; default: $CHUNKCTL,
#                                              else build-mpi/ or build-lmpi/)
#
# The script makes namespaces ck<pid>h1..h3, each with one veth, eth0
# (10.231.0.11..13/24), whose peers sit on a bridge in a fourth namespace
# ck<pid>sw: the host's own network is not touched.  Name resolution:
# /etc/netns/<ns>/hosts, which `ip netns exec` mounts over /etc/hosts for the
# processes it starts (no edit of /etc/hosts).  Each host also has its own
# host name (a UTS namespace, `unshare --uts`): with one shared name, the
# Open MPI daemons of two hosts race to make the same session directory in
# the shared /tmp (ompi.HOSTNAME.0; "ORTE_ERROR_LOG ... session_dir.c"), and
# the loser exits, leaving mpirun waiting for it forever (1 run in 25 or so).
# mpirun runs on h1; Open MPI's rsh launcher starts its daemons on h2 and h3
# through a small agent, `ip netns exec HOST unshare --uts sh -c "hostname
# HOST; ORTED COMMAND"`, in place of ssh.  MPI is pinned
# to the veth subnet: pml ob1, btl tcp,self (no shared memory between ranks),
# btl_tcp_if_include and oob_tcp_if_include 10.231.0.0/24.  The file system
# is shared by all namespaces, as a cluster's parallel file system would be,
# so chunkctl's assembly of outputs through files works as on a cluster.
#
# Checked for -n 2 and -n 3 (one rank per host, 7 chunks: 4+3 and 3+2+2;
# a 2-chunk array: under -n 3 one rank owns none), against one process:
#   copy HDF5 -> Zarr   every file cmp-identical (metadata: history aside)
#   copy Zarr -> HDF5   every stored chunk (h5py read_direct_chunk: filter
#                       mask and bytes) and every attribute identical
#   run PIPELINE        printed results identical, Zarr and HDF5 outputs as
#                       above
#   damaged chunk       (owned by the last rank) one line from rank 0 naming
#                       that rank, non-zero exit, no output, no temporary
# and that the traffic went over the veths: each host's eth0 sent and
# received bytes during every run (its counters are printed), and Open MPI's
# btl_base_verbose says the tcp btl carries rank-to-rank sends to the other
# hosts.  The loopback of each namespace stays up: it carries only the PMIx
# traffic between a host's Open MPI daemon and its own rank (with lo down,
# mpirun hangs).
#
# Exit 0: all passed; 1: a check failed; 77: skipped (not root, `ip netns`
# not permitted, no mpirun, chunkctl without its MPI module, no h5py), with a
# SKIP line saying why.  Everything made is removed on exit (namespaces with
# their veths and bridge, /etc/netns/ck<pid>*, the work directory); processes
# left in the namespaces are killed first.  About 22 s on a 2-core VM
# (mostly mpirun's start and end: 0.5-1 s a run, 4 s for the failing ones).
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
PY=${PY:-/usr/bin/python3}
SUBNET=10.231.0
HOSTS=3
TMO=120                 # seconds for one mpirun

skip() { echo "SKIP: $*"; exit 77; }
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

CHUNKCTL=${1:-${CHUNKCTL:-}}
if [ -z "$CHUNKCTL" ]; then
    for b in build-mpi build-lmpi; do
        if [ -e "$repo/$b/cli/libchunkctl-mpi.so" ]; then
            CHUNKCTL=$repo/$b/cli/chunkctl
            break
        fi
    done
fi
[ -n "$CHUNKCTL" ] || skip "no chunkctl built with MPI (give its path)"
CHUNKCTL=$(cd "$(dirname "$CHUNKCTL")" && pwd)/$(basename "$CHUNKCTL")
[ -x "$CHUNKCTL" ] || skip "$CHUNKCTL: not an executable"
moddir=${CHUNKCTL_MODULE_DIR:-$(dirname "$CHUNKCTL")}
[ -e "$moddir/libchunkctl-mpi.so" ] ||
    skip "$CHUNKCTL has no MPI module ($moddir/libchunkctl-mpi.so)"
[ "$(id -u)" = 0 ] || skip "not root (ip netns needs root)"
command -v ip >/dev/null || skip "no ip (iproute2)"
command -v unshare >/dev/null || skip "no unshare (util-linux)"
MPIRUN=$(command -v mpirun) || skip "no mpirun"
"$PY" -c "import h5py, numpy" 2>/dev/null || skip "$PY has no h5py"

tag=ck$$
sw=${tag}sw
made_etc_netns=0
work=
cleanup() {
    set +e
    for i in $(seq 1 $HOSTS) sw; do
        ns=${tag}h$i
        [ "$i" = sw ] && ns=$sw
        [ -e "/run/netns/$ns" ] || continue
        # processes still in our namespaces (a daemon after a failure):
        # only ours can be there
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
        ip netns del "$ns" 2>/dev/null
        rm -rf "/etc/netns/$ns"
    done
    [ $made_etc_netns = 1 ] && rmdir /etc/netns 2>/dev/null
    [ -n "$work" ] && rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ip netns add "$sw" 2>/dev/null || skip "ip netns add not permitted here"
ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up ||
    skip "no bridge in a network namespace"
[ -d /etc/netns ] || { mkdir /etc/netns && made_etc_netns=1; }
hosts="127.0.0.1 localhost"
for i in $(seq 1 $HOSTS); do
    hosts="$hosts
$SUBNET.$((10 + i)) ${tag}h$i"
done
for i in $(seq 1 $HOSTS); do
    ns=${tag}h$i
    ip netns add "$ns" &&
    ip -n "$ns" link add eth0 type veth peer name p$i netns "$sw" &&
    ip -n "$sw" link set p$i master br0 up &&
    ip -n "$ns" addr add $SUBNET.$((10 + i))/24 dev eth0 &&
    ip -n "$ns" link set eth0 up &&
    ip -n "$ns" link set lo up || { echo "FAIL: making $ns" >&2; exit 1; }
    mkdir -p "/etc/netns/$ns" && printf '%s\n' "$hosts" > "/etc/netns/$ns/hosts"
done

work=$(mktemp -d /tmp/ck-netns.XXXXXX)
cd "$work" || exit 1
cat > agent <<'EOF'
#!/bin/sh
# Open MPI's rsh agent: "agent HOST ORTED-COMMAND...", as ssh would be:
# runs the command in HOST's network namespace, under host name HOST.
host=$1; shift
exec ip netns exec "$host" unshare --uts /bin/sh -c \
    'hostname "$0" && exec /bin/sh -c "$1"' "$host" "$*"
EOF
chmod +x agent

# eth0 and lo byte counters of every host, "rx tx" each
counters() {
    for i in $(seq 1 $HOSTS); do
        for d in eth0 lo; do
            printf '%s %s ' \
                "$(ip netns exec ${tag}h$i cat /sys/class/net/$d/statistics/rx_bytes)" \
                "$(ip netns exec ${tag}h$i cat /sys/class/net/$d/statistics/tx_bytes)"
        done
    done
}

# mpi N ARGS...: chunkctl ARGS under mpirun -n N, rank r on host r+1;
# stdout, stderr, status in mpi.out, mpi.err, $rc; checks and prints the
# traffic of each host
mpi() {
    local n=$1; shift
    local hl= i
    for i in $(seq 1 $n); do hl="$hl${hl:+,}${tag}h$i:1"; done
    local before; before=$(counters)
    local t0; t0=$(date +%s.%N)
    timeout -k 10 $TMO ip netns exec ${tag}h1 unshare --uts /bin/sh -c \
        'hostname "$0" && exec "$@"' ${tag}h1 \
        "$MPIRUN" -q --allow-run-as-root -n $n --host "$hl" \
        --mca plm_rsh_agent "$work/agent" --mca plm_rsh_no_tree_spawn 1 \
        --mca pml ob1 --mca btl tcp,self \
        --mca btl_tcp_if_include $SUBNET.0/24 \
        --mca oob_tcp_if_include $SUBNET.0/24 \
        ${VERBOSE:+--mca btl_base_verbose 30} \
        -x CHUNKCTL_MODULE_DIR="$moddir" \
        "$CHUNKCTL" "$@" > "$work/mpi.out" 2> "$work/mpi.err"
    rc=$?
    local t1; t1=$(date +%s.%N)
    local after; after=$(counters)
    set -- $before
    local b=("$@")
    set -- $after
    local a=("$@")
    local line
    line=$(printf 'np %d %-7s %5.2f s, rc %d; bytes eth0 rx/tx [lo rx]:' \
           $n "$CASE" "$(awk "BEGIN { print $t1 - $t0 }")" $rc)
    for i in $(seq 0 $((n - 1))); do
        local k=$((i * 4))
        local erx=$((a[k] - b[k])) etx=$((a[k + 1] - b[k + 1]))
        local lrx=$((a[k + 2] - b[k + 2]))
        line="$line h$((i + 1)) $erx/$etx [$lrx]"
        [ $erx -gt 0 ] && [ $etx -gt 0 ] ||
            bad "np $n $CASE: no traffic on eth0 of host $((i + 1))"
    done
    echo "$line"
}

one() { "$CHUNKCTL" "$@" > "$work/one.out" 2> "$work/one.err" ||
        { bad "one process: chunkctl $*: $(cat "$work/one.err")"; }; }

cat > cmp.py <<'EOF'
"""cmp.py zarr|h5 GOT WANT: identical outputs, the history attribute aside."""
import json, os, sys
import h5py, numpy as np

def meta(b):
    d = json.loads(b)
    d.pop("history", None)
    if isinstance(d.get("attributes"), dict):
        d["attributes"].pop("history", None)
    return d

def zarr(got, want):
    def tree(p):
        return sorted(os.path.relpath(os.path.join(d, f), p)
                      for d, _, fs in os.walk(p) for f in fs)
    if tree(got) != tree(want):
        return "files differ: %s vs %s" % (tree(got), tree(want))
    for f in tree(want):
        if os.path.basename(f) in (".zattrs", ".zarray", ".zgroup",
                                   "zarr.json"):
            a, b = (open(os.path.join(p, f), "rb").read() for p in (got, want))
            if meta(a) != meta(b):
                return "%s differs" % f
    return None   # chunk files: compared with cmp by the caller

def attrs(o):
    return {k: v for k, v in o.attrs.items() if k != "history"}

def h5(got, want):
    with h5py.File(got, "r") as fa, h5py.File(want, "r") as fb:
        names = []
        fb.visit(names.append)
        got_names = []
        fa.visit(got_names.append)
        if sorted(names) != sorted(got_names):
            return "objects differ"
        for name in [""] + names:
            x, y = fa[name or "/"], fb[name or "/"]
            ax, ay = attrs(x), attrs(y)
            if sorted(ax) != sorted(ay) or any(
                    not np.array_equal(ax[k], ay[k]) for k in ay):
                return "%s: attributes differ" % name
            if not isinstance(y, h5py.Dataset):
                continue
            if (x.shape, x.dtype, x.chunks, x.compression) != \
               (y.shape, y.dtype, y.chunks, y.compression):
                return "%s: layout differs" % name
            ny = y.id.get_num_chunks()
            if x.id.get_num_chunks() != ny:
                return "%s: %d vs %d stored chunks" % (
                    name, x.id.get_num_chunks(), ny)
            for i in range(ny):
                off = y.id.get_chunk_info(i).chunk_offset
                if x.id.read_direct_chunk(off) != y.id.read_direct_chunk(off):
                    return "%s: chunk at %s differs" % (name, off)
    return None

err = {"zarr": zarr, "h5": h5}[sys.argv[1]](sys.argv[2], sys.argv[3])
if err:
    print("%s: %s" % (sys.argv[2], err))
    sys.exit(1)
EOF

# same KIND GOT WANT
same() {
    local msg
    [ -e "$2" ] || { bad "$CASE: $2 missing"; return; }
    msg=$("$PY" cmp.py "$1" "$2" "$3") || { bad "$CASE: $msg"; return; }
    if [ "$1" = zarr ]; then
        local f
        while IFS= read -r f; do
            case ${f##*/} in .zattrs|.zarray|.zgroup|zarr.json) continue;; esac
            cmp -s "$2/$f" "$3/$f" || bad "$CASE: $2/$f differs"
        done < <(cd "$3" && find . -type f)
    fi
    ls -a "$(dirname "$2")" | grep -q '\.ck-tmp-' &&
        bad "$CASE: a temporary is left: $(ls -a "$(dirname "$2")" | grep ck-tmp)"
}

# inputs: 7 chunks (4+3 on 2 ranks, 3+2+2 on 3) and 2 chunks (one of 3
# ranks owns none)
"$CHUNKCTL" gen --quiet --shape 700,450 --chunks 100,450 --compress gzip:4 \
    --seed 16 in.h5:/x &&
"$CHUNKCTL" gen --quiet --shape 20,30 --chunks 10,30 --dist normal --seed 3 \
    small.h5:/s &&
"$CHUNKCTL" copy --quiet --compress zstd:3 in.h5 in.zarr ||
    { echo "FAIL: making the inputs" >&2; exit 1; }
cat > pipe.json <<'EOF'
{
  "inputs":  { "x": "../in.h5:/x", "s": "../small.h5:/s" },
  "steps": [
    { "name": "y",  "op": "multiply",  "args": ["x", 2.0] },
    { "name": "lt", "op": "less",      "args": ["y", 1.0] },
    { "name": "m0", "op": "mean",      "args": ["x"], "axis": 0 },
    { "name": "c",  "op": "subtract",  "args": ["x", "m0"] },
    { "name": "sd", "op": "std",       "args": ["y"] },
    { "name": "h",  "op": "histogram", "args": ["y"], "bins": 8, "range": [0, 2] },
    { "name": "t",  "op": "add",       "args": ["s", 1.0] }
  ],
  "outputs": { "c": "c.zarr", "m0": "m.h5:/mean0", "t": "t.zarr",
               "lt": "lt.h5:/lt" },
  "print": ["sd", "h"]
}
EOF
mkdir one
cp pipe.json one/
one copy in.h5 one/x.zarr
one copy small.h5 one/s.zarr
one copy in.zarr one/x.h5
one copy small.h5 one/s.h5
cd one && one run --quiet pipe.json; cd "$work"; cp one.out one/run.out

T0=$(date +%s.%N)
for n in 2 3; do
    d=np$n
    mkdir $d
    cp pipe.json $d/
    CASE=h5-zarr; VERBOSE=1 mpi $n copy --quiet in.h5 $d/x.zarr
    [ $rc = 0 ] || bad "$CASE: exit $rc: $(grep -v 'btl\|bml\|mca' mpi.err)"
    same zarr $d/x.zarr one/x.zarr
    # the verbose btl: rank 0 sends to every other host's rank over tcp
    # (each line names the sender: [HOST:PID])
    for i in $(seq 2 $n); do
        grep -q "bml: Using tcp btl for send to .* on node ${tag}h$i\$" mpi.err ||
            bad "$CASE: btl_base_verbose shows no tcp send to host $i"
    done
    grep 'bml: Using' mpi.err | grep -v 'Using tcp btl\|Using self btl' &&
        bad "$CASE: a btl other than tcp or self"
    CASE=h5-zarr; mpi $n copy --quiet small.h5 $d/s.zarr
    [ $rc = 0 ] || bad "$CASE: exit $rc: $(cat mpi.err)"
    same zarr $d/s.zarr one/s.zarr
    CASE=zarr-h5; mpi $n copy --quiet in.zarr $d/x.h5
    [ $rc = 0 ] || bad "$CASE: exit $rc: $(cat mpi.err)"
    same h5 $d/x.h5 one/x.h5
    CASE=h5-h5; mpi $n copy --quiet small.h5 $d/s.h5
    [ $rc = 0 ] || bad "$CASE: exit $rc: $(cat mpi.err)"
    same h5 $d/s.h5 one/s.h5
    # the outputs' attributes record the pipeline, output names included:
    # run in $d with the same pipeline as in one/
    CASE=run; cd $d; mpi $n run --quiet pipe.json; cd "$work"
    [ $rc = 0 ] || bad "$CASE: exit $rc: $(cat mpi.err)"
    cmp -s mpi.out one/run.out ||
        bad "$CASE: printed results differ: $(diff mpi.out one/run.out)"
    same zarr $d/c.zarr one/c.zarr
    same zarr $d/t.zarr one/t.zarr
    same h5 $d/m.h5 one/m.h5
    same h5 $d/lt.h5 one/lt.h5
    # a damaged chunk: the last one, owned by the last rank
    rm -rf dmg.zarr; cp -r in.zarr dmg.zarr
    printf 'not a zstd frame at all' > dmg.zarr/6.0
    CASE=dmg; mpi $n copy --quiet dmg.zarr $d/dmg.h5
    [ $rc != 0 ] || bad "$CASE: exit 0 with a damaged chunk"
    [ "$(wc -l < mpi.err)" = 1 ] && grep -q "^chunkctl: rank $((n - 1)): .*6\.0" mpi.err ||
        bad "$CASE: not one line from rank 0 naming rank $((n - 1)) and chunk 6.0: '$(cat mpi.err)'"
    [ -e $d/dmg.h5 ] && bad "$CASE: the output appeared"
    ls -a $d | grep -q 'ck-tmp' && bad "$CASE: a temporary is left"
    echo "   $(cat mpi.err)"
done
printf 'mpirun runs: %.1f s in all\n' "$(awk "BEGIN { print $(date +%s.%N) - $T0 }")"

[ $fail = 0 ] && echo "PASS: outputs of 2 and 3 ranks on 3 network namespaces identical to one process"
exit $fail
