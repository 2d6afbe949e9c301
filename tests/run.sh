#!/usr/bin/env bash
# run.sh — runs the unit test binaries (cmocka) and the integration test
# scripts, and closes with one line: "N passed, N failed, N skipped".
#
#   tests/run.sh [--unit DIR] [--fuzz DIR [--fuzz-seconds N]]
#                [--integration DIR --nunatak BIN --workloads DIR]
#
# An integration script passes with exit 0, is SKIPPED with exit 77 (it
# prints the reason), and fails otherwise. A cmocka binary counts as its
# tests: passed, failed and skipped as cmocka reports them. A libFuzzer
# target (DIR/fuzz_X, run by tests/fuzz/run.sh for N seconds, 12 by
# default) is one test: it fails on any finding, whose input is kept.
set -u
unit_dir= integ_dir= fuzz_dir= fuzz_seconds=12
while [ $# -gt 0 ]; do
	case "$1" in
	--unit) unit_dir=$2; shift 2 ;;
	--integration) integ_dir=$2; shift 2 ;;
	--fuzz) fuzz_dir=$2; shift 2 ;;
	--fuzz-seconds) fuzz_seconds=$2; shift 2 ;;
	--nunatak) export NUNATAK=$2; shift 2 ;;
	--workloads) export WORKLOADS=$2; shift 2 ;;
	*) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

passed=0 failed=0 skipped=0
failures=()
declare -A failure_logs # failure -> its log
log_dir=$(mktemp -d /tmp/nunatak-tests.XXXXXX)

if [ -n "$unit_dir" ]; then
	for t in "$unit_dir"/test_*; do
		[ -x "$t" ] || continue
		name=$(basename "$t")
		out="$log_dir/$name.log"
		timeout 300 "$t" >"$out" 2>&1
		rc=$?
		p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -1)
		f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out" | tail -1)
		s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$out" | tail -1)
		p=${p:-0} f=${f:-0} s=${s:-0}
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
			f=1 # crashed, or a sanitizer stopped it
		fi
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
		printf '%-34s %3d passed %3d failed %3d skipped\n' "unit/$name" "$p" "$f" "$s"
		grep -h '^SKIPPED' "$out" | sed 's/^/    /'
		if [ "$f" -ne 0 ]; then
			failures+=("unit/$name"); failure_logs[unit/$name]=$out
			sed 's/^/    | /' "$out" | grep -v '^\s*| \[       OK \]' | tail -40
		fi
	done
fi

if [ -n "$fuzz_dir" ]; then
	for t in "$fuzz_dir"/fuzz_*; do
		[ -f "$t" ] && [ -x "$t" ] || continue
		name=$(basename "$t")
		out="$log_dir/$name.log"
		"$(dirname "$0")/fuzz/run.sh" --seconds "$fuzz_seconds" --artifacts "$log_dir/fuzz" \
			"$fuzz_dir" "$name" >"$out" 2>&1
		rc=$?
		if [ "$rc" -eq 0 ]; then
			passed=$((passed + 1))
			printf '%-34s ok: %s\n' "fuzz/$name" "$(sed -n "s/^$name: //p" "$out" | head -1)"
		else
			failed=$((failed + 1)); failures+=("fuzz/$name"); failure_logs[fuzz/$name]=$out
			printf '%-34s FAILED (exit %d)\n' "fuzz/$name" "$rc"
			sed 's/^/    | /' "$out" | tail -20
		fi
	done
fi

if [ -n "$integ_dir" ]; then
	export TESTS_LIB
	TESTS_LIB=$(cd "$(dirname "$0")/lib" && pwd)
	for t in "$integ_dir"/*.sh; do
		name=$(basename "$t" .sh)
		out="$log_dir/integration-$name.log"
		start=$(date +%s)
		timeout 300 bash "$t" >"$out" 2>&1
		rc=$?
		secs=$(($(date +%s) - start))
		case $rc in
		0) passed=$((passed + 1)); printf '%-34s ok (%ds)\n' "integration/$name" "$secs" ;;
		77) skipped=$((skipped + 1)); printf '%-34s SKIPPED: %s\n' "integration/$name" "$(grep -h '^SKIPPED' "$out" | head -1)" ;;
		*) failed=$((failed + 1)); failures+=("integration/$name"); failure_logs[integration/$name]=$out
		   printf '%-34s FAILED (exit %d, %ds)\n' "integration/$name" "$rc" "$secs"
		   tail -40 "$out" | sed 's/^/    | /' ;;
		esac
	done
fi

echo
# the failures again, last, where a reader of only the tail (a CI page) sees them
for f in "${failures[@]}"; do
	log=${failure_logs[$f]}
	echo "--- $f (last lines of $log)"
	tail -25 "$log" | sed 's/^/    | /'
done
[ ${#failures[@]} -gt 0 ] && echo "failed: ${failures[*]}"
echo "logs: $log_dir"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ $((passed + skipped)) -gt 0 ]
