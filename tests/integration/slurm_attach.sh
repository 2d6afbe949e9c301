# `nunatak attach JOBID --duration 5` on a real Slurm (tests/lib/slurm.sh)
# with nunatakd its own Aggregator, munge and slurmctld of the test cluster:
# a running 30 s job of a non-root user, two busy tasks (srun -n 2
# hotspots): another non-root user's attach is refused (exit 1, a message
# naming whose job it is, no Run written, no job Target left); the owner's
# attach gives a finalized Run in <job working directory>/.nunatak, owned
# by them, 0700, with the job's hotspots (heavy_kernel ahead of
# light_kernel) and samples standing for >= 90 % of 5 s x the CPUs the job
# kept busy meanwhile (its tasks' CPU time from /proc over the attach's wall
# time); root's attach is granted too, its Run the job owner's; the job is
# never stopped or signalled (it completes, exit 0).
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init local
. "$TESTS_LIB/slurm.sh"
slurm_start_nunatakd attach
U1=${SLURM_TEST_USER1:-nunatak-u1}
U2=${SLURM_TEST_USER2:-nunatak-u2}
slurm_user "$U1"
slurm_user "$U2"
svc_copy_bin "$NUNATAK" "$WORKLOADS/hotspots"
W=$(slurm_workdir "$U1")
W2=$(slurm_workdir "$U2")
sock=${SVC_SOCK[0]}
FREQ=99
as_nunatak() { # as_nunatak USER DIR ARGS...
	local u=$1 d=$2
	shift 2
	(cd "$d" && slurm_as "$u" env NUNATAK_AGENT_SOCKET="$sock" NUNATAK_MUNGE_SOCKET="$SLURM_MUNGE_SOCKET" \
		"$SVC/bin/nunatak" "$@")
}

j=$(slurm_sbatch "$U1" "$W" -n 2 --wrap "srun -n 2 $SVC/bin/hotspots 30")
slurm_wait_running "$j" 30 || fail "job $j not running after 30 s: $(scontrol show job "$j" | grep State)"
for i in $(seq 1 100); do
	mapfile -t pids < <(slurm_step_pids "$j" 0)
	[ "${#pids[@]}" -ge 2 ] && break
	sleep 0.1
done
[ "${#pids[@]}" -ge 2 ] || fail "job $j: its step 0 has ${#pids[@]} tasks, expected 2"
echo "job $j of $U1 runs: tasks ${pids[*]}"

# --- 1. another user: refused, nothing collected, nothing written
as_nunatak "$U2" "$W2" attach "$j" --duration 5 -F "$FREQ" >"$T/u2.out" 2>"$T/u2.err"
rc=$?
[ "$rc" = 1 ] || fail "$U2's attach to $U1's job: exit $rc, expected 1: $(cat "$T/u2.err")"
grep -q "cannot attach to job $j" "$T/u2.err" || fail "$U2's refusal does not name the job: $(cat "$T/u2.err")"
grep -q "$U1" "$T/u2.err" || fail "$U2's refusal does not say whose job it is: $(cat "$T/u2.err")"
echo "refused: $(grep -m1 'cannot attach' "$T/u2.err")"
[ ! -e "$W/.nunatak" ] || [ -z "$(ls -A "$W/.nunatak")" ] || fail "a Run was written for a refused attach: $(ls -la "$W/.nunatak")"
[ ! -e "$W2/.nunatak" ] || fail "a runs directory was made for $U2: $(ls -la "$W2")"
st=$(svc_in_node 0 "$NUNATAK" status --json 2>&1)
! grep -qE "\"job_id\": ?$j[^0-9]" <<<"$st" || fail "a refused attach left a job Target: $st"

