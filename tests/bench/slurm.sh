#!/usr/bin/env bash
# slurm.sh — what profiling Slurm jobs costs, measured on the real
# single-node test cluster of tests/lib/slurm.sh (munged, slurmctld, slurmd,
# deploy/slurm's Prolog, Epilog and SPANK plugin; nunatakd its own
# Aggregator), jobs of the non-root user nunatak-u1:
#   attach        `nunatak attach J --duration 2` on a running job of two
#                 busy tasks (jobspin): from the CLI's start to its
#                 "attached to job" line on stderr, and to the job's
#                 processes being in the new Target (nunatakd's status, on
#                 its control socket every 20 ms: a Target of job J not
#                 there before, "processes" > 0); median and max
#   trivial job   `sbatch --wrap true` with and without --nunatak: from
#                 sbatch's start to the job gone from squeue (polled every
#                 50 ms; gone = its Epilog returned, the Run complete), and
#                 the Prolog's and Epilog's own durations (the harness's
#                 lines in scripts.log); median
#   fixed work    a 2-task job, `srun -n 2 hotspots --rounds R`, its srun's
#                 wall time inside the job, bare and with --nunatak (the
#                 whole life sampled at the node's frequency); median, ratio
# The kinds alternate (bare, --nunatak, bare ...) so that the machine's
# other load falls on both alike; the load average is printed with them.
# A benchmark, not a test: it prints figures and exits 0; 1 when it could
# not measure (what failed said); 77 with SKIPPED when Slurm, munge, root or
# BPF are missing (tests/lib/slurm.sh and service.sh say which).
#
# usage: tests/bench/slurm.sh NUNATAK WORKLOADS_DIR [N]
#   N: attaches and trivial jobs of each kind (default 10); the fixed-work
#   jobs are N/2 of each kind; BENCH_ROUNDS=R the work (default 800, about
#   3 s a task on an idle core of this machine). About 3 minutes at N=10.
#   SLURM_CTLD_PORT / SLURM_SLURMD_PORT choose the cluster's ports.
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: $0 NUNATAK WORKLOADS_DIR [N]" >&2; exit 2; }
NUNATAK=$(realpath "$1") WORKLOADS=$(realpath "$2") TESTS_LIB=$here/../lib
N=${3:-10}
ROUNDS=${BENCH_ROUNDS:-800}
export NUNATAK WORKLOADS TESTS_LIB
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init local
. "$TESTS_LIB/slurm.sh"
slurm_init
slurm_need_cli attach job-prolog job-epilog
bench_t0=$EPOCHREALTIME
mapfile -t lines < <(slurm_service_lines)
svc_nunatakd_local "${lines[@]}"
slurm_start "${SVC_NODE_CONFIG[0]}"
U1=${SLURM_TEST_USER1:-nunatak-u1}
slurm_user "$U1"
svc_copy_bin "$NUNATAK" "$WORKLOADS/jobspin" "$WORKLOADS/hotspots"
sock=${SVC_SOCK[0]}
# the attach as the job's owner, for the Python below (which starts it)
export -f slurm_as
export SLURM_CONF_FILE

# median VALUES...: of numbers, one decimal
median() { printf '%s\n' "$@" | python3 -c 'import statistics, sys; print(f"{statistics.median(float(x) for x in sys.stdin):.1f}")'; }
ms_since() { python3 -c "print(f'{($EPOCHREALTIME - $1) * 1000:.1f}')"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# ---- 1. attach latency
W=$(slurm_workdir "$U1")
j=$(slurm_sbatch "$U1" "$W" -n 2 --wrap "srun -n 2 $SVC/bin/jobspin 300") || exit 1
slurm_wait_running "$j" 30 || fail "job $j not running after 30 s: $(slurm_job_state "$j")"
for i in $(seq 1 100); do
	[ "$(slurm_step_pids "$j" 0 | wc -l)" -ge 2 ] && break
	sleep 0.1
done
[ "$(slurm_step_pids "$j" 0 | wc -l)" -ge 2 ] || fail "job $j: its step 0 has not 2 tasks after 10 s"
python3 - "$sock" "$j" "$N" "$W" "$U1" "$SLURM_MUNGE_SOCKET" "$SVC/bin/nunatak" "$(load)" <<'PY' || fail "attach latency (see above)"
import json, socket, statistics, subprocess, sys, threading, time
sock, job, n, work, user, munge, nunatak, load = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:]

