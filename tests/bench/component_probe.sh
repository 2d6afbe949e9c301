#!/usr/bin/env bash
# component_probe.sh — what one Component call costs under `nunatak run
# --component`, against an empty uprobe pair on the same function of the
# same binary, on this machine: a tight loop of calls of an empty function
#   bare           the loop alone
#   empty uprobe   an empty entry+return uprobe on it (bpf/empty.bpf.c)
#   nunatak run    --component component_loop_call (and sampling)
# ns per call from the loop's own clock (median of 3), and the ratio of
# nunatak's added cost to the empty uprobe pair's. Then the figures the Run
# itself measured at its start (counters component_probe_ns and
# empty_uprobe_pair_ns, what `nunatak components` reports next to the costs).
#
# usage: tests/bench/component_probe.sh NUNATAK BENCH_DIR [CALLS]
set -euo pipefail
nunatak=$1 bench=$2 calls=${3:-200000}
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root for BPF"; exit 0; }
out=$(mktemp -d /tmp/nunatak-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT
loop="$bench/component-loop"

ns() { "$@" 2>/dev/null | sed -n 's/^ns_per_call=//p' | tail -1; }
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

b=() e=() n=()
for i in 1 2 3; do
	b+=("$(ns "$loop" "$calls")")
	e+=("$(ns "$bench/bare-uprobe" "$loop" component_loop_call "$loop" "$calls")")
	n+=("$(ns "$nunatak" run --linger 0 -o "$out/runs" --component component_loop_call -- \
		"$loop" "$calls")")
done
run=$(ls -d "$out"/runs/*/ | tail -1)
counters=$(sqlite3 "$run/pivot.sqlite" "SELECT name || '=' || value FROM counters WHERE name IN
	('component_probe_ns', 'empty_uprobe_pair_ns', 'component_calls_seen',
	 'component_calls_lost')" | tr '\n' ' ')
python3 - "$(median3 "${b[@]}")" "$(median3 "${e[@]}")" "$(median3 "${n[@]}")" "$counters" <<'PY'
import sys
bare, empty, nun = map(float, sys.argv[1:4])
print(f"component call: bare {bare:8.1f} ns   empty uprobe pair +{empty-bare:8.1f} ns   "
      f"nunatak --component +{nun-bare:8.1f} ns   ratio to empty uprobe pair "
      f"{(nun-bare)/(empty-bare):5.2f}")
c = dict(kv.split("=") for kv in sys.argv[4].split())
if "component_probe_ns" in c:
    p, e = int(c["component_probe_ns"]), int(c["empty_uprobe_pair_ns"])
    print(f"measured by the Run at its start: component_probe_ns {p}, empty_uprobe_pair_ns {e}, "
          f"ratio {p/e:5.2f}; calls seen {c.get('component_calls_seen')}, "
          f"lost {c.get('component_calls_lost')}")
PY
