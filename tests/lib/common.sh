# common.sh — sourced by every integration test.
#
# Provides: $NUNATAK, $WORKLOADS (from tests/run.sh), a scratch directory
# $T removed at exit, fail/skip helpers, and json/sql queries through
# Python's standard library (the same way a user's script would read a Run).
set -u
: "${NUNATAK:?run through tests/run.sh or make test}"
: "${WORKLOADS:?run through tests/run.sh or make test}"
T=$(mktemp -d /tmp/nunatak-it.XXXXXX)
chmod 0755 "$T"
trap 'rm -rf "$T"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIPPED: $*"
	exit 77
}

need_root_bpf() {
	[ "$(id -u)" = 0 ] || skip "needs root to load BPF programs"
	[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
}

# json FILE EXPR: evaluate a Python expression on the parsed document `d`
json() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# sql RUN_DIR QUERY: one query on the Run's pivot, rows as "a|b"
sql() {
	python3 -c '
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "/pivot.sqlite?mode=ro", uri=True)
for row in db.execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))' "$1" "$2"
}

# the Run directory printed by the last `nunatak run` whose stderr is in FILE
run_dir_of() {
	sed -n 's/^Run: //p' "$1" | tail -1
}

# assert_near ACTUAL EXPECTED TOLERANCE WHAT
assert_near() {
	python3 -c 'import sys; a,e,t=map(float,sys.argv[1:4]); sys.exit(0 if abs(a-e)<=t else 1)' "$1" "$2" "$3" ||
		fail "$4: $1 is not within $3 of $2"
}

# wait_for SECONDS COMMAND [ARGS...]: runs COMMAND every 0.05 s until it
# succeeds (0), or until SECONDS have passed (1): `wait_for 30 test -e
# ready || fail "..."`. A test waits for the condition it needs (a Batch
# stored, the application started), never for a fixed time: nunatak's
# start alone takes more than a second, more on a loaded machine.
wait_for() {
	local deadline=$(($(date +%s%N) + $1 * 1000000000))
	shift
	until "$@"; do
		[ "$(date +%s%N)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# stored_samples RUN_DIR: the samples the Run's pivot holds now, 0 when it
# has none yet (or no pivot). Read while nunatak writes the Run: the pivot
# is in WAL mode until it is sealed, where a reader does not block the
# Batches being stored (the seal, at the end, waits for readers: poll
# before it, not during it).
stored_samples() {
	local n
	n=$(sql "$1" 'select coalesce(sum(sample_count), 0) from samples' 2>/dev/null)
	echo "${n:-0}"
}

# has_samples DIR MIN: a Run directory in DIR (a runs directory) whose
# pivot holds at least MIN samples (stored Batches); for wait_for
has_samples() {
	local run
	for run in "$1"/*/; do
		[ -e "$run/pivot.sqlite" ] && [ "$(stored_samples "$run")" -ge "$2" ] && return 0
	done
	return 1
}
