# An unprivileged user through nunatakd (its own Aggregator, one node):
# `nunatak run` gives a complete Run owned by the user, 0700/0600, with
# the samples a root Run has (no bpf-denied); the same user asking the
# control socket to observe a root process or another user's is refused
# with a clear message and nothing is collected; a setuid-root program
# exec'd inside their Target leaves it and is not sampled.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init user local
id nobody >/dev/null 2>&1 || skip "no user 'nobody' (the other user)"
svc_user_create
svc_copy_bin "$NUNATAK" "$WORKLOADS/hotspots"
# a setuid-root copy of the workload under another name (its comm tells it apart)
cp "$WORKLOADS/hotspots" "$SVC/bin/suidspots" && chown root:root "$SVC/bin/suidspots" &&
	chmod 4755 "$SVC/bin/suidspots" || fail "setuid copy"
svc_nunatakd_local
sock=${SVC_SOCK[0]}
cd "$SVC_HOME"
modes() { stat -c '%a' "$@" | tr '\n' ' ' | sed 's/ $//'; }

# --- 1. a complete Run of the user's own program, through the daemon
svc_as_user env NUNATAK_AGENT_SOCKET="$sock" "$SVC/bin/nunatak" run -o "$SVC_HOME/runs" -- \
	"$SVC/bin/hotspots" 1.5 4 >out.txt 2>err.txt
