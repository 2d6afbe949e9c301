#!/usr/bin/env bash
# unwind.sh — what unwinding costs, measured in one run (issue 9):
#   application slowdown of a fixed-work workload (the C chain without
#   frame pointers, one thread: build/workloads/unwind/chain; one thread
#   so that the machine's other load disturbs it less) alone, under
#     (a) the bare sampling interrupt (bench/bare-interrupt: the same
#         per-CPU perf events at the same frequency, an empty BPF program)
#     (b) nunatak run --unwinder=frame-pointers
#     (c) nunatak run (its default unwinder: tables, once issue 9 is in)
#     (d) perf record -F 997 --call-graph dwarf, the usual tool
#   all at FREQ Hz (default 9999: at 997 Hz a sample's cost is well under
#   this machine's noise), rounds interleaved (bare, a, b, c, d, bare, ...),
#   the application's own wall time (taken around it, nunatak's start and
#   Run writing excluded), medians and minimums (best of the rounds: the
#   least disturbed by the machine's other load); slowdown = time / bare
#   time; cost per sample = (time - bare) / (FREQ * bare) (one busy
#   thread), and the slowdown it means at the default 997 Hz; goal: (c)'s
#   slowdown at most 1.3 times (a)'s;
#   nunatak's memory (peak RSS, VmHWM of the nunatak process) and CPU time
#   on a process that dlopens a very large library (libLLVM-14) against one
#   that does not, the unwind tables' BPF memory, the table load time
#   nunatak logs, and the time until libLLVM's stacks are complete (the
#   CPU time of its samples whose stack is truncated).
#
# usage: tests/bench/unwind.sh NUNATAK BENCH_DIR WORKLOADS_DIR [MILLIONS] [ROUNDS]
set -uo pipefail
nunatak=$1 bench=$2 workloads=$3 millions=${4:-150} rounds=${5:-5}
freq=${FREQ:-9999}
llvm=${LLVM_LIB:-/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1}
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root for BPF"; exit 0; }
for f in "$bench/bare-interrupt" "$bench/llvm-load" "$workloads/unwind/chain"; do
	[ -x "$f" ] || { echo "unwind.sh: $f missing (make build $bench/bare-interrupt $bench/llvm-load)" >&2; exit 1; }
done
out=$(mktemp -d /tmp/nunatak-bench-unwind.XXXXXX)
trap 'rm -rf "$out"' EXIT
# nunatak's own process, not a node service another session may run
export NUNATAK_AGENT_SOCKET=$out/no-daemon.sock
work=("$workloads/unwind/chain" "$millions" 1)

# the application's wall time, written to $1 (the timer starts after
# bash's own start, as close to the exec as a shell gets)
timed=(bash -c 'f=$1; shift; s=$EPOCHREALTIME; "$@" >/dev/null; rc=$?; e=$EPOCHREALTIME; echo "$s $e" >"$f"; exit $rc' timed)

configs=(bare bare-interrupt nunatak-fp nunatak-tables perf-dwarf)
if ! "$nunatak" run -o "$out/runs" --unwinder=frame-pointers -- true >/dev/null 2>"$out/fp-probe.txt"; then
	echo "(b) unavailable: nunatak run --unwinder=frame-pointers failed: $(head -1 "$out/fp-probe.txt")"
	configs=(bare bare-interrupt nunatak-tables perf-dwarf)
fi
command -v perf >/dev/null || configs=("${configs[@]/perf-dwarf/}")

run_one() { # CONFIG ROUND
	local t="$out/$1.$2.t"
	case $1 in
	bare) "${timed[@]}" "$t" "${work[@]}" ;;
	bare-interrupt) "$bench/bare-interrupt" "$freq" "${timed[@]}" "$t" "${work[@]}" ;;
	nunatak-fp) "$nunatak" run -F "$freq" -o "$out/runs" --unwinder=frame-pointers -- "${timed[@]}" "$t" "${work[@]}" ;;
	nunatak-tables) "$nunatak" run -F "$freq" -o "$out/runs" -- "${timed[@]}" "$t" "${work[@]}" ;;
	perf-dwarf) perf record -q -F "$freq" --call-graph dwarf -o "$out/perf.data" -- \
		"${timed[@]}" "$t" "${work[@]}" ;;
	esac >/dev/null 2>>"$out/$1.log" || { echo "unwind.sh: $1 round $2 failed: $(tail -3 "$out/$1.log")" >&2; exit 1; }
}

"${work[@]}" >/dev/null # warm the page cache
for r in $(seq 1 "$rounds"); do
	for c in "${configs[@]}"; do
		[ -n "$c" ] && run_one "$c" "$r"
	done
done

python3 - "$out" "$rounds" "$freq" "${configs[@]}" <<'PY'
import statistics, sys
out, rounds, freq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
configs = [c for c in sys.argv[4:] if c]
t = {}
for c in configs:
    t[c] = []
    for r in range(1, rounds + 1):
        s, e = open(f"{out}/{c}.{r}.t").read().split()
        t[c].append(float(e) - float(s))
label = {"bare": "bare", "bare-interrupt": "(a) bare interrupt", "nunatak-fp": "(b) nunatak fp",
         "nunatak-tables": "(c) nunatak default", "perf-dwarf": "(d) perf dwarf"}
