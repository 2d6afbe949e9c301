# slurm.sh — a real single-node Slurm cluster (munged, slurmctld, slurmd;
# no systemd, nothing in /etc/slurm, /etc/munge or /run/munge) with
# deploy/slurm installed in it, for tests/integration/slurm_*.sh.
#
# What the cluster is (facts measured on Debian 12 + Slurm 22.05, see the
# comments below): one node named after the host (`hostname -s`), its
# configuration, state, logs, munge key and socket in a private directory
# $SLURM_DIR; the SPANK plugin (build/spank_nunatak.so, copied) in its
# plugstack.conf as `optional`; Prolog and Epilog = deploy/slurm/prolog and
# epilog installed into $SLURM_DIR/scripts with NUNATAK= the nunatak under
# test and NUNATAK_SITE_CONFIG= a site configuration the test chose (the
# test's nunatakd's own, so the scripts reach that daemon's socket), each
# called through a harness wrapper that records its environment, its exit
# status and its start and end time in $SLURM_DIR/log/scripts.log.
#
# Sourced by a test (after common.sh, and service.sh when it has one):
#   slurm_init [DIR]       checks what a cluster needs, SKIPPED (exit 77)
#                          with the reason otherwise (root, Slurm and munge
#                          programs, the plugin built, no other Slurm daemon
#                          nor another Slurm's running job on this machine:
#                          one node name, one cgroup tree); sets the paths: $SLURM_DIR
#                          (default $SVC/slurm or $T/slurm),
#                          $SLURM_CONF_FILE, $SLURM_MUNGE_SOCKET, $SLURM_NODE;
#                          sets SVC_LOCAL_NODE=$SLURM_NODE (a job's nodes are
#                          Slurm's node names: nunatakd must be named so)
#   slurm_service_lines    the [service] lines for nunatakd / the Aggregator:
#                          munge_socket and slurm_conf of this cluster
#   slurm_need_cli CMD...  SKIPPED unless `nunatak CMD --help` works
#   slurm_step_pids JOB STEP   the pids of a step (scontrol listpids)
#   slurm_start [SITE]     writes the configuration, starts munged, slurmctld,
#                          slurmd, waits (bounded) until the node is idle;
#                          SITE: the NUNATAK_SITE_CONFIG given to the scripts.
#                          Exports SLURM_CONF. From then on everything it
#                          started is stopped at exit, whatever happens
#                          (also at SIGTERM/SIGINT; jobs cancelled first:
#                          their Epilogs run while the test's nunatakd
#                          still does).
#   slurm_start_nunatakd CMD...   slurm_init, slurm_need_cli CMD..., the
#                          test's nunatakd with this cluster's [service]
#                          lines (service.sh's svc_nunatakd_local) and
#                          slurm_start with its site file: what a test of
#                          a job profiled through nunatakd starts with
#   slurm_cpu_of PID...    the CPU time (s, utime + stime from /proc) of
#                          the pids so far, gone ones not counted
#   slurm_stop             the same, at once
#   slurm_install_scripts SITE [BIN]   deploy's scripts installed again for
#                          the next jobs, naming BIN (a stand-in) instead
#   slurm_user NAME        a user for jobs (useradd -m when missing; left in
#                          place afterwards, as the machine's other tests
#                          expect); sets SLURM_USER_UID / SLURM_USER_HOME
#   slurm_as USER CMD...   CMD as USER with a clean environment (PATH, HOME,
#                          USER, SLURM_CONF)
#   slurm_workdir USER     a fresh job working directory of USER under $T
#   slurm_sbatch USER WORKDIR [VAR=VALUE...] ARGS...   the job id of
#                          `sbatch --parsable -D WORKDIR -o WORKDIR/slurm-%j.out`
#                          as USER, VAR=VALUE in its environment
#   slurm_wait_gone JOB S  until JOB has left squeue (COMPLETING included)
#   slurm_wait_running JOB S
#   slurm_job_state JOB    RUNNING, COMPLETED, FAILED ... ("" when unknown)
#   slurm_node_state       `sinfo` of the node: idle, alloc, drain ...
#   slurm_wait_idle S      until the node is idle again (1 at once when drained)
#   slurm_script_line KIND JOB   the harness's line for the Prolog or Epilog
#                          of JOB ("prolog job=J rc=N start=S end=E ...")
#
# As a program, for trying things by hand (root):
#   bash tests/lib/slurm.sh start DIR [--nunatak BIN] [--plugin SO] [--site-config FILE]
#   bash tests/lib/slurm.sh stop DIR
#   bash tests/lib/slurm.sh status DIR
# then `export SLURM_CONF=DIR/etc/slurm.conf`. Ports: SLURM_CTLD_PORT and
# SLURM_SLURMD_PORT (default: free ones). SLURM_PROCTRACK=cgroup|linuxproc
# (default cgroup where the v1 freezer hierarchy exists).
#
# Nothing is found or killed by name: the daemons' pids are the ones this
# file started (recorded in $SLURM_DIR/run); the job processes stopped at
# the end are those whose environment names this cluster's SLURM_CONF.