# --- 2. the owner: a Run with the job's hotspots, covering the busy CPUs
c0=$(slurm_cpu_of "${pids[@]}")
t0=$EPOCHREALTIME
as_nunatak "$U1" "$W" attach "$j" --duration 5 -F "$FREQ" --json >"$T/u1.json" 2>"$T/u1.err"
rc=$?
t1=$EPOCHREALTIME
c1=$(slurm_cpu_of "${pids[@]}")
[ "$rc" = 0 ] || fail "$U1's attach: exit $rc: $(cat "$T/u1.err")"
grep -q "attached to job $j (owner $U1" "$T/u1.err" || fail "no 'attached' line: $(cat "$T/u1.err")"
# one sampling frequency per node: a -F it does not sample at is said so,
# and the samples follow the frequency used (checked below)
f=$(sed -n "s/^nunatak: this node samples at \([0-9]*\) Hz, not at the $FREQ Hz asked.*/\1/p" "$T/u1.err")
f=${f:-$FREQ}
run=$(json "$T/u1.json" 'd["run_dir"]')
[ "$(json "$T/u1.json" 'd["ended_by"]')" = duration ] || fail "ended_by $(json "$T/u1.json" 'd["ended_by"]'), expected duration"
case "$run" in "$W/.nunatak/"*) ;; *) fail "the Run $run is not in the job's working directory $W/.nunatak" ;; esac
[ -f "$run/manifest.json" ] && [ -f "$run/pivot.sqlite" ] || fail "the Run is not complete: $(ls -la "$run")"
[ "$(stat -c '%U %a' "$run")" = "$U1 700" ] || fail "the Run is $(stat -c '%U %a' "$run"), expected $U1 700"
[ "$(stat -c %U "$run/manifest.json" "$run/pivot.sqlite" | sort -u)" = "$U1" ] || fail "the Run's files: $(ls -la "$run")"
python3 - "$run" "$c0" "$c1" "$t0" "$t1" "$f" <<'PY' || fail "the attach's samples (see above)"
import sqlite3, sys
run, c0, c1, t0, t1, f = sys.argv[1], *map(float, sys.argv[2:])
db = sqlite3.connect(f"file:{run}/pivot.sqlite?mode=ro", uri=True)
n = db.execute("select coalesce(sum(sample_count), 0) from samples where counter = 'cpu-clock'").fetchone()[0]
hot = dict(db.execute("""select h.name, sum(m.value) from measurements m join hotspots h on h.id = m.hotspot
    where m.counter = 'cpu-clock' group by h.name"""))
sampled = sum(hot.values()) / 1e9     # CPU seconds the samples stand for
busy = (c1 - c0) / (t1 - t0)          # CPUs the job kept busy meanwhile
want = 0.9 * 5 * busy
heavy, light = hot.get("heavy_kernel", 0), hot.get("light_kernel", 0)
tasks = db.execute("select count(distinct tgid) from loci where comm = 'hotspots'").fetchone()[0]
print(f"{n} samples = {sampled:.2f} CPU s; busy CPUs {busy:.2f}: wanted >= 0.9 x 5 s x {busy:.2f} = {want:.2f} CPU s; "
      f"heavy_kernel {heavy/1e9:.2f} s, light_kernel {light/1e9:.2f} s; tasks sampled {tasks}")
# the samples follow the frequency used: at least 0.75 x f over the 5 s the
# attach lasts on the busy CPUs, at most 1.15 x f over all the CPU time the
# tasks spent from before the attach to after its Run was finalized (the
# wall time t1 - t0 includes the attach's start and finalization, longer
# on a loaded CI machine, so a rate over it is not a bound from below)
low, high = 0.75 * f * 5 * busy, 1.15 * f * (c1 - c0)
print(f"sampled at {f:.0f} Hz: {n} samples, wanted {low:.0f} .. {high:.0f}")
ok = sampled >= want and heavy > 2 * light > 0 and tasks == 2 and low <= n <= high
sys.exit(0 if ok else 1)
PY
echo "$U1's attach: Run $(basename "$run"), $(stat -c '%U %a' "$run"), $(python3 -c "print(f'{$t1 - $t0:.1f}')") s"

# --- 3. root may attach too; the Run is still the job owner's
(cd "$W" && env NUNATAK_AGENT_SOCKET="$sock" NUNATAK_MUNGE_SOCKET="$SLURM_MUNGE_SOCKET" \
	"$NUNATAK" attach "$j" --duration 1 --json) >"$T/root.json" 2>"$T/root.err" ||
	fail "root's attach: exit $?: $(cat "$T/root.err")"
run2=$(json "$T/root.json" 'd["run_dir"]')
[ "$run2" != "$run" ] && [ -f "$run2/manifest.json" ] || fail "root's attach: no new Run: $run2"
[ "$(stat -c '%U %a' "$run2")" = "$U1 700" ] || fail "root's attach Run is $(stat -c '%U %a' "$run2"), expected $U1 700"
echo "root's attach: Run $(basename "$run2"), $(stat -c '%U %a' "$run2")"

# the job ran on, untouched
slurm_wait_gone "$j" 60 || fail "job $j still queued 60 s later"
[ "$(slurm_job_state "$j")" = COMPLETED ] || fail "job $j: $(slurm_job_state "$j") after the attach"
[ "$(grep -c 'hotspots: ok' "$W/slurm-$j.out")" = 2 ] || fail "the job's tasks did not finish: $(cat "$W/slurm-$j.out")"
exit 0