med = {c: statistics.median(t[c]) for c in configs}
low = {c: min(t[c]) for c in configs}
print(f"application wall time at {freq} Hz, {rounds} interleaved rounds (s); slowdown = time / bare;")
print("cost per sample and the slowdown it means at 997 Hz from the best rounds")
print(f"{'':18} {'median':>7} {'min':>7} {'max':>7} {'slowdown':>8} {'(min)':>7} {'us/sample':>9} {'@997Hz':>7}")
cost = {}
for c in configs:
    cost[c] = (low[c] - low["bare"]) / (freq * low["bare"])
    print(f"{label[c]:18} {med[c]:7.3f} {low[c]:7.3f} {max(t[c]):7.3f} {med[c] / med['bare']:8.3f} "
          f"{low[c] / low['bare']:7.3f} {1e6 * cost[c]:9.2f} {1 + 997 * cost[c]:7.4f}")
a = "bare-interrupt"
for c in ("nunatak-fp", "nunatak-tables"):
    if c not in configs:
        continue
    goal = "  goal <= 1.3" if c == "nunatak-tables" else ""
    per = f"{cost[c] / cost[a]:.2f}" if cost[a] > 0 else "n/a (the bare interrupt's cost is within noise)"
    print(f"{label[c]} / (a): slowdown ratio {low[c] / low[a]:.3f} (best rounds), "
          f"{med[c] / med[a]:.3f} (medians){goal}; cost per sample ratio {per}")
PY

# nunatak on a process through libLLVM, against one through nothing large
[ -r "$llvm" ] || { echo "large library: $llvm missing (apt-get install llvm-14): skipped"; exit 0; }
observe() { # NAME ARGS...: nunatak's VmHWM and CPU ticks, sampled until it exits
	local name=$1 pid hwm=0 ticks=0 v
	shift
	"$nunatak" run -v -o "$out/runs" --name "$name" -- "$bench/llvm-load" "$@" \
		>/dev/null 2>"$out/$name.err" &
	pid=$!
	: >"$out/$name.maps"
	: >"$out/$name.ids"
	while kill -0 "$pid" 2>/dev/null; do
		# the maps nunatak holds (bpftool here does not say whose a map is)
		sed -n 's/^map_id:[[:space:]]*//p' /proc/"$pid"/fdinfo/* 2>/dev/null >>"$out/$name.ids"
		v=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null) && [ -n "$v" ] && hwm=$v
		v=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) && [ -n "$v" ] && ticks=$v
		bpftool -j map show 2>/dev/null >>"$out/$name.maps"
		echo >>"$out/$name.maps"
		sleep 0.2
	done
	wait "$pid" || { echo "unwind.sh: nunatak run $name failed: $(tail -3 "$out/$name.err")" >&2; exit 1; }
	echo "$hwm $ticks"
}
read -r hwm0 ticks0 < <(observe small none 3)
read -r hwm1 ticks1 < <(observe large "$llvm" 3)
hz=$(getconf CLK_TCK)
echo
echo "nunatak's peak RSS: $((hwm0 / 1024)) MiB (workload through no large library), $((hwm1 / 1024)) MiB (through libLLVM-14): +$(((hwm1 - hwm0) / 1024)) MiB"
echo "nunatak's CPU time: $(python3 -c "print(f'{$ticks0/$hz:.2f} s, {$ticks1/$hz:.2f} s: +{($ticks1-$ticks0)/$hz:.2f} s')") (at least: sampled every 0.2 s)"
python3 - "$out/large.maps" "$out/large.ids" <<'PY'
import json, sys
ids = {int(x) for x in open(sys.argv[2]).read().split()}
best, held = {}, {}
for chunk in open(sys.argv[1]).read().split("\n\n"):
    chunk = chunk.strip()
    if not chunk:
        continue
    try:
        maps = json.loads(chunk)
    except ValueError:
        continue
    now = {m["name"]: m.get("bytes_memlock", 0) for m in maps
           if m.get("name", "").startswith("unwind_") and m.get("id") in ids}
    if sum(now.values()) > sum(best.values()):
        best = now
    mine = {m["id"]: m.get("bytes_memlock", 0) for m in maps if m.get("id") in ids}
    if sum(mine.values()) > sum(held.values()):
        held = mine
print(f"BPF maps nunatak held: {len(held)}, {sum(held.values()) / 2**20:.1f} MiB (bytes_memlock)")
if best:
    print("unwind maps nunatak held (BPF memory, bytes_memlock): " + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in sorted(best.items()))
          + f"; {sum(best.values()) / 2**20:.1f} MiB in all")
else:
    print("unwind maps (BPF memory): nunatak held no unwind_* map (no table unwinder in this nunatak)")
PY
load=$(grep -i 'unwind table of .*libLLVM' "$out/large.err" | tail -1)
[ -n "$load" ] || load="no 'unwind table of ...libLLVM...' line in the log of nunatak run -v"
echo "table load (nunatak's log): $load"
"$nunatak" export "$(sed -n 's/^Run: //p' "$out/large.err" | tail -1)" --format folded -o "$out/large.folded" 2>"$out/export.err" ||
	{ echo "time to complete libLLVM stacks: unavailable (nunatak export failed: $(head -1 "$out/export.err"))"; exit 0; }
python3 - "$out/large.folded" "$freq" <<'PY'
import sys
freq = int(sys.argv[2])
work = trunc = total = 0
for line in open(sys.argv[1]):
    frames, _, n = line.rstrip("\n").rpartition(" ")
    f = frames.split(";")
    n = int(n)
    total += n
    if "llvm_work" in f:
        work += n
    elif f[0] == "[truncated]":
        trunc += n
print(f"libLLVM stacks: {work} samples complete through llvm_work, {trunc} truncated of {total}: "
      f"about {trunc / freq:.3f} s of CPU before libLLVM's stacks were complete")
PY