def targets():
    """nunatakd's Targets of the job: {run_id: processes}, and the ms it took"""
    t = time.monotonic()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    try:
        s.connect(sock)
        s.send(json.dumps({"request": "status"}).encode())
        reply = json.loads(s.recv(1 << 22))
    finally:
        s.close()
    found = {}
    def walk(o):
        if isinstance(o, dict):
            ts = o.get("targets")
            for x in ts if isinstance(ts, list) else []:
                if isinstance(x, dict) and x.get("job_id") == job:
                    found[x.get("run_id")] = x.get("processes", 0)
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(reply)
    return found, (time.monotonic() - t) * 1000

cmd = ["bash", "-c", 'cd "$1" && shift && slurm_as "$@"', "attach", work, user, "env",
       f"NUNATAK_AGENT_SOCKET={sock}", f"NUNATAK_MUNGE_SOCKET={munge}", nunatak, "attach", str(job),
       "--duration", "2"]
att, tgt, polls = [], [], []
for k in range(n):
    before = set(targets()[0])
    seen = {}
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    def read(f=p.stderr, seen=seen):
        for line in f:
            seen.setdefault("text", []).append(line)
            if "attached to job" in line and "attached" not in seen:
                seen["attached"] = time.monotonic()
    r = threading.Thread(target=read)
    r.start()
    tick = t0
    while p.poll() is None and "target" not in seen:
        found, ms = targets()
        polls.append(ms)
        if any(run not in before and procs > 0 for run, procs in found.items()):
            seen["target"] = time.monotonic()
        tick += 0.020
        time.sleep(max(0.0, tick - time.monotonic()))
    if p.wait(timeout=60) != 0 or "attached" not in seen or "target" not in seen:
        print(f"attach {k + 1}: exit {p.returncode}, attached line {'attached' in seen}, "
              f"Target seen {'target' in seen}: {''.join(seen.get('text', []))[-600:]}", file=sys.stderr)
        sys.exit(1)
    r.join()
    att.append((seen["attached"] - t0) * 1000)
    tgt.append((seen["target"] - t0) * 1000)
    time.sleep(0.3)
print(f"attach_to_attached_line_ms_median: {statistics.median(att):.0f} (max {max(att):.0f}, {n} attaches "
      f"--duration 2 to a running 2-task job, CLI start to its stderr line)")
print(f"attach_to_processes_in_target_ms_median: {statistics.median(tgt):.0f} (max {max(tgt):.0f}; nunatakd's "
      f"status polled every 20 ms, one poll {statistics.median(polls):.1f} ms median; load {load})")
PY
timeout 10 scancel "$j"
slurm_wait_gone "$j" 60 || fail "job $j still queued 60 s after scancel"
slurm_wait_idle 30 || fail "the node is $(slurm_node_state) after job $j"

# ---- 2. a trivial job, with and without --nunatak
# gone_ms JOB T0: ms from T0 until JOB has left squeue (polled every 50 ms, <= 120 s)
gone_ms() {
	local i
	for _ in $(seq 1 2400); do
		[ -z "$(timeout 10 squeue -h -j "$1" 2>/dev/null)" ] && { ms_since "$2"; return 0; }
		sleep 0.05
	done
	fail "job $1 still in squeue after 120 s"
}
# script_ms KIND JOB: the harness's Prolog or Epilog duration of JOB, ms
script_ms() {
	local l
	l=$(slurm_script_line "$1" "$2")
	[ -n "$l" ] || { echo "-"; return 0; }
	awk '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}
		printf "%.1f\n", (v["end"] - v["start"]) * 1000}' <<<"$l"
}
declare -A jobs gone
WB=$(slurm_workdir "$U1")
WN=$(slurm_workdir "$U1")
loads=$(load)
for k in $(seq 1 "$N"); do
	for kind in bare nunatak; do
		opt=() w=$WB
		[ "$kind" = nunatak ] && opt=(--nunatak) w=$WN
		t0=$EPOCHREALTIME
		j=$(slurm_sbatch "$U1" "$w" "${opt[@]}" --wrap true) || exit 1
		ms=$(gone_ms "$j" "$t0") || exit 1
		gone[$kind]+=" $ms"
		jobs[$kind]+=" $j"
		[ "$(slurm_job_state "$j")" = COMPLETED ] || fail "$kind job $j: $(slurm_job_state "$j")"
		slurm_wait_idle 30 || fail "the node is $(slurm_node_state) after job $j"
	done
