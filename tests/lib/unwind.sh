# unwind.sh — sourced by the tests/integration/unwind_*.sh scripts (after
# common.sh): profile one workload of build/workloads/unwind and read the
# Run back the way a user would, through `nunatak summary --json` and
# `nunatak export RUN --format folded`.
#
#   unwind_run NAME [RUN OPTIONS...] -- COMMAND...
#       runs `$NUNATAK run --name NAME OPTIONS -- COMMAND` in $T; fails
#       unless it exits 0 and COMMAND printed "ok". Sets $run (the Run
#       directory), writes $T/NAME.err (nunatak's and the workload's
#       stderr) and $T/NAME.json (summary --json).
#   unwind_export NAME
#       writes $T/NAME.folded: `nunatak export $run --format folded -o`
#   unwind_check_sum NAME
#       the folded export's counts add up to the Run's samples
#   folded ARGS...   tests/lib/folded_check.py
#   summary_check NAME CHECK ARGS...   tests/lib/summary_check.py on NAME.json
UW=$WORKLOADS/unwind
UNWIND_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

folded() {
	python3 "$UNWIND_LIB/folded_check.py" "$@"
}

summary_check() {
	local name=$1
	shift
	python3 "$UNWIND_LIB/summary_check.py" "$T/$name.json" "$@"
}

unwind_run() {
	local name=$1 rc
	shift
	[ -x "$UW/chain" ] || fail "unwind workloads not built in $UW (make build)"
	cd "$T" || fail "no scratch directory"
	local opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	"$NUNATAK" run --name "$name" "${opts[@]}" -- "$@" >"$T/$name.out" 2>"$T/$name.err"
	rc=$?
	[ "$rc" = 0 ] || fail "$name: nunatak run exit $rc: $(tail -20 "$T/$name.err")"
	grep -qx ok "$T/$name.out" || fail "$name: the workload did not print 'ok': $(head -5 "$T/$name.out")"
	run=$(run_dir_of "$T/$name.err")
	[ -n "$run" ] && [ -d "$run" ] || fail "$name: no Run directory in: $(tail -5 "$T/$name.err")"
	"$NUNATAK" summary --json "$run" >"$T/$name.json" 2>"$T/$name.summary.err" ||
		fail "$name: nunatak summary --json $run failed: $(cat "$T/$name.summary.err")"
}

unwind_export() {
	local name=$1 rc
	"$NUNATAK" export "$run" --format folded -o "$T/$name.folded" 2>"$T/$name.export.err"
	rc=$?
	[ "$rc" = 0 ] || fail "$name: nunatak export $run --format folded -o FILE failed (exit $rc): $(head -5 "$T/$name.export.err")"
	[ -s "$T/$name.folded" ] || fail "$name: the folded export is empty"
}

unwind_check_sum() {
	local name=$1 sum samples
	sum=$(folded "$T/$name.folded" sum) || exit 1
	samples=$(json "$T/$name.json" 'd["totals"]["samples"]')
	[ "$sum" = "$samples" ] ||
		fail "$name: the folded export holds $sum samples, the Run $samples (summary --json totals.samples)"
	echo "$name: folded export sums to the Run's $samples samples"
}