SLURM_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SLURM_DIR=
SLURM_CONF_FILE=
SLURM_MUNGE_SOCKET=
SLURM_NODE=
SLURM_STARTED=0
SLURM_USER_UID=
SLURM_USER_HOME=
SLURM_START_TIMEOUT=${SLURM_START_TIMEOUT:-60}

# standalone use: the few helpers of common.sh
if ! declare -F fail >/dev/null; then
	fail() {
		echo "FAIL: $*" >&2
		exit 1
	}
	skip() {
		echo "SKIPPED: $*"
		exit 77
	}
fi

# munged: tests/lib/munged.sh (munged_start DIR, munged_stop DIR)
. "$SLURM_SRC/tests/lib/munged.sh"

slurm_log() { printf '[slurm %(%T)T] %s\n' -1 "$*" >&2; }

# a daemon of this machine that is not ours (another test cluster, or the
# machine's own Slurm): one slurmd per machine (node name, cgroup paths)
slurm_foreign_daemon() {
	local p exe mine=" $(cat "$SLURM_DIR"/run/*.pid.started 2>/dev/null | tr '\n' ' ') "
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		case $exe in
		*/slurmd | */slurmd-* | */slurmctld | */slurmctld-*) # Debian: slurmd -> slurmd-wlm
			case $mine in *" ${p#/proc/} "*) continue ;; esac
			echo "$exe (pid ${p#/proc/})"
			return 0
			;;
		esac
	done
	return 1
}

slurm_paths() {
	SLURM_DIR=$(realpath -m "$1")
	SLURM_CONF_FILE=$SLURM_DIR/etc/slurm.conf
	SLURM_MUNGE_SOCKET=$SLURM_DIR/munge/munge.socket.2
	SLURM_NODE=$(hostname -s)
}

