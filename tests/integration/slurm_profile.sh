# Profiling asked at submission, on a real Slurm (tests/lib/slurm.sh;
# nunatakd its own Aggregator), by a non-root user: `sbatch --nunatak=199`,
# `sbatch --nunatak`, `srun --nunatak`, `salloc --nunatak` and a job
# submitted with NUNATAK_PROFILE=1 in the environment each give,
# once the job has left the queue, a complete Run in <job working
# directory>/.nunatak, owned by the user, 0700, with its report.html (0600,
# the user's: written by the Aggregator), whose samples follow the
# frequency the node samples at (one per node, the node service's: the
# Prolog's line "profiling at F Hz" says it, and the Run's manifest when it
# records one) over the CPU time the job's two tasks report themselves
# (tests/workloads/jobspin); a FREQ asked that the node does not sample at
# is named in the Run's Degradation frequency-fixed (plain --nunatak and
# NUNATAK_PROFILE=1 ask none: no such Degradation); while such a job runs,
# `nunatak status --json` shows it among the jobs being profiled; a job that
# asked for nothing gets no Run at all.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init local
. "$TESTS_LIB/slurm.sh"
slurm_start_nunatakd job-prolog job-epilog
U1=${SLURM_TEST_USER1:-nunatak-u1}
slurm_user "$U1"
svc_copy_bin "$WORKLOADS/jobspin"

