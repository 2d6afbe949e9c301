#!/usr/bin/env bash
# fixed_cost.sh — what `nunatak run` costs beside the application, measured
# in one run with the probes of tests/bench/fixed_cost.c (CLOCK_MONOTONIC
# throughout), each figure the median of RUNS and printed with its goal
# (issue 21):
#   start        from `nunatak run` started to the first instruction of the
#                application's main, less the same for the application
#                alone (fork, exec, loader): in-process, and through a
#                nunatakd of this build started for the bench
#   end          from the application's exit to `nunatak run`'s (the Run
#                written, its summary printed): a small program, and a
#                large stripped one (gcc's cc1plus, ~35 MB, compiling a
#                small file)
#   total        the wall time of the small program under nunatak and alone
#   cpu          nunatak's CPU for the small program's Run, its children's
#                (llvm-symbolizer, ...) included
#   share        nunatak's own CPU (/proc/PID/stat, to a clock tick: 10 ms,
#                0.5 % of 2 s) while a compute application burns SPIN
#                seconds of CPU, against that CPU: in-process (nunatak run)
#                and through nunatakd (the daemon's and the client's)
#
# usage: tests/bench/fixed_cost.sh NUNATAK BENCH_DIR [RUNS] [SPIN_SECONDS]
#   NUNATAKD defaults to the nunatakd beside NUNATAK.
set -euo pipefail
nunatak=$1 bench=$2 runs=${3:-5} spin=${4:-2}
probe=$bench/fixed-cost
nunatakd=${NUNATAKD:-$(dirname "$nunatak")/nunatakd}
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root for BPF"; exit 0; }
[ -x "$probe" ] || { echo "SKIPPED: $probe not built (make $probe)"; exit 0; }
command -v python3 >/dev/null || { echo "SKIPPED: python3 missing"; exit 0; }

out=$(mktemp -d /tmp/nunatak-bench-fixed.XXXXXX)
chmod 0700 "$out"
mkdir -m 0700 "$out/r" "$out/runs"
nd=
cleanup() {
	local i
	if [ -n "$nd" ]; then
		kill -TERM "$nd" 2>/dev/null || true
		for i in $(seq 1 100); do kill -0 "$nd" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$nd" 2>/dev/null || true
	fi
	rm -rf "$out"
}
trap cleanup EXIT

# one measure: NAME then the command (its output kept in $out/NAME.log)
measure() {
	local name=$1
	shift
	"$probe" launch "$out/r/$name.launch" -- "$@" >"$out/$name.log" 2>&1 ||
		{ echo "$name failed: $(tail -3 "$out/$name.log")"; exit 1; }
}

# the large stripped program: cc1plus on a preprocessed file
cc1plus=$(g++ -print-prog-name=cc1plus 2>/dev/null || true)
if [ -x "$cc1plus" ]; then
	cat >"$out/big.cc" <<'EOF'
#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>
int main()
{
	std::map<std::string, std::vector<int>> m;
	for (int i = 0; i < 100; i++)
		m[std::to_string(i)].push_back(i);
	for (auto &kv : m)
		std::sort(kv.second.begin(), kv.second.end());
	std::cout << m.size() << "\n";
}
EOF
	g++ -E -o "$out/big.ii" "$out/big.cc"
else
	cc1plus=
fi

run_nunatak() { # NAME then the application
	local name=$1
	shift
	measure "$name" "$nunatak" run -o "$out/runs" --name fixed -- "$@"
}

for i in $(seq 1 "$runs"); do
	measure "bare$i" "$probe" start "$out/r/bare$i.app"
	run_nunatak "run$i" "$probe" start "$out/r/run$i.app"
	if [ -n "$cc1plus" ]; then
		measure "bigbare$i" "$probe" launch "$out/r/bigbare$i.app" -- \
			"$cc1plus" -fpreprocessed -quiet -O1 "$out/big.ii" -o /dev/null
		run_nunatak "big$i" "$probe" launch "$out/r/big$i.app" -- \
			"$cc1plus" -fpreprocessed -quiet -O1 "$out/big.ii" -o /dev/null
	fi
done
for i in $(seq 1 "$runs"); do
	run_nunatak "spin$i" "$probe" spin "$spin" "$out/r/spin$i.app" 0
done

# through nunatakd, when built: a service of its own, for this bench only
if [ -x "$nunatakd" ]; then
	mkdir -m 0700 "$out/etc" "$out/state" "$out/spool"
	mkdir -m 0755 "$out/run"
	(umask 077 && cat >"$out/etc/nunatakd.toml" <<EOF
[service]
agent_socket = "$out/run/agent.sock"
spool_dir = "$out/spool"
state_dir = "$out/state"
EOF
)
	"$nunatakd" --config "$out/etc/nunatakd.toml" --node bench 2>"$out/nunatakd.log" &
	nd=$!
	for i in $(seq 1 300); do
		[ -S "$out/run/agent.sock" ] && break
		kill -0 "$nd" 2>/dev/null || { echo "nunatakd exited: $(tail -5 "$out/nunatakd.log")"; exit 1; }
		sleep 0.1
	done
	export NUNATAK_AGENT_SOCKET=$out/run/agent.sock
	run_nunatak dwarm "$probe" start "$out/r/dwarm.app" # its first Run asks the tools
	for i in $(seq 1 "$runs"); do
		run_nunatak "d$i" "$probe" start "$out/r/d$i.app"
	done
	for i in $(seq 1 "$runs"); do
		run_nunatak "dspin$i" "$probe" spin "$spin" "$out/r/dspin$i.app" 0 "$nd"
	done
	unset NUNATAK_AGENT_SOCKET
	if grep -l 'observing in-process instead' "$out"/d*.log; then
		echo "a Run meant for nunatakd was observed in-process (above): not a daemon figure"
		exit 1
	fi
