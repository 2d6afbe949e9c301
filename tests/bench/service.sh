#!/usr/bin/env bash
# service.sh — what the service costs, measured on this machine:
#   ingest        one nunatak-aggregator on one core (taskset), one pretend
#                 Agent on another streaming Batches over TCP+CURVE as fast
#                 as they are acknowledged: Batches, SampleCounts and samples
#                 stored per second, and the aggregator's CPU meanwhile
#   ack latency   100 and 1000 pretend Agents, one DEALER each, each sending
#                 one Batch per second over loopback: send-to-Ack p50/p99,
#                 with node-second Batches and with small ones (a 1-CPU node)
#   nunatakd      its CPU and RSS idle (no Target), then while a Run samples
#                 all CPUs at 997 Hz (a busy process per CPU), each over 10 s,
#                 from /proc/PID/stat and /proc/PID/status; nunatakd is its
#                 own Aggregator there (single-node), so that is included;
#                 the time a Target takes to start (run-start to its reply,
#                 target_start.py), and the wall time of a whole
#                 `nunatak run -- true` through it
# The Batch shape is one node-second of a 16-CPU node at 997 Hz: 16 Loci,
# 800 SampleCounts of 20 samples (15 952 samples), 512 stacks of depth 12
# (BENCH_SHAPE overrides, as agg_load.py options).
#
# usage: tests/bench/service.sh NUNATAK WORKLOADS_DIR [SECONDS]
#   NUNATAKD / NUNATAK_AGGREGATOR default to the binaries beside NUNATAK;
#   BENCH_PORTS=LO-HI confines the TCP port chosen.
set -euo pipefail
nunatak=$1 workloads=$2 secs=${3:-10}
here=$(cd "$(dirname "$0")" && pwd)
nunatakd=${NUNATAKD:-$(dirname "$nunatak")/nunatakd}
aggregator=${NUNATAK_AGGREGATOR:-$(dirname "$nunatak")/nunatak-aggregator}
shape=${BENCH_SHAPE:---loci 16 --stacks 512 --sample-counts 800 --samples-each 20 --depth 12}
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root (nunatakd loads BPF)"; exit 0; }
[ -x "$nunatakd" ] || [ -x "$aggregator" ] || { echo "SKIPPED: $nunatakd and $aggregator not built"; exit 0; }
py=
for p in /usr/bin/python3 "$(command -v python3)"; do
	[ -x "$p" ] && "$p" -c 'import zmq' 2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] || { echo "SKIPPED: python3 with pyzmq missing (apt-get install python3-zmq)"; exit 0; }
ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || { echo "SKIPPED: needs 2 CPUs (the aggregator and the load on their own)"; exit 0; }
ulimit -n 16384

out=$(mktemp -d /tmp/nunatak-bench-svc.XXXXXX)
chmod 0700 "$out"
mkdir -m 0700 "$out/etc" "$out/agents" "$out/state" "$out/runs" "$out/spool"
mkdir -m 0755 "$out/run"
pids=()
cleanup() {
	local p i
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || continue
		for i in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
	done
	rm -rf "$out"
}
trap cleanup EXIT

port=$("$py" - "${BENCH_PORTS:-0-0}" <<'PY'
import random, socket, sys
lo, hi = map(int, sys.argv[1].split("-"))
for port in ([0] if lo == 0 else random.sample(range(lo, hi + 1), hi - lo + 1)):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port)); print(s.getsockname()[1]); break
    except OSError:
        pass
    finally:
        s.close()
PY
)
endpoint="tcp://127.0.0.1:$port"
for k in aggregator load; do "$py" "$here/../lib/nunatak_wire.py" keygen "$out/etc" "$k"; done
cp "$out/etc/load.pub" "$out/agents/"
# one key per pretend Agent of the latency figures (a node name is one key's)
mkdir -m 0700 "$out/etc/sims"
"$py" - "$out/etc/sims" "$out/agents" <<'PY'
import os, sys, zmq
for k in range(1000):
    pub, sec = zmq.curve_keypair()
    for d, name, data, mode in ((sys.argv[1], "sim%04d.key" % k, sec, 0o600),
                                (sys.argv[1], "sim%04d.pub" % k, pub, 0o644),
                                (sys.argv[2], "sim%04d.pub" % k, pub, 0o644)):
        fd = os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        os.write(fd, data + b"\n")
        os.fchmod(fd, mode)
        os.close(fd)
