# The end of an attach on a real Slurm (tests/lib/slurm.sh; nunatakd its
# own Aggregator): `nunatak detach JOBID` by the job's owner ends a running
# `nunatak attach JOBID` early (ended_by "detach", within seconds, Run
# finalized with what was sampled, the job untouched), so does a Ctrl-C
# (SIGTERM here: ended_by "interrupt", exit 0); a job that ends
# during an attach with no --duration ends the attach (ended_by
# "job-ended") and its Run is finalized, nothing lost, the tasks of a job
# step started during the attach included: its samples stand for
# >= 90 % of the CPU time the job's tasks spent once the attach said it
# was attached (each task prints its own CPU time at its end,
# tests/workloads/jobspin).
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init local
. "$TESTS_LIB/slurm.sh"
slurm_start_nunatakd attach detach
U1=${SLURM_TEST_USER1:-nunatak-u1}
slurm_user "$U1"
svc_copy_bin "$NUNATAK" "$WORKLOADS/jobspin"
W=$(slurm_workdir "$U1")
sock=${SVC_SOCK[0]}
FREQ=99
as_nunatak() {
	(cd "$W" && slurm_as "$U1" env NUNATAK_AGENT_SOCKET="$sock" NUNATAK_MUNGE_SOCKET="$SLURM_MUNGE_SOCKET" \
		"$SVC/bin/nunatak" "$@")
}
# start_job SECONDS [SECONDS2]: a job of two jobspin tasks (then a second
# step of two more when SECONDS2 is given); sets j and pids (step 0's)
start_job() {
	local i wrap="srun -n 2 $SVC/bin/jobspin $1"
	[ -z "${2:-}" ] || wrap="$wrap; srun -n 2 $SVC/bin/jobspin $2"
	j=$(slurm_sbatch "$U1" "$W" -n 2 --wrap "$wrap")
	slurm_wait_running "$j" 30 || fail "job $j not running after 30 s"
	for i in $(seq 1 100); do
		mapfile -t pids < <(slurm_step_pids "$j" 0)
		[ "${#pids[@]}" -ge 2 ] && return 0
		sleep 0.1
	done
	fail "job $j: ${#pids[@]} tasks in step 0, expected 2"
}
# wait_attached PREFIX: until the attach in the background said so (10 s)
wait_attached() {
	local i
	for i in $(seq 1 100); do
		grep -q "attached to job $j" "$1.err" 2>/dev/null && return 0
		[ -s "$1.rc" ] && fail "the attach ended at once: exit $(cat "$1.rc"): $(cat "$1.err")"
		sleep 0.1
	done
	fail "no 'attached to job $j' after 10 s: $(cat "$1.err")"
}
# check_run JSON: the finalized Run of the attach, the owner's, 0700; its
# cpu-clock sample count on stdout
check_run() {
	local run
	run=$(json "$1" 'd["run_dir"]')
	case "$run" in "$W/.nunatak/"*) ;; *) fail "the Run $run is not in $W/.nunatak" ;; esac
	[ -f "$run/manifest.json" ] && [ -f "$run/pivot.sqlite" ] || fail "the Run is not finalized: $(ls -la "$run")"
	[ "$(stat -c '%U %a' "$run")" = "$U1 700" ] || fail "the Run is $(stat -c '%U %a' "$run"), expected $U1 700"
	sql "$run" "select coalesce(sum(sample_count), 0) from samples where counter = 'cpu-clock'"
}

# new_run_sampled: a Run in $W/.nunatak, not one of $seen, holds samples
# (a Batch stored): the attach is ended then, not after a fixed time
seen=""
new_run_sampled() {
	local r
	for r in "$W"/.nunatak/*/; do
		case " $seen " in *" $r "*) continue ;; esac
		[ -e "$r/pivot.sqlite" ] && [ "$(stored_samples "$r")" -ge 1 ] && return 0
	done
	return 1
}

# --- 1. detach ends an attach early
start_job 30
svc_bg_run "$T/a1" as_nunatak attach "$j" -F "$FREQ" --json
wait_attached "$T/a1"
wait_for 30 new_run_sampled || fail "no Batch of the attach stored after 30 s: $(tail -3 "$T/a1.err")"
t0=$EPOCHREALTIME
as_nunatak detach "$j" >"$T/d.out" 2>"$T/d.err" || fail "detach: exit $?: $(cat "$T/d.err")"
svc_bg_wait "$T/a1" 20 || fail "the attach after a detach: exit $(cat "$T/a1.rc"): $(cat "$T/a1.err")"
t1=$EPOCHREALTIME
grep -q "detached from job $j" "$T/d.err" || fail "detach said: $(cat "$T/d.err")"
[ "$(json "$T/a1.out" 'd["ended_by"]')" = detach ] || fail "ended_by $(json "$T/a1.out" 'd["ended_by"]'), expected detach"
n=$(check_run "$T/a1.out")
[ "${n:-0}" -gt 0 ] || fail "the detached Run has no samples"
python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 10 else 1)" || fail "the attach took $(python3 -c "print($t1 - $t0)") s to end after the detach"
[ -n "$(slurm_step_pids "$j" 0)" ] || fail "the job's tasks are gone after the detach"
echo "detach: attach ended $(python3 -c "print(f'{$t1 - $t0:.2f}')") s after it, $n samples, job $j still running"
# --- 1b. Ctrl-C (SIGTERM: a background job of a script ignores SIGINT)
# ends an attach too: ended_by "interrupt", exit 0, the Run finalized
seen=$(echo "$W"/.nunatak/*/)
svc_bg_run "$T/a3" bash -c 'echo $$ >"$0"; cd "$1" || exit 125; shift 2; exec "$@"' "$T/a3.pid" "$W" _ \
	setpriv --reuid="$U1" --regid="$(id -g "$U1")" --init-groups -- env -i PATH=/usr/bin:/bin \
	HOME="$SLURM_USER_HOME" USER="$U1" SLURM_CONF="$SLURM_CONF_FILE" NUNATAK_AGENT_SOCKET="$sock" \
	NUNATAK_MUNGE_SOCKET="$SLURM_MUNGE_SOCKET" "$SVC/bin/nunatak" attach "$j" --json
