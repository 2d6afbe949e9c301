# Security of the service: an Agent key the aggregator does not list, or
# no CURVE at all, gets nothing (no reply) and is counted; an aggregator
# with a secret key but no allow-list does not start; a symbolic link
# planted by another user where the Run would be written is not followed
# (neither as the Run directory nor as the runs directory, in a sticky
# shared directory or under another user's directory); the control
# socket refuses to observe a process whose effective uid is not the
# caller's (its own setuid program), and shows a user only their own Runs.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init user
id nobody >/dev/null 2>&1 || skip "no user 'nobody' (the other user)"
svc_user_create
svc_copy_bin "$NUNATAK" "$WORKLOADS/hotspots"
cd "$T"

# --- 1. CURVE: a key not in the allow-list, and plain TCP, are refused
svc_aggregator_start
svc_keygen stranger # not copied to the allow-list
before=$(svc_agg_status | svc_py -c 'import json,sys; print(json.load(sys.stdin)["counters"]["agents_refused"])') ||
	fail "no agents_refused counter in STATUS: $(svc_agg_status)"
if svc_py "$SVC_WIRE" status "$SVC_AGG_ENDPOINT" --key "$SVC/etc/keys/stranger.key" \
	--server-key "$SVC/etc/keys/aggregator.pub" --timeout 3 >stranger.out 2>&1; then
	fail "an unknown Agent key got a STATUS reply: $(cat stranger.out)"
fi
if svc_py "$SVC_WIRE" status "$SVC_AGG_ENDPOINT" --timeout 3 >plain.out 2>&1; then
	fail "a client without CURVE got a STATUS reply: $(cat plain.out)"
fi
after=$(svc_agg_status | svc_py -c 'import json,sys; print(json.load(sys.stdin)["counters"]["agents_refused"])')
[ "$after" -gt "$before" ] || fail "the refused key was not counted: agents_refused $before -> $after"
svc_agg_answers || fail "the aggregator stopped answering after refusing a key"
echo "CURVE: unknown key and plain TCP refused, agents_refused $before -> $after"
svc_aggregator_kill TERM
# a secret key without an allow-list would let every CURVE client in: refused
(umask 077 && printf '[service]\nlisten = "%s"\nsecret_key = "%s"\nstate_dir = "%s"\n' \
	"$SVC_AGG_ENDPOINT" "$SVC/etc/keys/aggregator.key" "$SVC/state" >"$SVC/etc/open.toml")
timeout 10 "$NUNATAK_AGGREGATOR" --config "$SVC/etc/open.toml" >open.out 2>&1
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] || fail "nunatak-aggregator with CURVE and no allowed_agents: exit $rc: $(cat open.out)"
grep -q allowed_agents open.out || fail "the refusal does not name allowed_agents: $(cat open.out)"
echo "no allow-list: refused to start: $(head -1 open.out)"

# --- 2. links planted by another user in a shared (sticky) runs directory of the user's
svc_nunatakd_local
sock=${SVC_SOCK[0]}
# the user's own runs directory, sticky and writable by all (a Run may go
# there, as the user's; another user may put entries in it)
mkdir -m 1777 "$SVC/shared" && chown "$SVC_USER:" "$SVC/shared"
mkdir -m 0700 "$SVC/rootonly"
printf 'root only\n' >"$SVC/rootonly/keep" && chmod 0600 "$SVC/rootonly/keep"
listing() { find "$1" -mindepth 1 -printf '%f %s %T@ %m %u\n' | sort; }
before=$(listing "$SVC/rootonly")
# the directory itself is fine for a Run
svc_as_user env NUNATAK_AGENT_SOCKET="$sock" "$SVC/bin/nunatak" run --name control -o "$SVC/shared" -- \
	"$SVC/bin/hotspots" 0.1 >out.txt 2>err.txt || fail "a Run in a sticky shared directory: exit $?: $(cat err.txt)"
echo "protected_symlinks=$(cat /proc/sys/fs/protected_symlinks 2>/dev/null) (0: the kernel does not stop a link being followed)"
# every name the Run could take in the next 20 s, as nobody
setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$SVC_PY" - "$SVC/shared" "$SVC/rootonly" <<'PY' ||
import os, sys, time
shared, target = sys.argv[1], sys.argv[2]
now = time.time()
for t in range(-2, 20):
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now + t))
    for suffix in [""] + ["-%d" % k for k in range(2, 4)]:
        os.symlink(target, os.path.join(shared, "planted-" + stamp + suffix))
PY
	fail "planting the links"
svc_as_user env NUNATAK_AGENT_SOCKET="$sock" "$SVC/bin/nunatak" run --name planted -o "$SVC/shared" -- \
	"$SVC/bin/hotspots" 0.3 >out.txt 2>err.txt
rc=$?
[ "$(listing "$SVC/rootonly")" = "$before" ] || fail "the link was followed: $(ls -la "$SVC/rootonly")"
run=$(run_dir_of err.txt)
if [ $rc = 0 ] && [ -n "$run" ]; then
	[ -d "$run" ] && [ ! -L "$run" ] || fail "the Run $run is not a directory of its own"
	[ "$(stat -c %U "$run")" = "$SVC_USER" ] || fail "the Run is not the user's: $(ls -ld "$run")"
	echo "planted links: not followed, the Run went to $(basename "$run")"