PY
(umask 077 && cat >"$out/etc/aggregator.toml" <<EOF
[service]
listen = "$endpoint"
secret_key = "$out/etc/aggregator.key"
allowed_agents = "$out/agents"
state_dir = "$out/state"
EOF
)
curve="--key $out/etc/load.key --server-key $out/etc/aggregator.pub"

# cpu_ticks PID: utime + stime of PID, in clock ticks
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# pct T0 T1 SECONDS: percent of one CPU
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }
pct() { awk -v a="$1" -v b="$2" -v s="$3" -v hz="$hz" 'BEGIN {printf "%.1f", (b - a) * 100 / hz / s}'; }

if [ ! -x "$aggregator" ]; then
	echo "== aggregator ingest and ack latency: SKIPPED ($aggregator not built)"
else
# the pretend Agents start their Runs as root (the benchmark runs as root)
taskset -c 1 "$aggregator" --config "$out/etc/aggregator.toml" --allow-root-runs 2>"$out/aggregator.log" &
agg=$!
pids+=("$agg")
for i in $(seq 1 100); do
	"$py" "$here/../lib/nunatak_wire.py" status "$endpoint" --key "$out/etc/load.key" \
		--server-key "$out/etc/aggregator.pub" --timeout 1 >/dev/null 2>&1 && break
	kill -0 "$agg" 2>/dev/null || { echo "nunatak-aggregator exited: $(tail -5 "$out/aggregator.log")"; exit 1; }
	sleep 0.1
done

echo "== aggregator ingest (aggregator on CPU 1, load on CPU 0, $secs s, shape: $shape)"
t0=$(cpu_ticks "$agg") w0=$(date +%s.%N)
# shellcheck disable=SC2086
taskset -c 0 "$py" "$here/agg_load.py" ingest "$endpoint" --runs-dir "$out/runs" --seconds "$secs" \
	$curve $shape | tee "$out/ingest.txt" | grep -v '^{'
t1=$(cpu_ticks "$agg")
echo "aggregator_cpu_percent_of_one_core: $(pct "$t0" "$t1" "$(elapsed "$w0")") (START and FINALIZE included)"

# small Batches (a 1-CPU node: 2 Loci, 50 SampleCounts): the rate of
# Batches, each its own committed transaction before its Ack
small="--loci 2 --stacks 64 --sample-counts 50 --samples-each 20 --depth 12"
echo "== aggregator ingest of small Batches ($secs s, shape: $small)"
t0=$(cpu_ticks "$agg") w0=$(date +%s.%N)
# shellcheck disable=SC2086
taskset -c 0 "$py" "$here/agg_load.py" ingest "$endpoint" --runs-dir "$out/runs" --seconds "$secs" \
	$curve $small | tee "$out/ingest-small.txt" | grep -v '^{'
t1=$(cpu_ticks "$agg")
echo "aggregator_cpu_percent_of_one_core: $(pct "$t0" "$t1" "$(elapsed "$w0")")"

# ack latency with the node-second shape, then with the small one
for sh in big small; do
	[ "$sh" = big ] && s_args=$shape || s_args=$small
	for n in 100 1000; do
		echo "== ack latency, $n Agents, one Batch per second each, $secs s, shape $sh: $s_args"
		t0=$(cpu_ticks "$agg") w0=$(date +%s.%N)
		# shellcheck disable=SC2086
		taskset -c 0 "$py" "$here/agg_load.py" latency "$endpoint" --runs-dir "$out/runs" --agents "$n" \
			--seconds "$secs" $curve --sim-keys "$out/etc/sims" $s_args | tee "$out/latency$n$sh.txt" | grep -v '^{'
		t1=$(cpu_ticks "$agg")
		echo "aggregator_cpu_percent_of_one_core: $(pct "$t0" "$t1" "$(elapsed "$w0")") (over the $(elapsed "$w0") s until the last Ack or give-up, FINALIZE included)"
	done
