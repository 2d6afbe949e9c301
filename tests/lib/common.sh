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
