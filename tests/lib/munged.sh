# munged.sh — a private munged for the tests: its own key, socket, PID,
# seed and log files under a directory the caller names, never /etc/munge
# or /run/munge, so tests never depend on (nor disturb) a system munged.
#
# Sourced (by tests/lib/slurm.sh, integration tests):
#
#   munged_start DIR   Makes DIR (owned by the munge user, mode 0755: munged
#                      refuses directories others can write; clients of any
#                      user must reach the socket) and in it a fresh key
#                      (munge.key, mungekey or 1024 bytes of /dev/urandom,
#                      0600 munge), then starts munged as the munge user
#                      (setpriv) with DIR/munge.socket.2, DIR/munged.pid,
#                      DIR/munged.seed, in its own session, in the foreground:
#                      its log (stderr) goes to DIR/munged.log.
#                      Waits until `munge -n -S SOCK | unmunge -S SOCK`
#                      succeeds, at most MUNGED_WAIT_S seconds (default 10).
#                      Records munged's PID in DIR/munged.pid.started and
#                      sets MUNGED_SOCKET=DIR/munge.socket.2, MUNGED_PID (the
#                      daemon's own PID) and MUNGED_DIR=DIR.
#                      Returns 0; 77 when it cannot run here (not root, no
#                      munged, no munge user: the reason on stderr); 1 when
#                      munged failed (the end of its log on stderr; nothing
#                      left running). DIR's parents must not be writable by
#                      others (a sticky /tmp is fine): munged checks them.
#                      With MUNGED_WATCH_PID set, a watcher stops munged once
#                      that process is gone (a test that crashes leaves no
#                      munged behind).
#   munged_check       0 when munged can run here; else prints why not (not
#                      root, munged/munge/unmunge/setpriv missing, no munge
#                      user) on stderr and returns 1.
#   munged_stop [DIR]  SIGTERM to the recorded PID (DIR/munged.pid.started;
#                      without DIR: the last munged_start's, $MUNGED_DIR),
#                      only if it is still a munged; waits at most 10 s, then
#                      SIGKILL; removes the record. 0 also when nothing runs
#                      (never started, already stopped). No trap of its own:
#                      the caller's trap calls it.
#   munged_socket DIR  Prints DIR/munge.socket.2.
#   munged_alive DIR   0 when the recorded munged runs.
#
# Run as a command (by the unit tests, with execve and an argv):
#
#   bash munged.sh start DIR    prints the socket path on stdout; exit as
#                               munged_start
#   bash munged.sh stop DIR
#   bash munged.sh check
#
# Nothing is found or killed by name: only the PID this file recorded.

MUNGED_WAIT_S=${MUNGED_WAIT_S:-10}

munged_socket() {
	printf '%s/munge.socket.2\n' "$1"
}

_munged_pid() {
	local f="$1/munged.pid.started" pid
	[ -f "$f" ] || return 1
	read -r pid <"$f" 2>/dev/null || return 1
	case "$pid" in '' | *[!0-9]*) return 1 ;; esac
	printf '%s\n' "$pid"
}

# 0 when PID is a running munged
_munged_is_munged() {
	local comm
	[ -r "/proc/$1/comm" ] || return 1
	read -r comm <"/proc/$1/comm" 2>/dev/null || return 1
	[ "$comm" = munged ]
}

munged_alive() {
	local pid
	pid=$(_munged_pid "$1") || return 1
	_munged_is_munged "$pid"
}

munged_stop() {
	local dir="${1:-${MUNGED_DIR:-}}" pid i
	[ -n "$dir" ] || return 0
	pid=$(_munged_pid "$dir") || return 0
	if _munged_is_munged "$pid"; then
		kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < 100; i++)); do
			_munged_is_munged "$pid" || break
			sleep 0.1
		done
		if _munged_is_munged "$pid"; then
			echo "munged.sh: munged $pid did not stop in 10 s after SIGTERM: SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null
		fi
	fi
	rm -f "$dir/munged.pid.started"
	return 0
}

# 0 when a credential made through SOCK decodes through it
_munged_ready() {
	munge -n -S "$1" 2>/dev/null | unmunge -S "$1" >/dev/null 2>&1
}

_munged_fail() {
	local dir="$1"
	shift
	echo "munged.sh: $*" >&2
	if [ -f "$dir/munged.log" ]; then
		echo "munged.sh: end of $dir/munged.log:" >&2
		tail -n 15 "$dir/munged.log" | sed 's/^/    /' >&2
	fi
	munged_stop "$dir"
	return 1
}

