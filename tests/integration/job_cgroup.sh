#!/bin/bash
# job_cgroup.sh — a Slurm job's processes join its job Target, on real BPF
# and a fake Slurm cgroup made here (no Slurm needed): the v1 freezer
# layout /slurm_nktest<pid>/uid_U/job_J/step_0 and, when the cgroup2 mount
# takes children, the v2 one .../slurmstepd.scope/job_J/step_0/user/task_0.
#
# The Agent is the one of tests/unit/test_agent_job ("observe": a job
# Target owned by nunatak-u1, its Batches read by a pretend Aggregator,
# one line per process sampled). Shown:
#   - the user's processes running in the job's cgroup before the Target
#     exists are adopted at once, their samples in their own executable
#     (their mappings read), their rank from their environment;
#   - a process the user starts in the cgroup afterwards (its exec) and
#     the processes it forks are adopted;
#   - root's process in the cgroup, another user's (nunatak-u2) in it and
#     the user's outside it are not.
# The cgroups are removed at exit, the processes started here killed.
. "$TESTS_LIB/common.sh"
need_root_bpf

# the driver: built with the unit tests (make test builds them in BUILD-asan)
B=$(dirname "$NUNATAK")
DRIVER=${AGENT_JOB_DRIVER:-}
for d in "$B/tests/test_agent_job" "$B-asan/tests/test_agent_job"; do
	[ -n "$DRIVER" ] || [ ! -x "$d" ] || DRIVER=$d
done
[ -n "$DRIVER" ] || skip "tests/unit/test_agent_job is not built (make $B/tests/test_agent_job)"
[ -w /sys/fs/cgroup/freezer/cgroup.procs ] || skip "no v1 freezer hierarchy at /sys/fs/cgroup/freezer"
command -v setpriv >/dev/null || skip "setpriv (util-linux) missing"
HOT=$WORKLOADS/hotspots
[ -x "$HOT" ] || fail "$HOT missing"

U1=nunatak-u1
U2=nunatak-u2
for u in $U1 $U2; do
	id "$u" >/dev/null 2>&1 || useradd -m -s /bin/bash "$u" || fail "useradd $u"
done
UID1=$(id -u $U1)
JOB=4242
V1_BASE=/sys/fs/cgroup/freezer/slurm_nktest$$
V1_STEP=$V1_BASE/uid_$UID1/job_$JOB/step_0
V2_BASE=/sys/fs/cgroup/unified/nktest$$
V2_TASK=$V2_BASE/system.slice/slurmstepd.scope/job_$((JOB + 1))/step_0/user/task_0
PIDS=()

kill_started() {
	local p
	for p in "${PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	PIDS=()
}

