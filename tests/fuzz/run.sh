#!/usr/bin/env bash
# run.sh — runs libFuzzer targets one after the other, each from its seed
# corpus tests/fuzz/corpus/X/ (read only: what a run discovers goes to a
# scratch corpus), and prints per target
#     fuzz_X: N executions, 0 findings (S s, E exec/s)
# A target whose tests/fuzz/X.dict exists gets it as libFuzzer dictionary
# (keys the uninstrumented libraries, jansson and protobuf-c, compare).
# A crash, a leak, a sanitizer report, a timeout or an out-of-memory is a
# finding: the target stops, its input is kept and named, and run.sh exits
# non-zero.
#
#   tests/fuzz/run.sh [--seconds N] [--runs N] [--artifacts DIR] BIN_DIR [fuzz_X ...]
#
# --seconds bounds the time of each target (60 by default); --runs stops a
# target earlier, after N executions.
# Without target names, every fuzz_* executable of BIN_DIR runs. Runs at
# nice 19 (the machine is shared); libFuzzer's own log of each target is
# kept in the artifacts directory.
set -u
seconds=60 runs=-1 artifacts=
while [ $# -gt 0 ]; do
	case "$1" in
	--seconds) seconds=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--artifacts) artifacts=$2; shift 2 ;;
	-*) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--seconds N] [--runs N] [--artifacts DIR] BIN_DIR [fuzz_X ...]" >&2; exit 2; }
bin_dir=$1; shift
corpus_root=$(cd "$(dirname "$0")" && pwd)/corpus
[ -n "$artifacts" ] || artifacts=$(mktemp -d /tmp/nunatak-fuzz-artifacts.XXXXXX)
mkdir -p "$artifacts" || exit 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for t in "$bin_dir"/fuzz_*; do
		[ -x "$t" ] && [ -f "$t" ] && targets+=("$(basename "$t")")
	done
fi
[ ${#targets[@]} -gt 0 ] || { echo "run.sh: no fuzz_* target in '$bin_dir'" >&2; exit 2; }

failed=0
for name in "${targets[@]}"; do
	bin=$bin_dir/$name
	seeds=$corpus_root/${name#fuzz_}
	if [ ! -x "$bin" ] || [ ! -d "$seeds" ]; then
		echo "$name: FAILED: no binary '$bin' or no seed corpus '$seeds'"
		failed=1
		continue
	fi
	work=$(mktemp -d /tmp/nunatak-fuzz-corpus.XXXXXX)
	log=$artifacts/$name.log
	mkdir -p "$artifacts/$name"
	dict=()
	[ -f "$corpus_root/../${name#fuzz_}.dict" ] && dict=(-dict="$corpus_root/../${name#fuzz_}.dict")
	# -timeout: one input taking 10 s is a hang; -rss_limit_mb: a bound on
	# what one input may make the parser allocate
	nice -n 19 timeout $((seconds + 120)) "$bin" -max_total_time="$seconds" -runs="$runs" \
		-timeout=10 -rss_limit_mb=2048 "${dict[@]}" -print_final_stats=1 \
		-artifact_prefix="$artifacts/$name/" "$work" "$seeds" >"$log" 2>&1
	rc=$?
	rm -rf "$work"
	execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *\([0-9]*\).*/\1/p' "$log" | tail -1)
	secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
	if [ -z "$execs" ]; then # a crash ends the run before the final stats
		execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
	fi
	execs=${execs:-0} rate=${rate:-0} secs=${secs:-$seconds}
	if [ "$rc" -eq 0 ]; then
		echo "$name: $execs executions, 0 findings (${secs} s, $rate exec/s)"
		rmdir "$artifacts/$name" 2>/dev/null
	else
		failed=1
		kept=$(ls "$artifacts/$name" 2>/dev/null | sed "s|^|$artifacts/$name/|" | tr '\n' ' ')
		echo "$name: $execs executions, 1 finding (exit $rc): input kept: ${kept:-none}"
		grep -E 'ERROR: |SUMMARY: |fuzz invariant failed|runtime error' "$log" | head -5 | sed 's/^/    /'
		echo "    log: $log; reproduce: $bin ${kept%% *}"
	fi
done
exit $failed
