# service.sh — the daemons of the service, started for real, for the
# integration tests tests/integration/service_*.sh. Sourced after common.sh.
#
#   svc_init [netns] [user] [aggregator-only | local]
#       checks what the test needs (SKIPPED, exit 77, with the reason when
#       something is missing: the binaries, root and BPF, ip netns, useradd,
#       python3 with pyzmq; "local": no nunatak-aggregator needed, nunatakd is
#       its own; "aggregator-only": no nunatakd needed) and creates the service directory $SVC. Every
#       daemon, namespace, veth, user and directory made through this file is
#       removed at exit, whatever the test's outcome; when the test failed the
#       daemons' logs are printed first.
#   svc_keygen NAME                   $SVC/etc/keys/NAME.{key,pub}
#   svc_free_port ADDR                a TCP port free on ADDR
#   svc_aggregator_start [LINE...]    nunatak-aggregator on $SVC_AGG_ENDPOINT
#                                     (tcp, CURVE, allow-list), extra [service]
#                                     lines appended; waits until it answers
#   svc_aggregator_kill [SIG]         default KILL; waits for its end
#   svc_aggregator2_start             a second one; nodes then list both
#   svc_nodes N                       N namespaces (netns.sh), keys for each
#   svc_nunatakd_start I [LINE...]    a nunatakd in node I reporting to the
#                                     aggregator; its control socket is
#                                     ${SVC_SOCK[I]}; waits until it listens
#   svc_nunatakd_local [LINE...]      a nunatakd in the root namespace that is
#                                     its own Aggregator (no [service].aggregators)
#   svc_nunatakd_kill I [SIG]
#   svc_in_node I CMD...              CMD in node I, NUNATAK_AGENT_SOCKET set to
#                                     that node's daemon
#   svc_agg_status                    the aggregator's STATUS json on stdout
#   svc_wait_agents N [S]             until the aggregator knows N Agents
#   svc_user_create                   a throwaway unprivileged user $SVC_USER
#                                     (uid $SVC_UID) with a home $SVC_HOME
#   svc_as_user CMD...                CMD as that user (setpriv, no groups)
#   svc_track PID                     a process of the test killed at exit
#
# The configuration files and keys are root's, 0600, in the 0700 directory
# $SVC/etc, as the daemons' trust rules require of /etc/nunatak.toml.
# SVC_KEEP=1 keeps $SVC and $T at exit (to read a failed test's Runs).
. "$TESTS_LIB/netns.sh"

NUNATAKD=${NUNATAKD:-$(dirname "$NUNATAK")/nunatakd}
NUNATAK_AGGREGATOR=${NUNATAK_AGGREGATOR:-$(dirname "$NUNATAK")/nunatak-aggregator}
SVC=
SVC_PY=
SVC_WIRE="$TESTS_LIB/nunatak_wire.py"
SVC_AGG_PID=
SVC_AGG_ENDPOINT=
SVC_AGG_CONFIG=
SVC_AGG_LOG=
SVC_AGG2_PID=
SVC_AGG2_ENDPOINT=
SVC_AGG_ENDPOINTS=
SVC_USER=
SVC_UID=
SVC_HOME=
SVC_NODES=0
declare -a SVC_PID SVC_SOCK SVC_NODE SVC_NODE_CONFIG SVC_NODE_LOG SVC_NODE_SPOOL
SVC_TRACKED=()
SVC_LOGS=()

# the first python3 that has pyzmq (Debian's /usr/bin/python3 with
# python3-zmq; a python3 earlier in PATH may not see it)
svc_find_python() {
	local p
	for p in /usr/bin/python3 "$(command -v python3)"; do
		[ -x "$p" ] && "$p" -c 'import zmq' 2>/dev/null && { echo "$p"; return 0; }
	done
	return 1
}