else
	grep -qiE 'link|exists|refus' err.txt || fail "exit $rc without saying why: $(cat err.txt)"
	echo "planted links: not followed, the Run refused: $(grep -iE 'link|exists|refus' err.txt | head -1)"
fi
# the runs directory itself a link of nobody's
setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- ln -s "$SVC/rootonly" "$SVC/shared/runs-link"
svc_as_user env NUNATAK_AGENT_SOCKET="$sock" "$SVC/bin/nunatak" run -o "$SVC/shared/runs-link" -- \
	"$SVC/bin/hotspots" 0.1 >out.txt 2>err.txt
rc=$?
[ "$(listing "$SVC/rootonly")" = "$before" ] || fail "the runs directory link was followed: $(ls -la "$SVC/rootonly")"
[ $rc = 125 ] || fail "a runs directory that is a link: exit $rc, expected 125: $(cat err.txt)"
grep -q 'symbolic link' err.txt || fail "the refusal does not name the link: $(cat err.txt)"
echo "runs directory link: refused (125)"
# a link in a directory of nobody's (not sticky: no kernel protection applies)
mkdir -m 0755 "$SVC/nobodys" && chown nobody "$SVC/nobodys"
setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- ln -s "$SVC/rootonly" "$SVC/nobodys/runs"
svc_as_user env NUNATAK_AGENT_SOCKET="$sock" "$SVC/bin/nunatak" run -o "$SVC/nobodys/runs" -- \
	"$SVC/bin/hotspots" 0.1 >out.txt 2>err.txt
rc=$?
[ "$(listing "$SVC/rootonly")" = "$before" ] || fail "the link in nobody's directory was followed: $(ls -la "$SVC/rootonly")"
[ $rc = 125 ] || fail "a runs directory under nobody's directory: exit $rc, expected 125: $(cat err.txt)"
echo "link under another user's directory: refused: $(head -1 err.txt)"

# --- 3. the caller's own process, but setuid: its effective uid is root's
cp "$WORKLOADS/hotspots" "$SVC/bin/suidspots" && chmod 4755 "$SVC/bin/suidspots"
# setpriv execs the program: $! is its pid
setpriv --reuid="$SVC_UID" --regid="$(id -g "$SVC_USER")" --clear-groups -- "$SVC/bin/suidspots" 30 >/dev/null &
spid=$!
svc_track "$spid"
suid_running() { [ "$(readlink "/proc/$spid/exe" 2>/dev/null)" = "$(readlink -f "$SVC/bin/suidspots")" ]; }
wait_for 30 suid_running || fail "setpriv did not exec the setuid copy within 30 s"
uids=$(awk '/^Uid:/ {print $2, $3}' "/proc/$spid/status")
[ "$uids" = "$SVC_UID 0" ] || fail "the setuid copy does not run as uid $SVC_UID, effective 0: Uid $uids"
mkdir -m 0700 "$SVC_HOME/runs" && chown "$SVC_USER:" "$SVC_HOME/runs"
req=$(printf '{"request":"run-start","run":{"name":"suid","created":"2026-01-01T00:00:00","command":["suidspots"],"node":"local","job_id":null,"effective_configuration":{}},"runs_dir":"%s","frequency":997,"mpi_events":false,"symbolizer":"","target_exe":null,"token":"%s","pid":%d}' \
	"$SVC_HOME/runs" "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" "$spid")
svc_as_user "$SVC_PY" "$TESTS_LIB/control_client.py" "$sock" "$req" >reply.json 2>reply.err ||
	fail "no reply: $(cat reply.err)"
[ "$(json reply.json 'd["ok"]')" = False ] || fail "observing its own setuid-root process was granted: $(cat reply.json)"
[ -z "$(ls -A "$SVC_HOME/runs")" ] || fail "a Run was made: $(ls -A "$SVC_HOME/runs")"
grep -qE "effective (uid (is )?)?0" <<<"$(json reply.json 'd["error"]')" || fail "the refusal does not name the effective uid: $(cat reply.json)"
echo "own setuid process: refused: $(json reply.json 'd["error"]')"

# --- 4. status: a user sees their own Runs only
NUNATAK_AGENT_SOCKET="$sock" "$NUNATAK" run -o "$SVC/runs" --name rootsecret -- "$WORKLOADS/hotspots" 4 >/dev/null 2>root.err &
rpid=$!
svc_track "$rpid"
# asked once root's Run exists (else not seeing it would prove nothing)
root_run() { ls "$SVC/runs"/rootsecret-*/manifest.json >/dev/null 2>&1; }
wait_for 30 root_run || fail "root's Run did not start within 30 s: $(tail -3 root.err)"
svc_as_user "$SVC_PY" "$TESTS_LIB/control_client.py" "$sock" '{"request":"status"}' >ust.json 2>ust.err ||
	fail "status as the user: $(cat ust.err)"
"$SVC_PY" "$TESTS_LIB/control_client.py" "$sock" '{"request":"status"}' >rst.json ||
	fail "status as root"
grep -q rootsecret rst.json || echo "(note: root's status does not name its Run: $(head -c 300 rst.json))"
grep -q 'rootsecret' ust.json && fail "the user sees root's Run: $(head -c 600 ust.json)"
[ "$(json ust.json 'd["ok"]')" = True ] || fail "status refused to the user: $(cat ust.json)"
svc_wait_pid "$rpid" 30 || fail "root's Run did not end"
echo "status: root's Run hidden from the user"