rc=$?
svc_through_daemon err.txt
[ $rc = 4 ] || fail "exit $rc, expected the application's 4: $(cat err.txt)"
grep -q 'hotspots: ok' out.txt || fail "the application did not run: $(cat out.txt)"
run=$(run_dir_of err.txt)
[ -f "$run/manifest.json" ] || fail "no Run: $(cat err.txt)"
case "$run" in /*) ;; *) run="$SVC_HOME/$run" ;; esac
[ "$(stat -c %U "$run" "$run/manifest.json" "$run/pivot.sqlite" | sort -u)" = "$SVC_USER" ] ||
	fail "the Run is not the user's: $(ls -la "$run")"
[ "$(modes "$run" "$run/manifest.json" "$run/pivot.sqlite")" = "700 600 600" ] ||
	fail "modes of the user's Run: $(ls -la "$run")"
# a Machine without a PMU (a VM) records hardware-counters-unavailable in every Run
degr=$(json "$run/manifest.json" '[x["name"] for x in d["degradations"] if x["name"] != "hardware-counters-unavailable"]')
[ "$degr" = "[]" ] || fail "Degradations in a daemon Run: $(json "$run/manifest.json" 'd["degradations"]')"
[ "$(json "$run/manifest.json" 'd["run"]["exit_code"]')" = 4 ] || fail "manifest exit code"
svc_py - "$run" <<'PY' || fail "the user's Run is not complete"
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}/pivot.sqlite?mode=ro", uri=True)
v = dict(db.execute("""select h.name, sum(m.value) from measurements m join hotspots h on h.id = m.hotspot
    where m.counter = 'cpu-clock' group by h.name"""))
heavy, light = v.get("heavy_kernel", 0), v.get("light_kernel", 0)
share = heavy / (heavy + light) if heavy + light else 0
print(f"heavy_kernel {heavy / 1e9:.3f} s, light_kernel {light / 1e9:.3f} s, share {share:.3f}")
sys.exit(0 if abs(share - 0.75) <= 0.07 and heavy + light > 0.5e9 else 1)
PY
echo "user's Run: $(basename "$run"), $(stat -c '%U %a' "$run"), exit 4 kept"

# --- 2. observing a process that is not theirs: refused, nothing collected
sleep 30 &
root_pid=$!
svc_track "$root_pid"
setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- sleep 30 &
other_pid=$!
svc_track "$other_pid"
mkdir -m 0700 "$SVC_HOME/runs2" && chown "$SVC_USER:" "$SVC_HOME/runs2"
for who in root:$root_pid nobody:$other_pid; do
	pid=${who#*:}
	req=$(printf '{"request":"run-start","run":{"name":"steal","created":"2026-01-01T00:00:00","command":["sleep","30"],"node":"local","job_id":null,"effective_configuration":{}},"runs_dir":"%s","frequency":997,"mpi_events":false,"symbolizer":"","target_exe":null,"token":"%s","pid":%d}' \
		"$SVC_HOME/runs2" "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" "$pid")
	svc_as_user "$SVC_PY" "$TESTS_LIB/control_client.py" "$sock" "$req" >reply.json 2>reply.err ||
		fail "no reply from the control socket: $(cat reply.err)"
	[ "$(json reply.json 'd["ok"]')" = False ] || fail "observing ${who%%:*}'s process $pid was granted: $(cat reply.json)"
	msg=$(json reply.json 'd["error"]')
	code=$(json reply.json 'd.get("code")')
	grep -qE "$pid|uid|not (yours|owned)|own" <<<"$msg" ||
		fail "the refusal does not say why: $msg"
	case "$code" in 1 | 13) ;; *) fail "refusal code $code, expected EPERM (1) or EACCES (13): $msg" ;; esac
	echo "refused (${who%%:*}'s pid $pid): $msg"
done
[ -z "$(ls -A "$SVC_HOME/runs2")" ] || fail "a Run was made for a refused request: $(ls -A "$SVC_HOME/runs2")"
status=$(svc_as_user env NUNATAK_AGENT_SOCKET="$sock" "$SVC/bin/nunatak" status --json 2>&1) ||
	echo "(nunatak status --json as the user: $status)"
grep -q '"steal' <<<"$status" && fail "a refused request left a Target: $status"

# --- 3. a setuid-root program exec'd inside the user's Target: not sampled
svc_as_user env NUNATAK_AGENT_SOCKET="$sock" "$SVC/bin/nunatak" run -o "$SVC_HOME/runs" --name suid -- \
	sh -c "'$SVC/bin/hotspots' 1; '$SVC/bin/suidspots' 1.5" >out.txt 2>err.txt ||
	fail "the run with a setuid program: exit $?: $(cat err.txt)"
svc_through_daemon err.txt
[ "$(grep -c 'hotspots: ok' out.txt)" = 2 ] || fail "both programs did not run: $(cat out.txt)"
run=$(run_dir_of err.txt)
case "$run" in /*) ;; *) run="$SVC_HOME/$run" ;; esac
comms=$(sql "$run" "select l.comm, sum(s.sample_count) from samples s join loci l on l.id = s.locus group by l.comm")
echo "samples by command: $(tr '\n' ' ' <<<"$comms")"
grep -q '^hotspots|[1-9]' <<<"$comms" || fail "the user's own program was not sampled: $comms"
# Between exec setting the new name and committing the new credentials the
# task is still the user's (in the kernel, loading the program): a sample
# there is the user's own. Nothing after: no sample in user mode, none in
# the program's own code.
leak=$(sql "$run" "select count(*) from samples s join loci l on l.id = s.locus where l.comm = 'suidspots'
	and (s.in_kernel = 0 or exists (select 1 from stack_frames f join addresses a on a.id = f.address
	join modules m on m.id = a.module where f.stack = s.stack and m.display_name = 'suidspots'))")
[ "$leak" = 0 ] || fail "the setuid-root program was sampled ($leak user-mode or own-code samples): $comms"
k=$(sql "$run" "select coalesce(sum(s.sample_count), 0) from samples s join loci l on l.id = s.locus where l.comm = 'suidspots'")
[ "$k" -le 3 ] || fail "$k kernel samples of the setuid program's exec: more than its exec's window: $comms"
n=$(sql "$run" "select count(*) from loci where comm = 'suidspots' or exe like '%suidspots'")
echo "Loci of the setuid program: $n (its exec is where it left the Target)"
exit 0
