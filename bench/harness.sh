# shellcheck shell=bash
# bench/harness.sh: the machinery the three bench drivers (copy_bench.sh,
# pipeline_bench.sh, linalg_bench.sh) share, so that each driver keeps only
# what it measures: its data, its commands, its checks and its report.  Here:
# a snapshot of the binary, the state each sample starts from, timing one
# sample, telling a disturbed one, medians, perf profiles, the machine's
# description, and BASELINE (another chunkctl run beside ours).  Sourced by
# the drivers, never run; bash >= 5 ($EPOCHREALTIME).
#
# A driver sources this file, sets its own knobs and then calls h_init.
# Before h_init it sets:
#   H_NAME   the prefix of every message ("copy_bench")
#   WORK     scratch: h_init makes WORK/{data,out,log} (DATA, OUT, LOG) and
#            cds there, so nothing a sample runs can write into the checkout
#   PY       the Python of the peers and of the report
# Knobs (environment; a driver may give its own default before h_init):
#   MEMSTATE=hot|cold|none   free memory before each sample (see prepare)
#   PREFAULT_TO=buffer|file  how hot makes it guest-backed (the driver's
#                            choice, see prepare)
#   SETTLE=6                 cold's pause before each sample, s
#   DISTURBED=0.15           a sample during which other work used more than
#                            this fraction of a core is redone ...
#   MAX_REDO=3               ... this many times at most, REDO_PAUSE=3 s apart
#   ON_FAIL=exit|record      a failing command ends the run, or is recorded in
#                            FAILS and that id is not run again
#   PHASE_VAR                (driver) an environment variable that names
#                            LOG/phase.txt for the measured command; its last
#                            line goes to PHASES after each sample
#   BASELINE=path            another chunkctl binary (say, a build of main):
#                            every sample of ours (a command whose first word
#                            is H_CK) is also taken with the baseline in the
#                            same round, as ID+base, the two alternating which
#                            goes first from round to round.  The reports put
#                            its row next to ours, labelled "(baseline)".
#   BASELINE_PLUGINS=dir     the baseline's HDF5 plugins, where the driver
#                            snapshots plugins (default: BASELINE's ../plugins)
#   BASELINE_NAME            how the report names it ("main at 70676ba")
# Files (under LOG): samples.tsv (SAMPLES: id run wall_s rss_kib cpu%
# other_cpu_s disturbed user_s sys_s), disturbed.tsv (REDONE, same columns),
# commands.tsv (CMDS: id, command as run), failures.tsv (FAILS: id run exit
# last_stderr_line), phases.tsv (PHASES: id run phases...).

set -eu
export LC_ALL=C     # '.' as the decimal point in $EPOCHREALTIME and awk

HZ=$(getconf CLK_TCK)
BUILD_INFO="" BASELINE_INFO=""
H_CK="" H_BASE="" H_BASE_PLUGINS=""
declare -A H_FAILED=() H_LOGGED=()

die() { echo "$H_NAME: $*" >&2; exit 1; }