# why a cluster cannot start here (one line), or nothing
slurm_missing() {
	local c why
	[ "$(id -u)" = 0 ] || { echo "a Slurm cluster needs root"; return; }
	for c in slurmctld slurmd; do
		[ -x "/usr/sbin/$c" ] || { echo "/usr/sbin/$c missing (Debian packages slurmctld slurmd)"; return; }
	done
	for c in sinfo squeue sbatch srun scontrol scancel; do
		command -v "$c" >/dev/null || { echo "$c missing (Debian package slurm-client)"; return; }
	done
	for c in setpriv setsid timeout python3 useradd; do
		command -v "$c" >/dev/null || { echo "$c missing"; return; }
	done
	for c in munged munge unmunge; do
		command -v "$c" >/dev/null || [ -x "/usr/sbin/$c" ] || { echo "$c missing (Debian package munge)"; return; }
	done
	id munge >/dev/null 2>&1 || { echo "no user 'munge' (Debian package munge)"; return; }
	[ -f "$SLURM_PLUGIN" ] || { echo "the SPANK plugin $SLURM_PLUGIN is not built (make build)"; return; }
	[ -x "$SLURM_SRC/deploy/slurm/prolog" ] && [ -x "$SLURM_SRC/deploy/slurm/epilog" ] ||
		{ echo "deploy/slurm/prolog or epilog missing in $SLURM_SRC"; return; }
	why=$(slurm_foreign_daemon) && { echo "another Slurm daemon runs on this machine: $why (one slurmd per machine)"; return; }
	# jobs of another cluster still in their cgroups (their slurmd gone)
	why=$(find /sys/fs/cgroup/*/slurm_"$(hostname -s)" -path '*/job_*' -name cgroup.procs -exec grep -l . {} + 2>/dev/null | head -1)
	[ -z "$why" ] || { echo "another Slurm's job runs on this machine (${why%/cgroup.procs})"; return; }
}

slurm_init() {
	local why
	SLURM_PLUGIN=${SLURM_PLUGIN:-$(dirname "$NUNATAK")/spank_nunatak.so}
	slurm_paths "${1:-${SVC:-$T}/slurm}"
	why=$(slurm_missing)
	[ -z "$why" ] || skip "$why"
	SVC_LOCAL_NODE=$SLURM_NODE
}

# slurm_need_cli CMD...: SKIPPED unless the nunatak under test has these
# commands (a tree where the Slurm commands have not landed yet)
slurm_need_cli() {
	local c
	for c in "$@"; do
		"$NUNATAK" "$c" --help >/dev/null 2>&1 || skip "nunatak has no '$c' command yet ($NUNATAK $c --help fails)"
	done
}

# the job's processes of step STEP (0, batch ...) on this node, by Slurm
slurm_step_pids() {
	timeout 10 scontrol listpids "$1" 2>/dev/null | awk -v s="$2" '$3 == s && $1 > 0 {print $1}'
}

slurm_service_lines() {
	printf '%s\n' "munge_socket = \"$SLURM_MUNGE_SOCKET\"" "slurm_conf = \"$SLURM_CONF_FILE\""
}

# slurm_start_nunatakd CMD...: see the head of this file (needs service.sh)
slurm_start_nunatakd() {
	local lines
	slurm_init
	slurm_need_cli "$@"
	mapfile -t lines < <(slurm_service_lines)
	svc_nunatakd_local "${lines[@]}"
	slurm_start "${SVC_NODE_CONFIG[0]}"
}

slurm_cpu_of() {
	python3 - "$@" <<'PY'
import os, sys
hz, t = os.sysconf("SC_CLK_TCK"), 0
for p in sys.argv[1:]:
    try:
        f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        t += (int(f[11]) + int(f[12])) / hz
    except OSError:
        pass
print(f"{t:.3f}")
PY
}

slurm_free_port() {
	python3 - "${1:-0-0}" <<'PY'
import random, socket, sys
lo, hi = map(int, sys.argv[1].split("-"))
for port in ([0] if lo == 0 else random.sample(range(lo, hi + 1), hi - lo + 1)):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        print(s.getsockname()[1])
        sys.exit(0)
    except OSError:
        pass
    finally:
        s.close()
sys.exit(1)
PY
}

# deploy/slurm/KIND installed as the site would, with the nunatak under
# test, then the harness wrapper slurmd runs (it records, then exits with
# the script's own status: a non-zero one drains the node, as it would)
slurm_install_script() {
	local kind=$1 site=$2 bin=${3:-$NUNATAK}
	sed -e "s|^NUNATAK=.*|NUNATAK=$bin|" -e "s|^NUNATAK_SITE_CONFIG=.*|NUNATAK_SITE_CONFIG=$site|" \
		-e "s|^NUNATAK_SLURM_LOG=.*|NUNATAK_SLURM_LOG=$SLURM_DIR/log/nunatak.log|" \
		"$SLURM_SRC/deploy/slurm/$kind" >"$SLURM_DIR/scripts/nunatak-$kind" || return 1
	cat >"$SLURM_DIR/scripts/$kind" <<EOF
#!/bin/sh
# harness wrapper (tests/lib/slurm.sh): the environment, exit status and
# times of deploy/slurm/$kind
PATH=/usr/sbin:/usr/bin:/sbin:/bin
env | sort >"$SLURM_DIR/log/$kind-env.\${SLURM_JOB_ID:-none}"
start=\$(date +%s.%N)
"$SLURM_DIR/scripts/nunatak-$kind"
rc=\$?
end=\$(date +%s.%N)
echo "$kind job=\${SLURM_JOB_ID:-} rc=\$rc start=\$start end=\$end spank_nunatak=\${SPANK_NUNATAK:-} spank_profile=\${SPANK_NUNATAK_PROFILE:-}" >>"$SLURM_DIR/log/scripts.log"
exit \$rc
EOF
	chmod 0755 "$SLURM_DIR/scripts/$kind" "$SLURM_DIR/scripts/nunatak-$kind"
}

# slurm_install_scripts SITE [BIN]: (again) deploy's Prolog and Epilog, for
# the next jobs, naming BIN instead of $NUNATAK (a test's stand-in)
slurm_install_scripts() {
	slurm_install_script prolog "$1" "${2:-}" && slurm_install_script epilog "$1" "${2:-}"
}

slurm_write_config() {
	local site=$1 ctld_port slurmd_port hw proctrack first_job
	ctld_port=${SLURM_CTLD_PORT:-$(slurm_free_port)} || return 1
	slurmd_port=${SLURM_SLURMD_PORT:-$(slurm_free_port)} || return 1
	proctrack=${SLURM_PROCTRACK:-}
	first_job=$((1000 + RANDOM * 8))
	if [ -z "$proctrack" ]; then
		if [ -d /sys/fs/cgroup/freezer ]; then proctrack=cgroup; else proctrack=linuxproc; fi
	fi
	# the node as slurmd sees it: a node configured with more is refused
	hw=$(/usr/sbin/slurmd -C 2>/dev/null | head -1 | sed -e 's/^NodeName=[^ ]* //')
	[ -n "$hw" ] || { slurm_log "slurmd -C said nothing"; return 1; }
	# job users read the configuration and write next to nothing here
	mkdir -p -m 0755 "$SLURM_DIR/etc" "$SLURM_DIR/scripts" "$SLURM_DIR/lib" "$SLURM_DIR/state" "$SLURM_DIR/run" ||
		return 1
	mkdir -p -m 0700 "$SLURM_DIR/state/slurmctld" && mkdir -p -m 0755 "$SLURM_DIR/state/slurmd" &&
		mkdir -p -m 0755 "$SLURM_DIR/log" || return 1
	cp "$SLURM_PLUGIN" "$SLURM_DIR/lib/spank_nunatak.so" && chmod 0755 "$SLURM_DIR/lib/spank_nunatak.so" || return 1
	slurm_install_scripts "$site" || return 1
	cat >"$SLURM_CONF_FILE" <<EOF
# tests/lib/slurm.sh: a single-node test cluster, everything under $SLURM_DIR
ClusterName=nunatak-test
SlurmctldHost=$SLURM_NODE(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SLURM_MUNGE_SOCKET
StateSaveLocation=$SLURM_DIR/state/slurmctld
SlurmdSpoolDir=$SLURM_DIR/state/slurmd
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/$proctrack
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
# a batch job starts within ~1 s, not up to 3 s
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
# deploy/slurm's lines (README.md there)
PrologFlags=Alloc
Prolog=$SLURM_DIR/scripts/prolog
Epilog=$SLURM_DIR/scripts/epilog
# a site's bound: a script over it drains the node (the tests look)
PrologEpilogTimeout=${SLURM_PROLOG_EPILOG_TIMEOUT:-60}
PlugStackConfig=$SLURM_DIR/etc/plugstack.conf
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
# ended jobs stay known to slurmctld for 5 min (the Aggregator asks it)
MinJobAge=300
# job ids (and so cgroup and BPF job names) unlike another cluster's
FirstJobId=$first_job
KillWait=5
Waittime=0
NodeName=$SLURM_NODE NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
	cat >"$SLURM_DIR/etc/cgroup.conf" <<EOF
CgroupPlugin=autodetect
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=yes
ConstrainRAMSpace=no
ConstrainDevices=no
EOF
	echo "optional $SLURM_DIR/lib/spank_nunatak.so" >"$SLURM_DIR/etc/plugstack.conf"
	chmod 0644 "$SLURM_DIR"/etc/*
	: >"$SLURM_DIR/log/scripts.log"
	echo "export SLURM_CONF=$SLURM_CONF_FILE" >"$SLURM_DIR/env.sh"
}

# slurm_daemon NAME CMD...: detached, stdio to its log, its own pid recorded
# (setsid does not fork: a background child is no process-group leader)
slurm_daemon() {
	local name=$1
	shift
	setsid "$@" </dev/null >>"$SLURM_DIR/log/$name.out" 2>&1 &
	echo $! >"$SLURM_DIR/run/$name.pid.started"
}

slurm_pid() { cat "$SLURM_DIR/run/$1.pid.started" 2>/dev/null; }

# slurm_wait_until NAME S CMD...: CMD succeeds within S seconds, while the
# daemon NAME lives
slurm_wait_until() {
	local name=$1 s=$2 i pid
	shift 2
	pid=$(slurm_pid "$name")
	for i in $(seq 1 $((s * 5))); do
		"$@" >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || {
			slurm_log "$name (pid $pid) died: $(tail -5 "$SLURM_DIR/log/$name.log" "$SLURM_DIR/log/$name.out" 2>/dev/null)"
			return 1
		}
		sleep 0.2
	done
	slurm_log "$name not ready after $s s: $(tail -5 "$SLURM_DIR/log/$name.log" 2>/dev/null)"
	return 1
}

slurm_ctld_up() { timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; }
slurm_node_state() { timeout 10 sinfo -h -n "$SLURM_NODE" -o %t 2>/dev/null; }
slurm_node_idle() { [ "$(slurm_node_state)" = idle ]; }

# slurm_boot SITE: 0 once the node is idle; 1 with the reason logged
slurm_boot() {
	local site=$1 p
	for p in slurmctld slurmd; do
		kill -0 "$(slurm_pid $p)" 2>/dev/null && { slurm_log "$p of $SLURM_DIR runs already (pid $(slurm_pid $p))"; return 1; }
	done
	munged_alive "$SLURM_DIR/munge" && { slurm_log "the munged of $SLURM_DIR runs already"; return 1; }
	# DIR's sub-directories are replaced: it must be new, empty or ours
	if [ -d "$SLURM_DIR" ] && [ -n "$(ls -A "$SLURM_DIR")" ] && [ ! -e "$SLURM_DIR/.nunatak-test-slurm" ]; then
		slurm_log "$SLURM_DIR is not empty and was not made by tests/lib/slurm.sh: choose another"
		return 1
	fi
	mkdir -p -m 0755 "$SLURM_DIR" && chmod 0755 "$SLURM_DIR" && touch "$SLURM_DIR/.nunatak-test-slurm" || return 1
	rm -rf "${SLURM_DIR:?}/etc" "$SLURM_DIR/state" "$SLURM_DIR/run" "$SLURM_DIR/log" "$SLURM_DIR/munge" "$SLURM_DIR/scripts"
	SLURM_STARTED=1
	slurm_write_config "$site" || return 1
	export SLURM_CONF=$SLURM_CONF_FILE
	munged_start "$SLURM_DIR/munge" || { slurm_log "munged did not start"; return 1; }
	[ "$MUNGED_SOCKET" = "$SLURM_MUNGE_SOCKET" ] ||
		{ slurm_log "munged's socket is $MUNGED_SOCKET, expected $SLURM_MUNGE_SOCKET"; return 1; }
	slurm_daemon slurmctld /usr/sbin/slurmctld -D -f "$SLURM_CONF_FILE"
	slurm_wait_until slurmctld "$SLURM_START_TIMEOUT" slurm_ctld_up || return 1
	slurm_daemon slurmd /usr/sbin/slurmd -D -f "$SLURM_CONF_FILE" -N "$SLURM_NODE"
	slurm_wait_until slurmd "$SLURM_START_TIMEOUT" slurm_node_idle || return 1
}

slurm_start() {
	local t0=$EPOCHREALTIME
	[ -n "$SLURM_DIR" ] || fail "harness: slurm_init first"
	trap 'slurm_on_exit' EXIT
	# a test stopped by a signal (tests/run.sh's timeout) still stops its
	# cluster: exit runs the EXIT trap
	trap 'exit 143' TERM
	trap 'exit 130' INT
	slurm_boot "${1:-}" || fail "the test Slurm cluster did not start (logs in $SLURM_DIR/log)"
	slurm_log "cluster up in $(python3 -c "print(f'{$EPOCHREALTIME - $t0:.1f}')") s: node $SLURM_NODE idle, SLURM_CONF=$SLURM_CONF_FILE"
}

# at exit: the cluster stopped, then the service harness's own cleanup (or
# common.sh's), with the test's exit status
slurm_on_exit() {
	local rc=$? f
	trap - EXIT
	if [ "$rc" != 0 ] && [ "$rc" != 77 ] && [ -n "$SLURM_DIR" ]; then
		for f in slurmctld.log slurmd.log scripts.log nunatak.log; do
			[ -s "$SLURM_DIR/log/$f" ] || continue
			echo "---- $SLURM_DIR/log/$f (last 25 lines)" >&2
			tail -25 "$SLURM_DIR/log/$f" >&2
		done
	fi
	slurm_stop
	if declare -F svc_cleanup >/dev/null; then
		(exit "$rc")
		svc_cleanup
	fi
	[ -n "${T:-}" ] && [ -z "${SVC_KEEP:-}" ] && rm -rf "$T"
	exit "$rc"
}

# kill the recorded daemons NAME..., SIGTERM then (after 15 s) SIGKILL
slurm_kill_daemons() {
	local name pid i left pids=()
	for name in "$@"; do
		pid=$(slurm_pid "$name")
		[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
	done
	for i in $(seq 1 75); do
		left=0
		for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
		[ "$left" = 0 ] && break
		sleep 0.2
	done
	for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
	for name in "$@"; do rm -f "$SLURM_DIR/run/$name.pid.started"; done
}

# job processes of this cluster left running (none expected after scancel):
# their environment names this cluster's slurm.conf
slurm_kill_strays() {
	local p env
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = "$$" ] && continue
		env=$( { tr '\0' '\n' <"$p/environ"; } 2>/dev/null) || continue
		grep -qxF "SLURM_CONF=$SLURM_CONF_FILE" <<<"$env" || continue
		grep -q '^SLURM_JOB_ID=' <<<"$env" || continue
		slurm_log "job process ${p#/proc/} of this cluster still runs: killed"
		kill -KILL "${p#/proc/}" 2>/dev/null
	done
}

slurm_stop() {
	local ids i
	[ -n "$SLURM_DIR" ] && [ -d "$SLURM_DIR/run" ] || return 0
	export SLURM_CONF=$SLURM_CONF_FILE
	if kill -0 "$(slurm_pid slurmctld)" 2>/dev/null; then
		# every job ends (its Epilog runs, slurmstepd exits): at most 30 s
		ids=$(timeout 10 squeue -h -o %A 2>/dev/null)
		if [ -n "$ids" ]; then
			# shellcheck disable=SC2086
			timeout 10 scancel $ids 2>/dev/null
			for i in $(seq 1 150); do
				[ -z "$(timeout 10 squeue -h -o %A 2>/dev/null)" ] && break
				sleep 0.2
			done
		fi
	fi
	slurm_kill_daemons slurmd slurmctld
	munged_stop "$SLURM_DIR/munge"
	slurm_kill_strays
	# Slurm leaves its empty top cgroups behind; rmdir takes empty ones only
	find /sys/fs/cgroup/*/slurm_"$SLURM_NODE" -depth -type d -exec rmdir {} \; 2>/dev/null
	SLURM_STARTED=0
	return 0
}

slurm_user() {
	local name=$1
	id "$name" >/dev/null 2>&1 || useradd -m -s /bin/bash "$name" || fail "useradd $name"
	SLURM_USER_UID=$(id -u "$name")
	SLURM_USER_HOME=$(getent passwd "$name" | cut -d: -f6)
}

slurm_as() {
	local user=$1 home
	shift
	home=$(getent passwd "$user" | cut -d: -f6)
	setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups -- \
		env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" USER="$user" LOGNAME="$user" \
		LANG=C SLURM_CONF="$SLURM_CONF_FILE" "$@"
}

# a fresh job working directory of USER (0755: the test reads the Run)
slurm_workdir() {
	local user=$1 d
	d=$(mktemp -d "$T/work-$user.XXXXXX") || fail "mktemp"
	chown "$user:$(id -g "$user")" "$d" && chmod 0755 "$d" || fail "chown $d"
	echo "$d"
}

slurm_sbatch() {
	local user=$1 dir=$2 out envs=()
	shift 2
	while [ $# -gt 0 ] && [[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do
		envs+=("$1")
		shift
	done
	out=$(cd "$dir" && slurm_as "$user" env "${envs[@]}" sbatch --parsable -D "$dir" -o "$dir/slurm-%j.out" "$@" 2>"$dir/sbatch.err") ||
		fail "sbatch as $user: $(cat "$dir/sbatch.err")"
	out=${out%%;*}
	case $out in '' | *[!0-9]*) fail "sbatch printed no job id: $out $(cat "$dir/sbatch.err")" ;; esac
	echo "$out"
}

slurm_wait_gone() {
	local job=$1 s=$2 i
	for i in $(seq 1 $((s * 5))); do
		[ -z "$(timeout 10 squeue -h -j "$job" 2>/dev/null)" ] && return 0
		sleep 0.2
	done
	return 1
}

slurm_job_state() {
	timeout 10 scontrol show job -o "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

slurm_wait_running() {
	local job=$1 s=$2 i
	for i in $(seq 1 $((s * 5))); do
		[ "$(slurm_job_state "$job")" = RUNNING ] && return 0
		sleep 0.2
	done
	return 1
}

# slurm_wait_idle S: the node back to idle within S seconds (a job that
# just ended leaves it "completing" for a moment); 1 when not (drained...)
slurm_wait_idle() {
	local s=$1 i
	for i in $(seq 1 $((s * 5))); do
		case $(slurm_node_state) in
		idle) return 0 ;;
		drain* | drng | down* | fail*) return 1 ;;
		esac
		sleep 0.2
	done
	return 1
}

slurm_script_line() {
	grep "^$1 job=$2 " "$SLURM_DIR/log/scripts.log" | tail -1
}

# as a program: start | stop | status DIR
slurm_main() {
	local action=${1:-} dir=${2:-} site=
	[ -n "$action" ] && [ -n "$dir" ] || {
		echo "usage: bash tests/lib/slurm.sh start|stop|status DIR [--nunatak BIN] [--plugin SO] [--site-config FILE]" >&2
		exit 2
	}
	shift 2
	NUNATAK=${NUNATAK:-$SLURM_SRC/build/nunatak}
	while [ $# -gt 0 ]; do
		case $1 in
		--nunatak) NUNATAK=$(realpath "$2"); shift 2 ;;
		--plugin) SLURM_PLUGIN=$(realpath "$2"); shift 2 ;;
		--site-config) site=$2; shift 2 ;;
		*) echo "slurm.sh: unknown argument '$1'" >&2; exit 2 ;;
		esac
	done
	SLURM_PLUGIN=${SLURM_PLUGIN:-$(dirname "$NUNATAK")/spank_nunatak.so}
	slurm_paths "$dir"
	case $action in
	start)
		why=$(slurm_missing)
		[ -z "$why" ] || { echo "cannot start: $why" >&2; exit 1; }
		if ! slurm_boot "$site"; then
			slurm_stop
			exit 1
		fi
		sinfo
		echo "up: export SLURM_CONF=$SLURM_CONF_FILE   (munge socket $SLURM_MUNGE_SOCKET; stop: bash $0 stop $SLURM_DIR)"
		;;
	stop) slurm_stop ;;
	status)
		if munged_alive "$SLURM_DIR/munge"; then echo "munged: pid $(cat "$SLURM_DIR/munge/munged.pid.started")"; else echo "munged: not running"; fi
		for p in slurmctld slurmd; do
			if kill -0 "$(slurm_pid $p)" 2>/dev/null; then echo "$p: pid $(slurm_pid $p)"; else echo "$p: not running"; fi
		done
		kill -0 "$(slurm_pid slurmctld)" 2>/dev/null && SLURM_CONF=$SLURM_CONF_FILE sinfo
		;;
	*) echo "slurm.sh: unknown action '$action'" >&2; exit 2 ;;
	esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	slurm_main "$@"
fi