svc_init() {
	local want why
	[ "$(id -u)" = 0 ] || skip "the service tests need root (daemons, namespaces, users)"
	case " $* " in
	*" aggregator-only "*) ;;
	*) [ -x "$NUNATAKD" ] || skip "nunatakd not built ($NUNATAKD)" ;;
	esac
	case " $* " in
	*" local "*) ;;
	*) [ -x "$NUNATAK_AGGREGATOR" ] || skip "nunatak-aggregator not built ($NUNATAK_AGGREGATOR)" ;;
	esac
	[ -r /sys/kernel/btf/vmlinux ] || skip "kernel without BTF (/sys/kernel/btf/vmlinux)"
	command -v setpriv >/dev/null || skip "setpriv (util-linux) missing"
	SVC_PY=$(svc_find_python) || skip "python3 with pyzmq missing (Debian: apt-get install python3-zmq)"
	for want in "$@"; do
		case $want in
		netns) why=$(netns_supported) || skip "$why" ;;
		user) command -v useradd >/dev/null && command -v userdel >/dev/null ||
			skip "useradd/userdel (passwd) missing" ;;
		aggregator-only | local) ;;
		esac
	done
	SVC=$(mktemp -d /tmp/nunatak-svc.XXXXXX) || fail "mktemp"
	chmod 0755 "$SVC"
	mkdir -m 0700 "$SVC/etc" "$SVC/etc/keys" "$SVC/etc/agents" "$SVC/state" "$SVC/log"
	mkdir -m 0755 "$SVC/bin" "$SVC/run"
	mkdir -m 0700 "$SVC/runs"
	trap 'svc_cleanup' EXIT
}

# a log printed when the test fails (once, however often its daemon starts)
svc_log() {
	local f
	for f in "${SVC_LOGS[@]}"; do [ "$f" = "$1" ] && return 0; done
	SVC_LOGS+=("$1")
}

svc_track() {
	SVC_TRACKED+=("$1")
	disown "$1" 2>/dev/null # killed at exit without a "Killed" line
}