done
kill -TERM "$agg"
wait "$agg" 2>/dev/null || true
fi

[ -x "$nunatakd" ] || { echo "== nunatakd: SKIPPED ($nunatakd not built)"; exit 0; }

echo "== nunatakd (its own Aggregator), CPU and RSS over $secs s"
(umask 077 && cat >"$out/etc/nunatakd.toml" <<EOF
[service]
agent_socket = "$out/run/agent.sock"
spool_dir = "$out/spool"
state_dir = "$out/state"
EOF
)
"$nunatakd" --config "$out/etc/nunatakd.toml" --node bench 2>"$out/nunatakd.log" &
nd=$!
pids+=("$nd")
for i in $(seq 1 200); do
	[ -S "$out/run/agent.sock" ] && break
	kill -0 "$nd" 2>/dev/null || { echo "nunatakd exited: $(tail -5 "$out/nunatakd.log")"; exit 1; }
	sleep 0.1
done
sleep 2
rss() { awk -v k="$2:" '$1 == k {print $2 " kB"}' "/proc/$1/status"; }
t0=$(cpu_ticks "$nd")
sleep "$secs"
t1=$(cpu_ticks "$nd")
echo "idle_cpu_percent: $(pct "$t0" "$t1" "$secs")"
echo "idle_rss: $(rss "$nd" VmRSS)"
"$py" "$here/target_start.py" "$out/run/agent.sock" "$out/runs" 10 || echo "(target_start.py failed)"
# a whole Run of /bin/true through the daemon (START, launch, FINALIZE, summary)
rt=()
for k in 1 2 3 4 5 6 7; do
	a=$(date +%s%N)
	NUNATAK_AGENT_SOCKET="$out/run/agent.sock" "$nunatak" run --linger 0 -o "$out/runs" --name true -- true \
		>/dev/null 2>&1 || true
	rt+=($((($(date +%s%N) - a) / 1000000)))
done
echo "run_of_true_ms_median: $(printf '%s\n' "${rt[@]}" | sort -n | sed -n 4p) (7 runs: ${rt[*]})"
busy=()
for c in $(seq 1 "$ncpu"); do busy+=("$workloads/hotspots $((secs + 4))"); done
spawn=$(printf '%s & ' "${busy[@]}")
NUNATAK_AGENT_SOCKET="$out/run/agent.sock" "$nunatak" run -F 997 -o "$out/runs" --name busy -- \
	sh -c "${spawn}wait" >/dev/null 2>"$out/run.txt" &
runp=$!
sleep 2
t0=$(cpu_ticks "$nd")
sleep "$secs"
t1=$(cpu_ticks "$nd")
echo "sampling_${ncpu}_cpus_997hz_cpu_percent: $(pct "$t0" "$t1" "$secs")"
echo "sampling_rss: $(rss "$nd" VmRSS) (peak $(rss "$nd" VmHWM))"
wait "$runp" || echo "(the Run exited $?: $(tail -3 "$out/run.txt"))"
rd=$(sed -n 's/^Run: //p' "$out/run.txt" | tail -1)
n=$("$py" -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1] + "/pivot.sqlite").execute("select coalesce(sum(sample_count),0) from samples").fetchone()[0])' "$rd" 2>/dev/null || echo "?")
echo "samples_stored_by_the_busy_run: $n (at most $((ncpu * 997 * (secs + 4))) in its $((secs + 4)) s: cpu-clock samples follow the CPU time its $ncpu processes got)"
echo "(the BPF program runs in the interrupted task's context: its cost is the application's, see overhead.sh)"