done
runs=$(find "$WN/.nunatak" -mindepth 2 -maxdepth 2 -name manifest.json 2>/dev/null | wc -l)
[ "$runs" = "$N" ] || fail "$N --nunatak jobs wrote $runs complete Runs in $WN/.nunatak: $(tail -5 "$SLURM_DIR/log/nunatak.log")"
freq=$(sed -n 's/.*profiling at \([0-9]*\) Hz.*/\1/p' "$SLURM_DIR/log/nunatak.log" | tail -1)
# shellcheck disable=SC2086
echo "trivial_job_submit_to_gone_ms_median: bare $(median ${gone[bare]}), --nunatak $(median ${gone[nunatak]}) ($N jobs each of sbatch --wrap true, sbatch's start to gone from squeue polled every 50 ms; $runs Runs complete; load $loads)"
for kind in bare nunatak; do
	pro=() epi=()
	for j in ${jobs[$kind]}; do
		pro+=("$(script_ms prolog "$j")")
		epi+=("$(script_ms epilog "$j")")
	done
	case " ${pro[*]} ${epi[*]} " in
	*" - "*) echo "prolog_epilog_ms_median_$kind: not measured (no harness line in $SLURM_DIR/log/scripts.log)" ;;
	*) echo "prolog_epilog_ms_median_$kind: Prolog $(median "${pro[@]}"), Epilog $(median "${epi[@]}") (max $(printf '%s\n' "${pro[@]}" | sort -n | tail -1) and $(printf '%s\n' "${epi[@]}" | sort -n | tail -1); deploy/slurm's scripts, the harness's start/end)" ;;
	esac
done

# ---- 3. a fixed amount of work, bare and sampled its whole life
M=$(((N + 1) / 2))
declare -A wall
W3B=$(slurm_workdir "$U1")
W3N=$(slurm_workdir "$U1")
wrap="a=\$(date +%s.%N); srun -n 2 $SVC/bin/hotspots --rounds $ROUNDS; b=\$(date +%s.%N); echo bench_wall \$a \$b"
loads=$(load)
for _ in $(seq 1 "$M"); do
	for kind in bare nunatak; do
		opt=() w=$W3B
		[ "$kind" = nunatak ] && opt=(--nunatak) w=$W3N
		j=$(slurm_sbatch "$U1" "$w" -n 2 "${opt[@]}" --wrap "$wrap") || exit 1
		slurm_wait_gone "$j" 300 || fail "$kind job $j still queued after 300 s"
		[ "$(slurm_job_state "$j")" = COMPLETED ] && [ "$(grep -c '^hotspots: ok' "$w/slurm-$j.out")" = 2 ] ||
			fail "$kind job $j: $(slurm_job_state "$j"): $(tail -5 "$w/slurm-$j.out")"
		wall[$kind]+=" $(awk '$1 == "bench_wall" {printf "%.3f\n", $3 - $2}' "$w/slurm-$j.out")"
		slurm_wait_idle 30 || fail "the node is $(slurm_node_state) after job $j"
	done
done
runs=$(find "$W3N/.nunatak" -mindepth 2 -maxdepth 2 -name manifest.json 2>/dev/null | wc -l)
[ "$runs" = "$M" ] || fail "$M --nunatak jobs wrote $runs complete Runs in $W3N/.nunatak"
samples=$(for r in "$W3N"/.nunatak/*/; do sql "$r" "select coalesce(sum(sample_count), 0) from samples where counter = 'cpu-clock'"; done | sort -n | head -1)
# shellcheck disable=SC2086
python3 - "$ROUNDS" "$M" "${freq:-?}" "$samples" "$loads" "${wall[bare]}" "${wall[nunatak]}" <<'PY'
import statistics, sys
rounds, m, freq, samples, load = sys.argv[1:6]
bare, nun = (sorted(map(float, x.split())) for x in sys.argv[6:8])
b, s = statistics.median(bare), statistics.median(nun)
print(f"fixed_work_wall_s_median: bare {b:.3f}, --nunatak {s:.3f}, ratio {s / b:.3f} ({m} jobs each of "
      f"srun -n 2 hotspots --rounds {rounds}, srun's wall time in the job; bare {' '.join(f'{x:.2f}' for x in bare)}, "
      f"--nunatak {' '.join(f'{x:.2f}' for x in nun)}; sampled at {freq} Hz, >= {samples} samples a Run; load {load})")
PY
echo "bench_total_s: $(python3 -c "print(f'{$EPOCHREALTIME - $bench_t0:.0f}')") (cluster start included)"
exit 0
