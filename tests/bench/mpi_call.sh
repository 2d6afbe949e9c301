#!/usr/bin/env bash
# mpi_call.sh — what one probed MPI call costs, measured in one run, per
# MPI family: a tight loop of MPI_Test (a call that returns at once)
#   bare                the loop alone
#   empty uprobe        an empty entry+return uprobe on MPI_Test (the trap)
#   nunatak run         the MPI probes (and sampling)
# µs per call from the loop's own MPI_Wtime, and the ratio of nunatak's
# added cost to the empty uprobe's; then the whole pattern workload's
# slowdown under nunatak (wall time, hyperfine).
#
# usage: tests/bench/mpi_call.sh NUNATAK BENCH_DIR WORKLOADS_DIR [CALLS]
set -euo pipefail
nunatak=$1 bench=$2 workloads=$3 calls=${4:-100000}
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root for BPF"; exit 0; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d /tmp/nunatak-bench.XXXXXX)

us() { "$@" 2>/dev/null | sed -n 's/^us_per_call=//p' | tail -1; }
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

for fam in openmpi mpich; do
	loop="$bench/mpi_loop.$fam"
	case $fam in
	openmpi) lib=$(ldconfig -p | sed -n 's/.*libmpi.so.40 .*=> //p' | head -1) ;;
	mpich) lib=$(ldconfig -p | sed -n 's/.*libmpich.so.12 .*=> //p' | head -1) ;;
	esac
	b=() e=() n=()
	for i in 1 2 3; do
		b+=("$(us "$loop" "$calls")")
		e+=("$(us "$bench/bare-uprobe" "$lib" PMPI_Test "$loop" "$calls")")
		n+=("$(us "$nunatak" run -o "$out/runs" -- "$loop" "$calls")")
	done
	python3 - "$fam" "$(median3 "${b[@]}")" "$(median3 "${e[@]}")" "$(median3 "${n[@]}")" <<'PY'
import sys
fam, bare, empty, nun = sys.argv[1], *map(float, sys.argv[2:5])
print(f"{fam:8} bare {bare:7.3f} µs/call   empty uprobe +{empty-bare:7.3f} µs   "
      f"nunatak +{nun-bare:7.3f} µs   ratio to empty uprobe {(nun-bare)/(empty-bare):5.2f}")
PY
done

echo
if command -v hyperfine >/dev/null; then
	hyperfine -N --warmup 1 --runs 5 --export-json "$out/h.json" \
		-n bare "mpirun.openmpi --oversubscribe -n 2 $workloads/mpi/pattern.openmpi 600" \
		-n nunatak "$nunatak run -o $out/runs -- mpirun.openmpi --oversubscribe -n 2 $workloads/mpi/pattern.openmpi 600" \
		>/dev/null 2>&1
	python3 - "$out/h.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
print(f"pattern (Open MPI, 2 ranks): bare {r['bare']['mean']:.3f} s, under nunatak "
      f"{r['nunatak']['mean']:.3f} s, slowdown {r['nunatak']['mean']/r['bare']['mean']:.3f}")
PY
fi
rm -rf "$out"