cleanup() {
	local p d
	kill_started
	# the forked children die with their shell's kill only when asked
	for d in "$V1_STEP" "${V1_MPI:-}" "$V2_TASK"; do
		[ -n "$d" ] && [ -r "$d/cgroup.procs" ] || continue
		for p in $(cat "$d/cgroup.procs"); do kill -KILL "$p" 2>/dev/null; done
	done
	sleep 0.3
	for d in "$V1_STEP" "${V1_MPI:-}" "$V2_TASK"; do
		while [ "${#d}" -gt 20 ] && [ -d "$d" ] && [[ $d == */nktest$$* || $d == */slurm_nktest$$* ]]; do
			rmdir "$d" 2>/dev/null
			d=${d%/*}
		done
	done
	rm -rf "$T"
}
trap cleanup EXIT

mkdir -p "$V1_STEP" || fail "mkdir $V1_STEP"
install -d -o $U1 -m 0700 "$T/u1" # what the user's processes write

# start_in CGROUP USER ENV... -- CMD...: CMD as USER (root: as is) inside
# CGROUP, in the background; its pid in $! (the same through its execs)
start_in() {
	local cg=$1 user=$2
	shift 2
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	if [ "$user" = root ]; then
		bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec env "$@"' _ "$cg" "${envs[@]}" "$@" &
	else
		bash -c 'echo $$ > "$1/cgroup.procs" && exec setpriv --reuid="$2" --regid="$2" --init-groups env "${@:3}"' \
			_ "$cg" "$user" "${envs[@]}" "$@" &
	fi
}
# start_out USER ENV... -- CMD...: the same outside any job cgroup
start_out() {
	local user=$1
	shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	setpriv --reuid="$user" --regid="$user" --init-groups env "${envs[@]}" "$@" &
}

# running_own_image PID...: each PID has exec'd its program ($HOT), past
# bash, setpriv and env (a Target adopts a process by its image)
running_own_image() {
	local p hot
	hot=$(readlink -f "$HOT")
	for p in "$@"; do
		[ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$hot" ] || return 1
	done
}

# observe JOB MS OUT READY: the driver in the background, its pid in $DRV
observe() {
	"$DRIVER" observe "$1" "$UID1" "$2" "$4" >"$3" 2>"$3.err" &
	DRV=$!
	local i
	for i in $(seq 100); do
		[ -e "$4" ] && return 0
		kill -0 $DRV 2>/dev/null || break
		sleep 0.1
	done
	cat "$3" "$3.err" >&2
	fail "the driver's job Target did not start within 10 s"
}

wait_driver() {
	local i
	for i in $(seq 300); do
		kill -0 $DRV 2>/dev/null || break
		sleep 0.1
	done
	kill -0 $DRV 2>/dev/null && { kill -KILL $DRV; fail "the driver did not end within 30 s"; }
	wait $DRV
	local rc=$?
	[ $rc = 77 ] && skip "$(head -1 "$1")"
	[ $rc = 0 ] || { cat "$1.err" >&2; fail "the driver exited $rc"; }
}

# mapped OUT PID WHAT: fails unless 90 % of PID's samples are in a known mapping
mapped() {
	local s u
	s=$(samples "$1" "$2")
	u=$(field "$1" "$2" unmapped)
	[ $((u * 10)) -lt "$s" ] || fail "$3 $2: $u of $s samples in no known mapping (its mappings were not read)"
}
# samples OUT PID: its samples (0 when not seen)
samples() { awk -v p="$2" '$1 == "proc" && $2 == p { print $4; f = 1 } END { if (!f) print 0 }' "$1"; }
field() { awk -v p="$2" -v k="$3" '$1 == "proc" && $2 == p { for (i = 3; i < NF; i += 2) if ($i == k) print $(i + 1) }' "$1"; }

# --- v1 freezer: before, after, forks, and who is not let in
start_in "$V1_STEP" $U1 PMIX_RANK=0 -- "$HOT" 14; BEFORE0=$!; PIDS+=($!)
start_in "$V1_STEP" $U1 PMIX_RANK=1 -- "$HOT" 14; BEFORE1=$!; PIDS+=($!)
start_in "$V1_STEP" root PMIX_RANK=5 -- "$HOT" 14; ROOT=$!; PIDS+=($!)
start_in "$V1_STEP" $U2 PMIX_RANK=6 -- "$HOT" 14; OTHER=$!; PIDS+=($!)
start_out $U1 PMIX_RANK=7 SLURM_JOB_ID=999999 -- "$HOT" 14; OUTSIDE=$!; PIDS+=($!)
wait_for 30 running_own_image $BEFORE0 $BEFORE1 $ROOT $OTHER $OUTSIDE ||
	fail "the v1 processes did not exec $HOT within 30 s"

observe $JOB 6000 "$T/v1.out" "$T/v1.ready"
# started in the cgroup once the Target exists: sh forks two hotspots
start_in "$V1_STEP" $U1 PMIX_RANK=2 -- /bin/sh -c \
	"\"$HOT\" 4 & echo \$! > $T/u1/child1; \"$HOT\" 4 & echo \$! > $T/u1/child2; wait"
LATER=$!; PIDS+=($!)
wait_driver "$T/v1.out"
cat "$T/v1.out"

attached=$(awk '$1 == "attached" { print $2 }' "$T/v1.out")
[ "$attached" = 2 ] || fail "$attached running processes adopted at the start, not 2 (the user's two in the job's cgroup)"
for p in $BEFORE0 $BEFORE1; do
	s=$(samples "$T/v1.out" $p)
	[ "$s" -ge 50 ] || fail "running process $p before the Target: $s samples"
	mapped "$T/v1.out" $p "running process"
	[ "$(field "$T/v1.out" $p exe)" = "$(readlink -f "$HOT")" ] || fail "process $p: exe $(field "$T/v1.out" $p exe)"
done
[ "$(field "$T/v1.out" $BEFORE0 rank)" = 0 ] || fail "rank of $BEFORE0: $(field "$T/v1.out" $BEFORE0 rank), not 0"
[ "$(field "$T/v1.out" $BEFORE1 rank)" = 1 ] || fail "rank of $BEFORE1: $(field "$T/v1.out" $BEFORE1 rank), not 1"
for f in child1 child2; do
	[ -s "$T/u1/$f" ] || fail "the later process did not fork ($f)"
	c=$(cat "$T/u1/$f")
	[ "$(samples "$T/v1.out" "$c")" -ge 20 ] || fail "the later process' fork $c was not sampled"
	mapped "$T/v1.out" "$c" "the later process' fork"
	[ "$(field "$T/v1.out" "$c" rank)" = 2 ] || fail "rank of the fork $c: $(field "$T/v1.out" "$c" rank), not 2"
done
for p in $ROOT $OTHER $OUTSIDE; do
	[ "$(samples "$T/v1.out" $p)" = 0 ] || fail "process $p (root's, another user's or outside the cgroup) was adopted"
done
others=$(awk -v a="$BEFORE0 $BEFORE1 $LATER $(cat "$T/u1/child1" "$T/u1/child2")" \
	'BEGIN { n = split(a, k, " "); for (i = 1; i <= n; i++) ok[k[i]] = 1 } $1 == "proc" && !($2 in ok) && $4 > 0 { print $2 }' "$T/v1.out")
[ -z "$others" ] || fail "processes not of the job sampled: $others"
kill_started
echo "v1 freezer: ok"

# --- an MPI job running before the Target: its ranks' MPI calls are seen
# (the probes attached to the libmpi they map), their ranks from Open MPI
MPI_PROG=$WORKLOADS/mpi/pattern.openmpi
if command -v mpirun.openmpi >/dev/null && [ -x "$MPI_PROG" ]; then
	V1_MPI=$V1_BASE/uid_$UID1/job_$((JOB + 2))/step_0
	mkdir -p "$V1_MPI" || fail "mkdir $V1_MPI"
	# rank 0 computes 3 s, rank 1 6 s, 2000 MPI_Allreduce spread over them
	start_in "$V1_MPI" $U1 HOME="$(getent passwd $U1 | cut -d: -f6)" -- \
		mpirun.openmpi --oversubscribe -n 2 "$MPI_PROG" 3000 2000 >"$T/mpi.log" 2>&1
	PIDS+=($!)
	for i in $(seq 50); do
		[ "$(pgrep -c -f "^$MPI_PROG" 2>/dev/null)" = 2 ] && break
		sleep 0.1
	done
	sleep 0.5 # past MPI_Init
	observe $((JOB + 2)) 2500 "$T/mpi.out" "$T/mpi.ready"
	wait_driver "$T/mpi.out"
	cat "$T/mpi.out"
	for r in 0 1; do
		line=$(awk -v r=$r -v e="$(readlink -f "$MPI_PROG")" '$1 == "proc" && $8 == r && $NF == e' "$T/mpi.out")
		[ -n "$line" ] || fail "MPI rank $r of the running job was not adopted"
		calls=$(echo "$line" | awk '{ print $10 }')
		[ "$calls" -gt 0 ] || fail "MPI rank $r: no MPI call seen (its libmpi was not probed)"
	done
	kill_started
	echo "MPI (Open MPI): ok"
else
	echo "MPI: mpirun.openmpi or $MPI_PROG missing: not tried"
fi

# --- v2 (default hierarchy), when the cgroup2 mount takes children
if mkdir -p "$V2_TASK" 2>/dev/null; then
	start_in "$V2_TASK" $U1 PMIX_RANK=3 -- "$HOT" 10; V2_BEFORE=$!; PIDS+=($!)
	start_in "$V2_TASK" $U2 -- "$HOT" 10; V2_OTHER=$!; PIDS+=($!)
	wait_for 30 running_own_image $V2_BEFORE $V2_OTHER ||
		fail "the v2 processes did not exec $HOT within 30 s"
	observe $((JOB + 1)) 3000 "$T/v2.out" "$T/v2.ready"
	start_in "$V2_TASK" $U1 PMIX_RANK=4 -- "$HOT" 3; V2_LATER=$!; PIDS+=($!)
	wait_driver "$T/v2.out"
	cat "$T/v2.out"
	[ "$(samples "$T/v2.out" $V2_BEFORE)" -ge 20 ] || fail "v2: the running process was not adopted"
	[ "$(field "$T/v2.out" $V2_BEFORE rank)" = 3 ] || fail "v2: rank of the running process"
	[ "$(samples "$T/v2.out" $V2_LATER)" -ge 20 ] || fail "v2: the later process was not adopted"
	mapped "$T/v2.out" $V2_BEFORE "v2: running process"
	mapped "$T/v2.out" $V2_LATER "v2: later process (adopted at an exec, exec'd again at once)"
	[ "$(samples "$T/v2.out" $V2_OTHER)" = 0 ] || fail "v2: another user's process was adopted"
	echo "v2: ok"
else
	echo "v2: the cgroup2 mount at /sys/fs/cgroup/unified takes no child cgroup: not tried"
fi
echo "PASS"