# want X: X is in the comma-separated list ONLY.
want() { case ",$ONLY," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

# h_init: fill in the knobs, check the tools, make the scratch directories
# and cd there.
h_init() {
    MEMSTATE=${MEMSTATE:-hot} PREFAULT_TO=${PREFAULT_TO:-buffer}
    SETTLE=${SETTLE:-6} DISTURBED=${DISTURBED:-0.15}
    MAX_REDO=${MAX_REDO:-3} REDO_PAUSE=${REDO_PAUSE:-3} ON_FAIL=${ON_FAIL:-exit}
    BASELINE=${BASELINE:-} BASELINE_NAME=${BASELINE_NAME:-}
    case $MEMSTATE in hot|cold|none) ;; *) echo "$H_NAME: MEMSTATE is hot, cold or none" >&2; exit 2 ;; esac
    local tool
    for tool in /usr/bin/time "$PY"; do [ -x "$tool" ] || die "$tool missing"; done
    [ -n "${EPOCHREALTIME:-}" ] || die "needs bash >= 5 (EPOCHREALTIME)"
    # h_init cds to WORK: paths given relative to where the driver started
    case ${CHUNKCTL:-} in ''|/*) ;; *) CHUNKCTL=$PWD/$CHUNKCTL ;; esac
    case ${RESULTS:-} in ''|-|/*) ;; *) RESULTS=$PWD/$RESULTS ;; esac
    if [ -n "$BASELINE" ]; then
        case $BASELINE in /*) ;; *) BASELINE=$PWD/$BASELINE ;; esac
        [ -x "$BASELINE" ] || die "BASELINE=$BASELINE is not an executable"
    fi
    DATA=$WORK/data OUT=$WORK/out LOG=$WORK/log BIN=$WORK/bin
    mkdir -p "$DATA" "$OUT" "$LOG"
    cd "$WORK"      # nothing this script runs may write into the checkout
    SAMPLES=$LOG/samples.tsv CMDS=$LOG/commands.tsv REDONE=$LOG/disturbed.tsv
    FAILS=$LOG/failures.tsv PHASES=$LOG/phases.tsv
}

# h_new_log FILE...: empty the sample logs and FILE... for a measuring run.
# shellcheck disable=SC2120  # FILE... is optional
h_new_log() {
    local f
    for f in "$SAMPLES" "$CMDS" "$REDONE" "$@"; do : > "$f"; done
}

# build_info BINARY [REPO]: which build a binary is, and which commit of REPO
# (its uncommitted changes outside bench/ named).
build_info() {
    local changed commit=""
    if [ -n "${2:-}" ]; then
        changed=$(git -C "$2" diff --name-only HEAD -- . ':!bench' 2>/dev/null | tr '\n' ' ')
        commit="commit $(git -C "$2" rev-parse --short HEAD 2>/dev/null || echo '?')${changed:+ + uncommitted changes to ${changed% }}; "
    fi
    echo "${commit}binary built $(date -u -r "$1" '+%Y-%m-%d %H:%M UTC'), sha256 $(sha256sum "$1" | cut -c1-12)"
}

# h_snapshot CHUNKCTL REPO [PLUGINS]: run copies of the binary (and of the
# plugins in PLUGINS) from WORK/bin, so that a rebuild of the checkout during
# the run cannot mix two builds in one table; likewise BASELINE's, in
# WORK/bin/baseline.  Sets H_CK (the copy), BUILD_INFO, H_BASE,
# H_BASE_PLUGINS, BASELINE_INFO.  With ON_FAIL=record a missing CHUNKCTL is
# not fatal: a stand-in that fails takes its place, so every chunkctl row
# reads "failed".  With REPORT_ONLY=1 the last run's copies are named, not
# made (BUILD_INFO comes from its run.env).
h_snapshot() {
    local ck=$1 repo=$2 plugins=${3:-}
    H_CK=$BIN/chunkctl
    [ -z "$BASELINE" ] || H_BASE=$BIN/baseline/chunkctl
    [ "${REPORT_ONLY:-0}" = 0 ] || return 0
    rm -rf "$BIN" && mkdir -p "$BIN"
    if [ -x "$ck" ]; then
        cp "$ck" "$H_CK"
        BUILD_INFO=$(build_info "$ck" "$repo")
    elif [ "$ON_FAIL" = record ]; then
        echo "$H_NAME: $ck missing (build: cmake --build $repo/build -j2); chunkctl rows will read failed" >&2
        printf '#!/bin/sh\necho "chunkctl binary missing: %s" >&2\nexit 127\n' "$ck" > "$H_CK"
        chmod +x "$H_CK"
        BUILD_INFO="binary missing ($ck)"
    else
        die "$ck missing (build: cmake --build $repo/build -j2)"
    fi
    if [ -n "$plugins" ]; then
        mkdir -p "$BIN/plugins" && cp "$plugins"/*.so "$BIN/plugins/"
    fi
    [ -n "$BASELINE" ] || return 0
    mkdir -p "$BIN/baseline"
    cp "$BASELINE" "$H_BASE"
    BASELINE_INFO="${BASELINE_NAME:+$BASELINE_NAME: }$BASELINE; $(build_info "$BASELINE")"
    if [ -n "$plugins" ]; then
        local bp=${BASELINE_PLUGINS:-$(dirname "$BASELINE")/../plugins}
        ls "$bp"/*.so > /dev/null 2>&1 || die "no HDF5 plugins for BASELINE in $bp (set BASELINE_PLUGINS)"
        H_BASE_PLUGINS=$BIN/baseline/plugins
        mkdir -p "$H_BASE_PLUGINS" && cp "$bp"/*.so "$H_BASE_PLUGINS/"
        BASELINE_INFO="$BASELINE_INFO; plugins from $(cd "$bp" && pwd)"
    fi
}

clean_out() { rm -rf "${OUT:?}"/* "$OUT"/.prefault && sync; }

# prepare PATH MIB: the state every sample starts from (untimed): no outputs
# left (rm, then sync, so no run pays for the previous run's write-back),
# fresh memory in the state MEMSTATE asks for, and PATH (an input file or
# directory; "-": none) re-read so it is in the page cache.
#
# Why MEMSTATE: this VM hands memory the guest frees back to the host within
# about 1-5 s (virtio-balloon free page reporting); touching such memory again
# costs the toucher ~2 s of system time per GiB instead of ~0.27 s.  The tools
# here touch up to GiBs of fresh memory (the readers' arrays, chunkctl's output
# in the page cache), so the state of free memory decides the timings.
#   hot  (default) touch MIB MiB just before the command and free it, so the
#        memory it gets is guest-backed (for ~2 s, which covers most runs):
#        PREFAULT_TO=buffer a dd buffer of MIB MiB (no file), =file a file of
#        MIB MiB written to OUT and deleted (page cache, as copy's outputs);
#   cold sleep SETTLE s first, so every command gets host-returned memory (what
#        a command on an idle VM of this kind gets);
#   none do nothing (timings then depend on what ran just before).
# Also, DAMON on this VM pages out page cache untouched for ~60 s, hence the
# re-read of the input before each sample.
prepare() {
    clean_out
    case $MEMSTATE in
        hot)
            if [ "$2" -le 0 ]; then :
            elif [ "$PREFAULT_TO" = file ]; then
                dd if=/dev/zero of="$OUT/.prefault" bs=1M count="$2" status=none
                rm -f "$OUT/.prefault"
            else
                dd if=/dev/zero of=/dev/null bs="$2"M count=1 iflag=fullblock status=none
            fi ;;
        cold) sleep "$SETTLE" ;;
    esac
    if [ -d "$1" ]; then find "$1" -type f -exec cat {} + > /dev/null
    elif [ "$1" != - ]; then cat "$1" > /dev/null; fi
    return 0
}

# shell_quote ARG...: the arguments as one line a shell would read back.
shell_quote() {
    local a
    for a in "$@"; do
        case $a in
            *[!A-Za-z0-9_./:=,+%@-]* | '') printf "'%s' " "$(printf '%s' "$a" | sed "s/'/'\\\\''/g")" ;;
            *) printf '%s ' "$a" ;;
        esac
    done
}

# busy_ticks: CPU time the whole machine has spent busy, all cores, in clock
# ticks (/proc/stat: user nice system irq softirq steal; steal = time the VM
# host took away).  Compared with the measured command's own user+sys time it
# tells whether something else ran during a sample.
busy_ticks() {
    local _cpu u n s _idle _iow irq sirq steal _rest
    read -r _cpu u n s _idle _iow irq sirq steal _rest < /proc/stat
    echo $((u + n + s + irq + sirq + steal))
}

# err_line FILE: the line of a failed command's stderr that says why: the
# last one that looks like an error message, else the last one.
err_line() {
    { grep -i 'error\|unknown\|invalid\|cannot\|not \|fail\|chunkctl:' "$1" || grep -v '^[[:space:]]*$' "$1" || true; } |
        tail -1 | tr '\t|`' '   ' | cut -c1-200
}

# sample ID RUN INPUT MIB CMD...: prepare INPUT MIB, run CMD (stdout to
# /dev/null) and append one line to SAMPLES: wall s, peak RSS KiB, CPU %,
# "other" = CPU seconds the machine spent on anything but CMD meanwhile, CMD's
# user and system s.  Wall time is bash's $EPOCHREALTIME around the command
# (microseconds); peak RSS (%M), CPU% (%P) from /usr/bin/time.  A sample
# where other work took more than DISTURBED of one core is redone, up to
# MAX_REDO times after a pause; the last try is kept and marked.
sample() {
    local id=$1 run=$2 input=$3 mib=$4 t0 t1 b0 b1 tf=$LOG/time.txt try line rc msg
    shift 4
    [ -z "${H_FAILED[$id]:-}" ] || return 0
    if [ -z "${H_LOGGED[$id]:-}" ]; then
        printf '%s\t%s> /dev/null\n' "$id" "$(shell_quote "$@")" >> "$CMDS"
        H_LOGGED[$id]=1
    fi
    if [ -n "${PHASE_VAR:-}" ]; then local -x "$PHASE_VAR=$LOG/phase.txt"; fi
    for try in $(seq 1 $((MAX_REDO + 1))); do
        prepare "$input" "$mib"
        if [ -n "${PHASE_VAR:-}" ]; then : > "$LOG/phase.txt"; fi
        rc=0
        b0=$(busy_ticks)
        t0=$EPOCHREALTIME
        /usr/bin/time -f '%M %P %U %S' -o "$tf" "$@" > /dev/null 2> "$LOG/stderr.txt" || rc=$?
        t1=$EPOCHREALTIME
        b1=$(busy_ticks)
        if [ "$rc" != 0 ]; then
            if [ "$ON_FAIL" != record ]; then
                echo "$H_NAME: failed: $*" >&2; cat "$LOG/stderr.txt" >&2; exit 1
            fi
            msg=$(err_line "$LOG/stderr.txt")
            [ -n "$msg" ] || msg=$(grep -v '^[0-9]' "$tf" | tail -1)
            printf '%s\t%s\t%s\t%s\n' "$id" "$run" "$rc" "$msg" >> "$FAILS"
            H_FAILED[$id]=1
            echo "$H_NAME: $id failed (exit $rc): $msg; not run again" >&2
            return 0
        fi
        # id run wall rss cpu% other disturbed(0/1) user sys
        line=$(tail -1 "$tf" | tr -d '%' | awk -v id="$id" -v run="$run" \
            -v t0="$t0" -v t1="$t1" -v db="$((b1 - b0))" -v hz="$HZ" -v lim="$DISTURBED" '
            { wall = t1 - t0; other = db / hz - ($3 + $4); if (other < 0) other = 0
              printf "%s\t%s\t%.6f\t%s\t%s\t%.2f\t%d\t%s\t%s", id, run, wall, $1, $2, other,
                     (other > lim * wall + 0.05), $3, $4 }')
        [ "$(echo "$line" | cut -f7)" = 1 ] || break
        printf '%s\n' "$line" >> "$REDONE"
        [ "$try" -gt "$MAX_REDO" ] || { echo "$H_NAME: $id run $run disturbed ($(echo "$line" | cut -f6) CPU s of other work in $(echo "$line" | cut -f3) s), redoing" >&2; sleep "$REDO_PAUSE"; }
    done
    printf '%s\n' "$line" >> "$SAMPLES"
    if [ -n "${PHASE_VAR:-}" ] && [ -s "$LOG/phase.txt" ]; then
        printf '%s\t%s\t%s\n' "$id" "$run" "$(tail -1 "$LOG/phase.txt" | tr ' ' '\t')" >> "$PHASES"
    fi
    return 0
}

# sample_base ID RUN INPUT MIB CMD...: a sample of the baseline binary, with
# its own plugins where the driver has plugins.
sample_base() {
    if [ -n "$H_BASE_PLUGINS" ]; then local -x HDF5_PLUGIN_PATH=$H_BASE_PLUGINS; fi
    sample "$@"
}

# measure ID RUN INPUT MIB CMD...: one sample of CMD (see sample).  When CMD
# runs our binary (first word H_CK) and BASELINE is set, the same command with
# the baseline's binary is sampled too, as ID+base: ours first in odd rounds,
# the baseline first in even ones, so neither always runs right after the
# other's work.
measure() {
    local id=$1 run=$2 input=$3 mib=$4
    shift 4
    if [ -z "$H_BASE" ] || [ "$1" != "$H_CK" ]; then
        sample "$id" "$run" "$input" "$mib" "$@"
    elif [ $((run % 2)) = 1 ]; then
        sample "$id" "$run" "$input" "$mib" "$@"
        sample_base "$id+base" "$run" "$input" "$mib" "$H_BASE" "${@:2}"
    else
        sample_base "$id+base" "$run" "$input" "$mib" "$H_BASE" "${@:2}"
        sample "$id" "$run" "$input" "$mib" "$@"
    fi
}

# median_of ID: the median wall time of ID's samples ("" if none).
median_of() {
    awk -F'\t' -v id="$1" '$1 == id { print $3 }' "$SAMPLES" | sort -g |
        awk '{ a[NR] = $1 } END { if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# h_rounds_start, h_round RUN, h_rounds_end: the load average around the
# timed rounds (LOAD_BEFORE, LOAD_AFTER), their length (ELAPSED, s) and a
# progress line per round.
h_rounds_start() { LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg); T_START=$EPOCHREALTIME; }
h_since() { awk -v a="$EPOCHREALTIME" -v b="$T_START" 'BEGIN { printf "%.0f", a - b }'; }
h_round() { echo "$H_NAME: round $1 of $RUNS ($(h_since) s so far)"; }
h_rounds_end() { LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg); ELAPSED=$(h_since); }

# h_profile TAG HEAD MED TGT INPUT CMD...: for a chunkctl row more than 2x
# over its target (h_over2 MED TGT): `perf record -g` of CMD into
# LOG/perf.TAG.data, then "@@ HEAD MED TGT" and its top 10 symbols by self
# time appended to LOG/perf.txt (the report shows them).
h_over2() { awk -v m="$1" -v t="$2" 'BEGIN { exit !(t > 0 && m > 2 * t) }'; }
h_profile() {
    local tag=$1 head=$2 med=$3 tgt=$4 input=$5
    shift 5
    echo "$H_NAME: $head median $med s > 2 x target $tgt s: perf record -g"
    prepare "$input" 0
    if perf record -q -g -o "$LOG/perf.$tag.data" -- "$@" > /dev/null 2> "$LOG/perf.$tag.err"; then
        {
            printf '@@ %s %s %s\n' "$head" "$med" "$tgt"
            perf report -q -i "$LOG/perf.$tag.data" --stdio --no-children -g none \
                --sort dso,symbol --percent-limit 0.5 2> /dev/null | sed '/^$/d' | head -10
        } >> "$LOG/perf.txt"
    else
        echo "$H_NAME: perf record failed: $(tail -1 "$LOG/perf.$tag.err")" >&2
    fi
}

# h_save_run VAR... / h_load_run: what --report-only needs from the measuring
# run, as `declare -p` wrote it.  h_load_run reads it inside a function, where
# a plain declare would make the variables local, hence the -g.
h_save_run() { declare -p BUILD_INFO BASELINE_INFO LOAD_BEFORE LOAD_AFTER ELAPSED "$@" > "$LOG/run.env"; }
h_load_run() { eval "$(sed 's/^declare /declare -g /' "$LOG/run.env")"; }

# h_meta_machine: the meta.tsv lines about the machine and the binaries.
h_meta_machine() {
    echo "date	$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "nproc	$(nproc)"
    echo "cpu	$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "mem	$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "kernel	$(uname -r)"
    echo "commit	$BUILD_INFO (snapshot run from $BIN)"
    if [ -n "$BASELINE_INFO" ]; then echo "baseline	$BASELINE_INFO (snapshot run from $BIN/baseline)"; fi
}

# h_meta_memstate HOT: the meta.tsv line for MEMSTATE; HOT says what hot did.
h_meta_memstate() {
    case $MEMSTATE in
        hot)  echo "memstate	hot: $1" ;;
        cold) echo "memstate	cold: $SETTLE s pause before each sample" ;;
        none) echo "memstate	none: no preparation of free memory" ;;
    esac
}