# kill PID with SIG, then wait for it up to S seconds (then SIGKILL)
svc_stop_pid() {
	local pid=$1 sig=${2:-TERM} s=${3:-10} i
	[ -n "$pid" ] || return 0
	kill -"$sig" "$pid" 2>/dev/null || return 0
	for i in $(seq 1 $((s * 10))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

svc_cleanup() {
	local rc=$? i p f
	trap - EXIT
	if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
		for f in "${SVC_LOGS[@]}"; do
			[ -s "$f" ] || continue
			echo "---- $f (last 40 lines)" >&2
			tail -40 "$f" >&2
		done
	fi
	for p in "${SVC_TRACKED[@]}"; do
		pkill -KILL -P "$p" 2>/dev/null # a svc_bg_run subshell's command
		kill -KILL "$p" 2>/dev/null
	done
	for i in "${!SVC_PID[@]}"; do
		svc_stop_pid "${SVC_PID[i]}" TERM 10
	done
	svc_stop_pid "$SVC_AGG_PID" TERM 10
	svc_stop_pid "${SVC_AGG2_PID:-}" TERM 10
	netns_teardown
	if [ -n "$SVC_USER" ]; then
		for p in $(pgrep -u "$SVC_UID" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
		sleep 0.2
		userdel "$SVC_USER" 2>/dev/null || userdel -f "$SVC_USER" 2>/dev/null
	fi
	if [ -n "${SVC_KEEP:-}" ]; then # debugging: the service directory and $T stay
		echo "kept: $SVC $T" >&2
	else
		[ -n "$SVC" ] && rm -rf "$SVC"
		rm -rf "$T"
	fi
	exit "$rc"
}

svc_py() {
	"$SVC_PY" "$@"
}

svc_keygen() {
	local name=$1 out
	[ -f "$SVC/etc/keys/$name.key" ] && return 0
	# the product's own tool first; the Z85 keys of libzmq otherwise
	if ! out=$("$NUNATAK" keygen "$SVC/etc/keys" "$name" 2>&1); then
		svc_py "$SVC_WIRE" keygen "$SVC/etc/keys" "$name" ||
			fail "no CURVE key for $name: nunatak keygen said: $out"
	fi
	chmod 0600 "$SVC/etc/keys/$name.key"
	[ -s "$SVC/etc/keys/$name.pub" ] || fail "keygen wrote no $name.pub"
}

# an agent key the aggregator accepts
svc_allow() {
	svc_keygen "$1"
	cp "$SVC/etc/keys/$1.pub" "$SVC/etc/agents/$1.pub"
	chmod 0644 "$SVC/etc/agents/$1.pub"
}

# svc_free_port ADDR: a port nobody listens on at ADDR (SVC_PORTS=LO-HI
# confines the choice, e.g. to a range reserved for one session)
svc_free_port() {
	svc_py - "${1:-127.0.0.1}" "${SVC_PORTS:-0-0}" <<'PY'
import random, socket, sys
addr, (lo, hi) = sys.argv[1], map(int, sys.argv[2].split("-"))
cands = [0] if lo == 0 else random.sample(range(lo, hi + 1), hi - lo + 1)
for port in cands:
    s = socket.socket()
    try:
        s.bind((addr, port))
        print(s.getsockname()[1])
        sys.exit(0)
    except OSError:
        pass
    finally:
        s.close()
sys.exit(1)
PY
}

# write FILE (0600, root) from stdin
svc_write_config() {
	(umask 077 && cat >"$1") && chmod 0600 "$1"
}

svc_aggregator_config() {
	local line
	{
		echo "[service]"
		echo "listen = \"$SVC_AGG_ENDPOINT\""
		echo "secret_key = \"$SVC/etc/keys/aggregator.key\""
		echo "allowed_agents = \"$SVC/etc/agents\""
		echo "state_dir = \"$SVC/state\""
		for line in "$@"; do echo "$line"; done
	} | svc_write_config "$SVC_AGG_CONFIG"
}

# answers a STATUS within 1 s (1) or not (0)
svc_agg_answers() {
	svc_agg_status --timeout 1 >/dev/null 2>&1
}

svc_agg_status() {
	svc_py "$SVC_WIRE" status "$SVC_AGG_ENDPOINT" --key "$SVC/etc/keys/tester.key" \
		--server-key "$SVC/etc/keys/aggregator.pub" "$@"
}

svc_aggregator_start() {
	local addr=${NETNS_HOST_IP:-127.0.0.1} port i
	svc_keygen aggregator
	svc_allow tester
	if [ -z "$SVC_AGG_ENDPOINT" ]; then
		port=$(svc_free_port "$addr") || fail "no free port on $addr"
		SVC_AGG_ENDPOINT="tcp://$addr:$port"
	fi
	SVC_AGG_CONFIG="$SVC/etc/aggregator.toml"
	SVC_AGG_LOG="$SVC/log/aggregator.log"
	svc_log "$SVC_AGG_LOG"
	[ -f "$SVC_AGG_CONFIG" ] && [ $# = 0 ] || svc_aggregator_config "$@"
	echo "==== start $(date +%T.%N)" >>"$SVC_AGG_LOG"
	# the tests profile as root too: root's Runs from the nodes' Agents are
	# refused unless allowed (SVC_AGG_ARGS="" tests the default)
	"$NUNATAK_AGGREGATOR" --config "$SVC_AGG_CONFIG" ${SVC_AGG_ARGS---allow-root-runs} >>"$SVC_AGG_LOG" 2>&1 &
	SVC_AGG_PID=$!
	for i in $(seq 1 100); do
		kill -0 "$SVC_AGG_PID" 2>/dev/null || fail "nunatak-aggregator exited at start: $(tail -5 "$SVC_AGG_LOG")"
		svc_agg_answers && return 0
		sleep 0.1
	done
	fail "nunatak-aggregator does not answer STATUS on $SVC_AGG_ENDPOINT after 10 s: $(tail -5 "$SVC_AGG_LOG")"
}

# svc_aggregator2_start: a second nunatak-aggregator (same keys and
# allow-list, its own endpoint, state directory and log); SVC_AGG_ENDPOINTS
# then lists both, in that order, for the nodes configured afterwards
svc_aggregator2_start() {
	local addr=${NETNS_HOST_IP:-127.0.0.1} port i
	port=$(svc_free_port "$addr") || fail "no free port on $addr"
	SVC_AGG2_ENDPOINT="tcp://$addr:$port"
	mkdir -p -m 0700 "$SVC/state2"
	{
		echo "[service]"
		echo "listen = \"$SVC_AGG2_ENDPOINT\""
		echo "secret_key = \"$SVC/etc/keys/aggregator.key\""
		echo "allowed_agents = \"$SVC/etc/agents\""
		echo "state_dir = \"$SVC/state2\""
	} | svc_write_config "$SVC/etc/aggregator2.toml"
	svc_log "$SVC/log/aggregator2.log"
	"$NUNATAK_AGGREGATOR" --config "$SVC/etc/aggregator2.toml" ${SVC_AGG_ARGS---allow-root-runs} >>"$SVC/log/aggregator2.log" 2>&1 &
	SVC_AGG2_PID=$!
	for i in $(seq 1 100); do
		kill -0 "$SVC_AGG2_PID" 2>/dev/null || fail "the second nunatak-aggregator exited: $(tail -5 "$SVC/log/aggregator2.log")"
		SVC_AGG_ENDPOINT=$SVC_AGG2_ENDPOINT svc_agg_answers && break
		sleep 0.1
	done
	[ "$i" -lt 100 ] || fail "the second nunatak-aggregator does not answer on $SVC_AGG2_ENDPOINT"
	SVC_AGG_ENDPOINTS="$SVC_AGG_ENDPOINT $SVC_AGG2_ENDPOINT"
}

svc_aggregator_kill() {
	local sig=${1:-KILL}
	svc_stop_pid "$SVC_AGG_PID" "$sig" 10
	SVC_AGG_PID=
}

svc_nodes() {
	local n=$1 i
	netns_setup "$n" || fail "network namespaces could not be set up"
	SVC_NODES=$n
	for i in $(seq 1 "$n"); do
		SVC_NODE[i]="node$i"
		svc_allow "node$i"
	done
}

# svc_node_config I AGGREGATED [LINE...]
svc_node_config() {
	local i=$1 aggregated=$2 line dir
	shift 2
	dir="$SVC/run/node$i"
	mkdir -p -m 0755 "$dir"
	mkdir -p -m 0700 "$SVC/state/spool-node$i"
	SVC_SOCK[i]="$dir/agent.sock"
	SVC_NODE_SPOOL[i]="$SVC/state/spool-node$i"
	SVC_NODE_CONFIG[i]="$SVC/etc/node$i.toml"
	{
		echo "[service]"
		echo "node = \"${SVC_NODE[i]}\""
		echo "agent_socket = \"${SVC_SOCK[i]}\""
		echo "spool_dir = \"${SVC_NODE_SPOOL[i]}\""
		if [ "$aggregated" = 1 ]; then
			local list= ep
			for ep in ${SVC_AGG_ENDPOINTS:-$SVC_AGG_ENDPOINT}; do list="${list:+$list, }\"$ep\""; done
			echo "aggregators = [$list]"
			echo "secret_key = \"$SVC/etc/keys/node$i.key\""
			echo "aggregator_public_key = \"$SVC/etc/keys/aggregator.pub\""
			echo "netns_only = true"
		fi
		for line in "$@"; do echo "$line"; done
	} | svc_write_config "${SVC_NODE_CONFIG[i]}"
}

# svc_nunatakd_spawn I IN_NODE: starts it and waits for its control socket
svc_nunatakd_spawn() {
	local i=$1 in_node=$2 t
	SVC_NODE_LOG[i]="$SVC/log/node$i.log"
	svc_log "${SVC_NODE_LOG[i]}"
	rm -f "${SVC_SOCK[i]}"
	echo "==== start $(date +%T.%N)" >>"${SVC_NODE_LOG[i]}"
	local args=(--config "${SVC_NODE_CONFIG[i]}" --node "${SVC_NODE[i]}")
	# the socket on the command line too, where nunatakd has the option
	"$NUNATAKD" --help 2>&1 | grep -q -- '--socket' && args+=(--socket "${SVC_SOCK[i]}")
	if [ "$in_node" = 1 ]; then
		# nsenter itself (not a shell function, which would fork a subshell)
		# execs nunatakd: $! is the daemon's pid
		nsenter --net="/run/netns/${NETNS_NAME[i]}" -- "$NUNATAKD" "${args[@]}" \
			>>"${SVC_NODE_LOG[i]}" 2>&1 &
	else
		"$NUNATAKD" "${args[@]}" >>"${SVC_NODE_LOG[i]}" 2>&1 &
	fi
	SVC_PID[i]=$!
	for t in $(seq 1 200); do
		kill -0 "${SVC_PID[i]}" 2>/dev/null ||
			fail "nunatakd of ${SVC_NODE[i]} exited at start: $(tail -5 "${SVC_NODE_LOG[i]}")"
		if [ -S "${SVC_SOCK[i]}" ]; then
			# the pid killed later must be the daemon's own
			[ "$(readlink "/proc/${SVC_PID[i]}/exe")" = "$(readlink -f "$NUNATAKD")" ] ||
				fail "harness: pid ${SVC_PID[i]} is not nunatakd ($(readlink "/proc/${SVC_PID[i]}/exe"))"
			return 0
		fi
		sleep 0.1
	done
	fail "nunatakd of ${SVC_NODE[i]}: no control socket ${SVC_SOCK[i]} after 20 s: $(tail -5 "${SVC_NODE_LOG[i]}")"
}

svc_nunatakd_start() {
	local i=$1
	shift
	[ -n "${SVC_NODE[i]:-}" ] || fail "svc_nunatakd_start $i: no such node (svc_nodes first)"
	svc_node_config "$i" 1 "$@"
	svc_nunatakd_spawn "$i" 1
}

# node 0: a nunatakd in the root namespace, its own Aggregator
svc_nunatakd_local() {
	SVC_NODE[0]=${SVC_LOCAL_NODE:-local}
	svc_node_config 0 0 "$@"
	svc_nunatakd_spawn 0 0
}

svc_nunatakd_kill() {
	local i=$1 sig=${2:-TERM}
	svc_stop_pid "${SVC_PID[i]}" "$sig" 20
	unset 'SVC_PID[i]'
}

svc_in_node() {
	local i=$1
	shift
	if [ "$i" = 0 ]; then
		env NUNATAK_AGENT_SOCKET="${SVC_SOCK[0]}" "$@"
	else
		netns_exec "$i" env NUNATAK_AGENT_SOCKET="${SVC_SOCK[i]}" "$@"
	fi
}

svc_wait_agents() {
	local n=$1 s=${2:-15} i got
	for i in $(seq 1 $((s * 5))); do
		got=$(svc_agg_status 2>/dev/null | svc_py -c 'import json,sys; print(len(json.load(sys.stdin).get("agents", [])))' 2>/dev/null)
		[ "${got:-0}" -ge "$n" ] && return 0
		sleep 0.2
	done
	fail "the aggregator knows ${got:-0} Agents after $s s, expected $n: $(svc_agg_status 2>&1 | head -c 600)"
}

svc_user_create() {
	SVC_USER="nnkt$$"
	SVC_HOME="$SVC/home/$SVC_USER"
	useradd --no-create-home --home-dir "$SVC_HOME" --shell /usr/sbin/nologin --user-group "$SVC_USER" ||
		fail "useradd $SVC_USER"
	SVC_UID=$(id -u "$SVC_USER")
	mkdir -p -m 0755 "$SVC/home"
	mkdir -m 0700 "$SVC_HOME"
	chown "$SVC_USER:$SVC_USER" "$SVC_HOME"
}

svc_as_user() {
	setpriv --reuid="$SVC_UID" --regid="$(id -g "$SVC_USER")" --clear-groups -- \
		env HOME="$SVC_HOME" USER="$SVC_USER" "$@"
}

# svc_copy_bin FILE...: copies into $SVC/bin (0755, readable by any user)
svc_copy_bin() {
	local f
	for f in "$@"; do
		cp "$f" "$SVC/bin/" && chmod 0755 "$SVC/bin/$(basename "$f")" || fail "copy $f"
	done
}

# svc_rsh_start I: node I accepts commands from launchers (node_rsh.py, the
# sshd of these nodes); hydra reaches it through $SVC/bin/rsh-launch
svc_rsh_start() {
	local i=$1 t sock="$SVC/run/rsh-${SVC_NODE[$1]}.sock"
	if [ ! -x "$SVC/bin/rsh-launch" ]; then
		cat >"$SVC/bin/rsh-launch" <<LAUNCH
#!/bin/bash
# hydra's -launcher-exec, called as ssh: [OPTIONS] HOST "COMMAND"
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
host=\$1
shift
exec "$SVC_PY" "$TESTS_LIB/node_rsh.py" exec "$SVC/run/rsh-\$host.sock" /bin/sh -c "\$*"
LAUNCH
		chmod 0755 "$SVC/bin/rsh-launch"
	fi
	nsenter --net="/run/netns/${NETNS_NAME[i]}" -- "$SVC_PY" "$TESTS_LIB/node_rsh.py" serve "$sock" \
		2>>"$SVC/log/rsh.log" &
	svc_track $!
	svc_log "$SVC/log/rsh.log"
	for t in $(seq 1 50); do
		[ -S "$sock" ] && return 0
		sleep 0.1
	done
	fail "node_rsh of ${SVC_NODE[i]} did not start: $(tail -3 "$SVC/log/rsh.log")"
}

# svc_hydra ORIGIN I...: the mpiexec.hydra command line (up to the -n)
# that starts one proxy on each node I through its node_rsh, from node ORIGIN
svc_hydra() {
	local origin=$1 hosts= i
	shift
	for i in "$@"; do hosts="${hosts:+$hosts,}${SVC_NODE[i]}"; done
	echo "mpiexec.hydra -launcher ssh -launcher-exec $SVC/bin/rsh-launch -hosts $hosts -localhost ${NETNS_IP[origin]}"
}

# svc_control SOCKET JSON: one request on a control socket, the reply on
# stdout (control_client.py); as the calling user
svc_control() {
	"$SVC_PY" "$TESTS_LIB/control_client.py" "$@"
}

# svc_wait_pid PID S: until PID (any process, not only a child) has ended,
# at most S seconds; 1 when it is still running then
svc_wait_pid() {
	local pid=$1 s=$2 i
	for i in $(seq 1 $((s * 10))); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

# svc_bg_run FILE_PREFIX CMD...: CMD in the background, its exit status in
# FILE_PREFIX.rc once it ends, stdout/stderr in FILE_PREFIX.out/.err; its
# pid in SVC_BG_PID (killed at exit)
svc_bg_run() {
	local f=$1
	shift
	rm -f "$f.rc"
	( "$@" >"$f.out" 2>"$f.err"; echo $? >"$f.rc" ) &
	SVC_BG_PID=$!
	svc_track "$SVC_BG_PID"
}

# svc_bg_wait FILE_PREFIX S: waits for it (bounded); its exit status
svc_bg_wait() {
	local f=$1 s=$2 i
	for i in $(seq 1 $((s * 10))); do
		[ -s "$f.rc" ] && return "$(cat "$f.rc")"
		sleep 0.1
	done
	fail "still running after $s s: $(tail -3 "$f.err")"
}

# svc_wait_run_dir DIR S: the first Run directory with a manifest in DIR
svc_wait_run_dir() {
	local dir=$1 s=$2 i r
	for i in $(seq 1 $((s * 10))); do
		r=$(find "$dir" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | head -1)
		[ -n "$r" ] && [ -f "$r/manifest.json" ] && { echo "$r"; return 0; }
		sleep 0.1
	done
	return 1
}

# svc_through_daemon ERR_FILE: fails when `nunatak run` said it observed
# in-process instead of through the daemon
svc_through_daemon() {
	if grep -q 'observing in-process instead' "$1"; then
		fail "the Run did not go through nunatakd: $(grep 'in-process' "$1" | head -2)"
	fi
}