_munged_key() {
	local key="$1"
	rm -f "$key"
	if command -v mungekey >/dev/null 2>&1; then
		mungekey --create --keyfile="$key" >/dev/null 2>&1 ||
			dd if=/dev/urandom of="$key" bs=1024 count=1 status=none || return 1
	else
		dd if=/dev/urandom of="$key" bs=1024 count=1 status=none || return 1
	fi
	chown munge:munge "$key" && chmod 0600 "$key"
}

# The watcher: stops munged once MUNGED_WATCH_PID is gone.
_munged_watch() {
	local dir="$1" watched="$2" pid="$3"
	(
		exec </dev/null >/dev/null 2>&1
		while kill -0 "$watched" 2>/dev/null && _munged_is_munged "$pid"; do
			sleep 1
		done
		munged_stop "$dir"
	) &
	disown 2>/dev/null || true
}

_munged_bin() {
	command -v munged 2>/dev/null || echo /usr/sbin/munged
}

munged_check() {
	[ "$(id -u)" = 0 ] || { echo "munged.sh: starting munged as the munge user needs root" >&2; return 1; }
	[ -x "$(_munged_bin)" ] || { echo "munged.sh: munged not installed (apt-get install munge)" >&2; return 1; }
	command -v munge >/dev/null && command -v unmunge >/dev/null ||
		{ echo "munged.sh: munge/unmunge not installed (apt-get install munge)" >&2; return 1; }
	id munge >/dev/null 2>&1 || { echo "munged.sh: no 'munge' user (apt-get install munge makes it)" >&2; return 1; }
	command -v setpriv >/dev/null || { echo "munged.sh: setpriv missing (apt-get install util-linux)" >&2; return 1; }
	return 0
}

munged_start() {
	local dir="${1:-}" sock pid i munged
	[ -n "$dir" ] || { echo "munged.sh: munged_start needs a directory" >&2; return 1; }
	case "$dir" in /*) ;; *) echo "munged.sh: '$dir' must be an absolute path" >&2; return 1 ;; esac
	munged_check || return 77
	munged=$(_munged_bin)
	if munged_alive "$dir"; then
		echo "munged.sh: a munged runs already for $dir (pid $(_munged_pid "$dir")): munged_stop it first" >&2
		return 1
	fi
	mkdir -p "$dir" || return 1
	chown munge:munge "$dir" && chmod 0755 "$dir" || return 1
	rm -f "$dir/munge.socket.2" "$dir/munge.socket.2.lock" "$dir/munged.pid" "$dir/munged.log"
	_munged_key "$dir/munge.key" || { echo "munged.sh: cannot make the key $dir/munge.key" >&2; return 1; }
	sock=$(munged_socket "$dir")
	setsid setpriv --reuid=munge --regid=munge --init-groups \
		"$munged" --foreground --socket="$sock" --key-file="$dir/munge.key" \
		--pid-file="$dir/munged.pid" --seed-file="$dir/munged.seed" \
		</dev/null >>"$dir/munged.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/munged.pid.started"
	for ((i = 0; i < MUNGED_WAIT_S * 10; i++)); do
		_munged_ready "$sock" && break
		kill -0 "$pid" 2>/dev/null || { _munged_fail "$dir" "munged exited at start"; return 1; }
		sleep 0.1
	done
	_munged_ready "$sock" || { _munged_fail "$dir" "munged not ready after ${MUNGED_WAIT_S} s at $sock"; return 1; }
	_munged_is_munged "$pid" || { _munged_fail "$dir" "pid $pid is not munged (setsid forked?)"; return 1; }
	MUNGED_SOCKET=$sock
	MUNGED_PID=$pid
	MUNGED_DIR=$dir
	[ -z "${MUNGED_WATCH_PID:-}" ] || _munged_watch "$dir" "$MUNGED_WATCH_PID" "$pid"
	return 0
}

# as a command
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	case "${1:-}" in
	start)
		munged_start "${2:-}" || exit $?
		printf '%s\n' "$MUNGED_SOCKET"
		;;
	stop) munged_stop "${2:?usage: munged.sh stop DIR}" ;;
	check) munged_check ;;
	*)
		echo "usage: bash munged.sh start DIR | stop DIR" >&2
		exit 2
		;;
	esac
fi
