#!/usr/bin/env bash
# overhead.sh — what sampling costs the application, measured in one run:
#   bare                      the demo workload alone, a fixed amount of work
#   bare sampling interrupt   the same per-CPU perf events at the same
#                             frequency with an empty BPF program (the
#                             mechanism's own cost)
#   nunatak run               the whole thing, Run written
#   perf record -F 997 -g     the usual tool at the same frequency
# prints the slowdown ratios (mean wall time over bare), the top-5 shares
# from nunatak and perf side by side, and the time from the application's
# exit to the Run written.
#
# usage: tests/bench/overhead.sh NUNATAK BENCH_DIR WORKLOADS_DIR [ROUNDS] [RUNS]
set -euo pipefail
nunatak=$1 bench=$2 workloads=$3 rounds=${4:-600} runs=${5:-5}
freq=997
command -v hyperfine >/dev/null || { echo "SKIPPED: hyperfine missing (apt-get install hyperfine)"; exit 0; }
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root for BPF"; exit 0; }
out=$(mktemp -d /tmp/nunatak-bench.XXXXXX)
work="$workloads/hotspots --rounds $rounds"

hyperfine -N --warmup 1 --runs "$runs" --export-json "$out/h.json" \
	-n bare "$work" \
	-n bare-interrupt "$bench/bare-interrupt $freq $work" \
	-n nunatak "$nunatak run -o $out/runs -- $work" \
	-n perf-record "perf record -q -F $freq -g -o $out/perf.data -- $work" >"$out/hyperfine.txt" 2>&1 ||
	{ cat "$out/hyperfine.txt"; exit 1; }

python3 - "$out/h.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
base = r["bare"]["mean"]
print(f"{'':24} {'mean s':>8} {'stddev':>8} {'ratio':>7}")
for name in ("bare", "bare-interrupt", "nunatak", "perf-record"):
    x = r[name]
    print(f"{name:24} {x['mean']:8.3f} {x['stddev']:8.3f} {x['mean']/base:7.3f}")
PY

echo
echo "top-5 shares            nunatak    perf"
"$nunatak" run -o "$out/runs" --name top5 -- $work >/dev/null 2>"$out/run.txt"
"$nunatak" summary -o "$out/runs" --json >"$out/s.json" 2>/dev/null
perf record -q -F $freq -g -o "$out/perf.data" -- $work >/dev/null 2>&1
perf report -i "$out/perf.data" --stdio --no-children --sort sym -F overhead,sym 2>/dev/null |
	grep -E '^ +[0-9]' | head -5 >"$out/perf.txt"
python3 - "$out/s.json" "$out/perf.txt" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))
perf = {}
for line in open(sys.argv[2]):
    m = re.match(r"\s*([\d.]+)%\s+\[\.\]\s+(\S+)", line)
    if m:
        perf[m.group(2)] = float(m.group(1))
for h in s["hotspots"][:5]:
    p = perf.get(h["name"])
    print(f"{h['name']:22} {100*h['share']:7.1f}% {p if p is not None else float('nan'):7.1f}%")
PY

echo
for i in 1 2 3; do
	"$nunatak" run -v -o "$out/runs" --name finalize -- $work 2>&1 >/dev/null | sed -n 's/^nunatak: \(Run written .*\)/\1/p'
done
rm -rf "$out"