wait_attached "$T/a3"
apid=$(cat "$T/a3.pid")
[ "$(readlink "/proc/$apid/exe")" = "$(readlink -f "$SVC/bin/nunatak")" ] ||
	fail "harness: pid $apid is not the attach ($(readlink "/proc/$apid/exe"))"
wait_for 30 new_run_sampled || fail "no Batch of the attach stored after 30 s: $(tail -3 "$T/a3.err")"
kill -TERM "$apid"
svc_bg_wait "$T/a3" 20 || fail "the attach after SIGTERM: exit $(cat "$T/a3.rc"): $(cat "$T/a3.err")"
[ "$(json "$T/a3.out" 'd["ended_by"]')" = interrupt ] || fail "ended_by $(json "$T/a3.out" 'd["ended_by"]'), expected interrupt"
n=$(check_run "$T/a3.out")
[ "${n:-0}" -gt 0 ] || fail "the interrupted Run has no samples"
[ -n "$(slurm_step_pids "$j" 0)" ] || fail "the job's tasks are gone after the attach's interrupt"
echo "interrupt: attach exit 0, ended_by interrupt, $n samples, job $j still running"

scancel "$j"
slurm_wait_gone "$j" 30 || fail "job $j not cancelled"
as_nunatak detach "$j" >/dev/null 2>"$T/d2.err"
[ $? = 1 ] || fail "a second detach of job $j did not fail: $(cat "$T/d2.err")"

# --- 2. the job ends during the attach: the Run is finalized, nothing lost
start_job 4 3 # the second step starts during the attach: it joins
svc_bg_run "$T/a2" as_nunatak attach "$j" -F "$FREQ" --json
wait_attached "$T/a2"
c0=$(slurm_cpu_of "${pids[@]}") # sampled from here on at the latest
slurm_wait_gone "$j" 40 || fail "job $j still queued"
t0=$EPOCHREALTIME
svc_bg_wait "$T/a2" 30 || fail "the attach of an ended job: exit $(cat "$T/a2.rc"): $(cat "$T/a2.err")"
t1=$EPOCHREALTIME
[ "$(json "$T/a2.out" 'd["ended_by"]')" = job-ended ] || fail "ended_by $(json "$T/a2.out" 'd["ended_by"]'), expected job-ended"
n=$(check_run "$T/a2.out")
# what the tasks spent after the attach began: their own total at exit
# less what /proc said just before the attach
python3 - "$(json "$T/a2.out" 'd["run_dir"]')" "$c0" "$W/slurm-$j.out" <<'PY' || fail "samples lost at the job's end: $(cat "$W/slurm-$j.out")"
import re, sqlite3, sys
run, c0 = sys.argv[1], float(sys.argv[2])
cpu = [float(m) for m in re.findall(r"^jobspin: .* cpu_s=([0-9.]+) ", open(sys.argv[3]).read(), re.M)]
db = sqlite3.connect(f"file:{run}/pivot.sqlite?mode=ro", uri=True)
sampled = db.execute("select coalesce(sum(value), 0) from measurements where counter = 'cpu-clock' "
                     "and hotspot is not null").fetchone()[0] / 1e9
want = 0.9 * (sum(cpu) - c0)
print(f"job-ended Run: samples = {sampled:.2f} CPU s; the {len(cpu)} tasks spent {sum(cpu) - c0:.2f} CPU s "
      f"after the attach began, wanted >= {want:.2f}")
tasks = db.execute("select count(distinct tgid) from loci where comm = 'jobspin'").fetchone()[0]
print(f"tasks sampled: {tasks} of the job's {len(cpu)} (two steps)")
sys.exit(0 if len(cpu) == 4 and tasks == 4 and sampled >= want and sum(cpu) - c0 > 2 else 1)
PY
echo "job end: the attach ended $(python3 -c "print(f'{$t1 - $t0:.2f}')") s after the job left the queue"
exit 0