fi

python3 - "$out/r" "$runs" "$spin" "${cc1plus:+1}" <<'PY'
import os, statistics, sys
d, runs, spin, big = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
def nums(name):
    p = os.path.join(d, name)
    return [int(x) for x in open(p).read().split()] if os.path.exists(p) else None
def med(xs):
    return statistics.median(xs) if xs else float("nan")
def line(label, values, goal, unit="s"):
    v = med(values)
    shown = " ".join(f"{x:.3f}" for x in values)
    verdict = "" if goal is None else ("  ok" if v <= goal else f"  OVER the goal by {v - goal:.3f} {unit}")
    g = "" if goal is None else f" (goal <= {goal:g} {unit})"
    print(f"{label:34} {v:8.3f} {unit}{g}{verdict}   [{runs} runs: {shown}]")
def start_costs(prefix):
    out = []
    for i in range(1, runs + 1):
        b, bl, a, l = nums(f"bare{i}.app"), nums(f"bare{i}.launch"), nums(f"{prefix}{i}.app"), nums(f"{prefix}{i}.launch")
        if a and l and b and bl:
            out.append(((a[0] - l[0]) - (b[0] - bl[0])) / 1e9)
    return out
start = start_costs("run")
line("start, in-process", start, 0.3)
end = [(nums(f"run{i}.launch")[1] - nums(f"run{i}.app")[1]) / 1e9 for i in range(1, runs + 1)]
line("end, small program", end, 0.5)
if big:
    bend = [(nums(f"big{i}.launch")[1] - nums(f"big{i}.app")[1]) / 1e9 for i in range(1, runs + 1)]
    line("end, cc1plus (large, stripped)", bend, 1.0)
    bw = [(nums(f"bigbare{i}.launch")[1] - nums(f"bigbare{i}.launch")[0]) / 1e9 for i in range(1, runs + 1)]
    nw = [(nums(f"big{i}.launch")[1] - nums(f"big{i}.launch")[0]) / 1e9 for i in range(1, runs + 1)]
    line("  cc1plus wall alone", bw, None)
    line("  cc1plus wall under nunatak", nw, None)
bare = [(nums(f"bare{i}.launch")[1] - nums(f"bare{i}.launch")[0]) / 1e9 for i in range(1, runs + 1)]
tot = [(nums(f"run{i}.launch")[1] - nums(f"run{i}.launch")[0]) / 1e9 for i in range(1, runs + 1)]
line("total wall, small program alone", bare, None)
line("total wall, under nunatak", tot, None)
line("nunatak CPU for the small Run", [nums(f"run{i}.launch")[2] / 1e9 for i in range(1, runs + 1)], None, "CPU-s")
def share(prefix, label, n_pids):
    pcts, own, cpu, wall = [], [], [], []
    for i in range(1, runs + 1):
        s = nums(f"{prefix}{i}.app")
        if not s:
            continue
        parts = s[3:3 + n_pids]
        if any(x < 0 for x in parts):
            print(f"{label:34} unavailable (a /proc/PID/stat could not be read)")
            return
        pcts.append(100.0 * sum(parts) / s[2])
        own.append(sum(parts) / 1e9)
        cpu.append(s[2] / 1e9)
        wall.append((s[1] - s[0]) / 1e9)
    if not pcts:
        return
    pct = med(pcts)
    verdict = "  ok" if pct <= 2.0 else f"  OVER the goal by {pct - 2.0:.2f} points"
    print(f"{label:34} {pct:8.2f} % of the application's {med(cpu):.2f} CPU-s (goal <= 2 %){verdict}"
          f"   [{runs} runs: {' '.join(f'{p:.2f}' for p in pcts)} %; nunatak "
          f"{' '.join(f'{x:.3f}' for x in own)} CPU-s; wall {' '.join(f'{x:.2f}' for x in wall)} s]")
share("spin", "own CPU while the app runs", 1)
if nums("d1.app"):
    line("start, through nunatakd", start_costs("d"), 0.1)
    dend = [(nums(f"d{i}.launch")[1] - nums(f"d{i}.app")[1]) / 1e9 for i in range(1, runs + 1)]
    line("end, through nunatakd", dend, 0.5)
    share("dspin", "own CPU through nunatakd", 2)
else:
    print("through nunatakd: SKIPPED (nunatakd not built)")
PY