# job_run W J: the one Run of job J, complete when it left the queue
job_run() {
	local W=$1 j=$2 run
	slurm_wait_gone "$j" 60 || fail "job $j still queued after 60 s"
	[ "$(slurm_job_state "$j")" = COMPLETED ] || fail "job $j: $(slurm_job_state "$j"): $(cat "$W/slurm-$j.out")"
	run=$(find "$W/.nunatak" -mindepth 1 -maxdepth 1 -type d 2>/dev/null)
	[ -n "$run" ] && [ "$(wc -l <<<"$run")" = 1 ] || fail "job $j: not one Run in $W/.nunatak: $(ls -la "$W/.nunatak" 2>&1)"
	[ -f "$run/manifest.json" ] && [ -f "$run/pivot.sqlite" ] || fail "job $j: the Run is not complete: $(ls -la "$run")"
	[ "$(stat -c '%U %a' "$W/.nunatak" "$run" | sort -u)" = "$U1 700" ] ||
		fail "job $j: $(stat -c '%n %U %a' "$W/.nunatak" "$run"), expected $U1 700"
	# no nunatak command ends a Prolog job's Run: the Aggregator writes its page
	[ "$(stat -c '%U %a' "$run/report.html" 2>&1)" = "$U1 600" ] ||
		fail "job $j: report.html: $(stat -c '%U %a %s' "$run/report.html" 2>&1), expected $U1 600"
	grep -q 'id="nunatak-payload"' "$run/report.html" || fail "job $j: report.html holds no payload"
	echo "$run"
}
# the frequency job J's node says it samples at (the Prolog's line)
node_freq() {
	sed -n "s/^nunatak job-prolog: job $1: profiling at \([0-9]*\) Hz.*/\1/p" "$SLURM_DIR/log/nunatak.log" | tail -1
}
# rate W J RUN ASKED: samples per reported CPU second within 15 % of the
# node's frequency; the manifest agrees when it names one; an ASKED
# frequency the node does not sample at is a Degradation frequency-fixed
# naming both, none asked ("-") is none (checked last: the rest first)
later=()
rate() {
	local f
	f=$(node_freq "$2")
	[ -n "$f" ] || fail "job $2: the Prolog did not say 'profiling at F Hz': $(grep "job $2:" "$SLURM_DIR/log/nunatak.log")"
	python3 - "$1/slurm-$2.out" "$3" "$f" <<'PY' || fail "job $2: the samples do not follow the node's frequency $f Hz (see above)"
import json, re, sqlite3, sys
cpu = [float(m) for m in re.findall(r"^jobspin: .* cpu_s=([0-9.]+) ", open(sys.argv[1]).read(), re.M)]
db = sqlite3.connect(f"file:{sys.argv[2]}/pivot.sqlite?mode=ro", uri=True)
n = db.execute("select coalesce(sum(s.sample_count), 0) from samples s join loci l on l.id = s.locus "
               "where s.counter = 'cpu-clock' and l.comm = 'jobspin'").fetchone()[0]
tasks = db.execute("select count(distinct tgid) from loci where comm = 'jobspin'").fetchone()[0]
f = float(sys.argv[3])
r = n / sum(cpu) if cpu and sum(cpu) else 0
def freqs(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            if "frequency" in k and isinstance(v, (int, float)) and not isinstance(v, bool):
                yield path + k, v
            yield from freqs(v, path + k + ".")
    elif isinstance(x, list):
        for v in x:
            yield from freqs(v, path)
m = json.load(open(sys.argv[2] + "/manifest.json"))
named = [(k, v) for k, v in freqs(m) if "degradation" not in k]
print(f"{n} samples of {tasks} tasks over {sum(cpu):.2f} CPU s: {r:.0f} per CPU s; the node samples at {f:.0f} Hz; "
      f"manifest: {named or 'no frequency'}")
ok = len(cpu) == 2 and tasks == 2 and 0.85 * f <= r <= 1.15 * f
ok = ok and (not named or any(v == f for k, v in named))  # the manifest, if it says, says the truth
sys.exit(0 if ok else 1)
PY
	json "$3/manifest.json" '[(x["name"], x["message"]) for x in d["degradations"]]' >"$T/degr.txt"
	if [ "$4" = - ] || [ "$4" = "$f" ]; then
		! grep -q "frequency-fixed" "$T/degr.txt" ||
			later+=("job $2 asked no other frequency than the node's, yet its Run has frequency-fixed: $(cat "$T/degr.txt")")
	else
		grep -q "frequency-fixed" "$T/degr.txt" && grep -q "$f" "$T/degr.txt" && grep -q "$4" "$T/degr.txt" ||
			later+=("job $2 asked $4 Hz but was sampled at $f Hz: no Degradation frequency-fixed naming both ($(cat "$T/degr.txt"))")
	fi
}

# --- 1. --nunatak=199; seen by `nunatak status` while it runs
W=$(slurm_workdir "$U1")
j=$(slurm_sbatch "$U1" "$W" -n 2 --nunatak=199 --wrap "srun -n 2 $SVC/bin/jobspin 4")
slurm_wait_running "$j" 30 || fail "job $j not running"
seen=
for i in $(seq 1 30); do
	svc_in_node 0 "$NUNATAK" status --json >"$T/status.json" 2>/dev/null
	python3 - "$T/status.json" "$j" <<'PY' && seen=1 && break
import json, sys
def jobs(x):
    if isinstance(x, dict):
        if isinstance(x.get("job"), dict):
            yield x["job"]
        for v in x.values():
            yield from jobs(v)
    elif isinstance(x, list):
        for v in x:
            yield from jobs(v)
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit(1)
sys.exit(0 if any(str(job.get("id")) == sys.argv[2] for job in jobs(d)) else 1)
PY
	sleep 0.2
done
[ -n "$seen" ] || fail "job $j is not among the jobs being profiled: $(head -c 800 "$T/status.json")"
svc_in_node 0 "$NUNATAK" status 2>&1 | grep -qi 'jobs being profiled' || fail "nunatak status prints no 'Jobs being profiled'"
run=$(job_run "$W" "$j")
rate "$W" "$j" "$run" 199
echo "--nunatak=199: job $j, Run $(basename "$run")"

# --- 2. NUNATAK_PROFILE=1 (the plugin's default frequency)
W=$(slurm_workdir "$U1")
j=$(slurm_sbatch "$U1" "$W" NUNATAK_PROFILE=1 -n 2 --wrap "srun -n 2 $SVC/bin/jobspin 3")
run=$(job_run "$W" "$j")
rate "$W" "$j" "$run" -
echo "NUNATAK_PROFILE=1: job $j, Run $(basename "$run")"

# --- 2b. plain --nunatak asks no frequency either
W=$(slurm_workdir "$U1")
j=$(slurm_sbatch "$U1" "$W" -n 2 --nunatak --wrap "srun -n 2 $SVC/bin/jobspin 2")
run=$(job_run "$W" "$j")
rate "$W" "$j" "$run" -
echo "--nunatak: job $j, Run $(basename "$run")"

# --- 2c. srun --nunatak with its own allocation, salloc --nunatak
W=$(slurm_workdir "$U1")
(cd "$W" && slurm_as "$U1" srun -n 2 --nunatak "$SVC/bin/jobspin" 2) >"$W/slurm-srun.out" 2>"$T/srun.err" ||
	fail "srun --nunatak: $(cat "$T/srun.err")"
j=$(squeue -h -u "$U1" -t all -o '%A %j' | awk '$2 == "jobspin" {print $1}' | sort -n | tail -1)
cp "$W/slurm-srun.out" "$W/slurm-$j.out"
run=$(job_run "$W" "$j")
rate "$W" "$j" "$run" -
echo "srun --nunatak: job $j, Run $(basename "$run")"
W=$(slurm_workdir "$U1")
(cd "$W" && slurm_as "$U1" salloc -n 2 --nunatak srun -n 2 "$SVC/bin/jobspin" 2) >"$W/slurm-salloc.out" 2>"$T/salloc.err" ||
	fail "salloc --nunatak: $(cat "$T/salloc.err")"
j=$(sed -n 's/^salloc: Granted job allocation \([0-9]*\)$/\1/p' "$T/salloc.err")
[ -n "$j" ] || fail "salloc said no job id: $(cat "$T/salloc.err")"
cp "$W/slurm-salloc.out" "$W/slurm-$j.out"
run=$(job_run "$W" "$j")
rate "$W" "$j" "$run" -
echo "salloc --nunatak: job $j, Run $(basename "$run")"

# --- 3. nothing asked: no Run
W=$(slurm_workdir "$U1")
j=$(slurm_sbatch "$U1" "$W" -n 2 --wrap "srun -n 2 $SVC/bin/jobspin 1")
slurm_wait_gone "$j" 60 || fail "job $j still queued"
[ "$(slurm_job_state "$j")" = COMPLETED ] || fail "job $j: $(slurm_job_state "$j")"
[ ! -e "$W/.nunatak" ] || fail "a job that asked for nothing got a Run: $(ls -la "$W/.nunatak")"
[ ${#later[@]} = 0 ] || fail "$(printf '%s; ' "${later[@]}")"
exit 0
