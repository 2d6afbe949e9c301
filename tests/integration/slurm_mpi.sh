# `sbatch --nunatak` of MPI jobs on a real Slurm (tests/lib/slurm.sh;
# nunatakd its own Aggregator), submitted by a non-root user: Open MPI
# launched by `srun --mpi=pmix -n 2` and MPICH under `mpiexec -n 2` inside
# the job. Once the job has left the queue (its Epilog returned), its Run
# is complete on disk in <job working directory>/.nunatak: owned by the
# user, 0700, both ranks, each rank's MPI calls counted exactly as the
# workload counted them itself (tests/workloads/mpi/pattern.c), their MPI
# time, and call sites in pattern.c; no Degradation nodes-missing.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init local
. "$TESTS_LIB/slurm.sh"
slurm_start_nunatakd job-prolog job-epilog
U1=${SLURM_TEST_USER1:-nunatak-u1}
slurm_user "$U1"
ran=0

# mpi_job FAMILY LAUNCH: a --nunatak job of 2 ranks of pattern.FAMILY
mpi_job() {
	local fam=$1 launch=$2 app W j run
	app="$WORKLOADS/mpi/pattern.$fam"
	if ! command -v "mpiexec.$fam" >/dev/null; then
		echo "$fam is not installed: not tried"
		return 0
	fi
	[ -x "$app" ] || fail "workload $app not built"
	svc_copy_bin "$app"
	W=$(slurm_workdir "$U1")
	printf '#!/bin/sh\n#SBATCH -n 2\n#SBATCH --nunatak\n%s %s 300 100 1000 100 4096\n' \
		"$launch" "$SVC/bin/pattern.$fam" >"$W/job.sh"
	chmod 0644 "$W/job.sh"
	j=$(slurm_sbatch "$U1" "$W" "$W/job.sh")
	slurm_wait_gone "$j" 120 || fail "$fam: job $j still queued after 120 s"
	[ "$(slurm_job_state "$j")" = COMPLETED ] || fail "$fam: job $j $(slurm_job_state "$j"): $(cat "$W/slurm-$j.out")"
	[ "$(grep -c '^rank=' "$W/slurm-$j.out")" = 2 ] || fail "$fam: the ranks did not report: $(cat "$W/slurm-$j.out")"
	# complete when the Epilog returned: no waiting here
	run=$(find "$W/.nunatak" -mindepth 1 -maxdepth 1 -type d 2>/dev/null)
	[ -n "$run" ] && [ "$(wc -l <<<"$run")" = 1 ] || fail "$fam: not one Run in $W/.nunatak: $(ls -la "$W/.nunatak" 2>&1)"
	[ -f "$run/manifest.json" ] && [ -f "$run/pivot.sqlite" ] ||
		fail "$fam: the Run is not complete when job $j left the queue: $(ls -la "$run"; tail -3 "$SLURM_DIR/log/nunatak.log")"
	[ "$(stat -c '%U %a' "$W/.nunatak" "$run" | sort -u)" = "$U1 700" ] ||
		fail "$fam: $(stat -c '%n %U %a' "$W/.nunatak" "$run"), expected $U1 700"
	[ "$(stat -c %U "$run"/* | sort -u)" = "$U1" ] || fail "$fam: files of the Run: $(ls -la "$run")"
	"$NUNATAK" summary --json "$run" >"$W/s.json" 2>"$W/s.err" || fail "$fam: summary --json: $(cat "$W/s.err")"
	python3 - "$W/s.json" "$W/slurm-$j.out" "$run" "$fam" <<'PY' || fail "$fam: the job's Run (see above)"
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
fam = sys.argv[4]
own = {}
for line in open(sys.argv[2]):
    if line.startswith("rank="):
        kv = dict(x.split("=") for x in line.split())
        own[int(kv["rank"])] = kv
ok = True
def check(cond, what):
    global ok
    print(f"{fam}: " + ("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)
ranks = {r["rank"]: r for r in d["ranks"]}
check(sorted(ranks) == [0, 1], f"ranks {sorted(ranks)}")
calls = {}
for site in d["mpi"]:
    for pr in site["per_rank"]:
        calls[(site["function"], pr["rank"])] = calls.get((site["function"], pr["rank"]), 0) + pr["calls"]
for r in (0, 1):
    for fn, key in (("MPI_Allreduce", "allreduce_calls"), ("MPI_Send", "send_calls"), ("MPI_Recv", "recv_calls")):
        check(calls.get((fn, r), 0) == int(own[r][key]), f"rank {r} {fn} calls {calls.get((fn, r), 0)} == {own[r][key]}")
    check(ranks.get(r, {}).get("mpi_time", 0) > 0, f"rank {r} MPI time {ranks.get(r, {}).get('mpi_time')}")
sites = [s["call_site"] for s in d["mpi"] if s["function"] == "MPI_Allreduce"]
check(sites and all(s.get("file") and s["file"].endswith("pattern.c") and s.get("line") for s in sites),
      f"Allreduce call sites {sites}")
m = json.load(open(sys.argv[3] + "/manifest.json"))
degr = [x["name"] for x in m.get("degradations", [])]
check("nodes-missing" not in degr, f"Degradations {degr}")
for x in m.get("degradations", []):
    print(f"{fam}:      {x['name']}: {x.get('message')}")
sys.exit(0 if ok else 1)
PY
	echo "$fam: job $j's Run $(basename "$run"): complete at the job's end, $(stat -c '%U %a' "$run")"
	ran=$((ran + 1))
}

if srun --mpi=list 2>&1 | grep -q pmix; then
	mpi_job openmpi "srun --mpi=pmix -n 2"
else
	echo "Slurm has no mpi/pmix plugin (srun --mpi=list): Open MPI not tried"
fi
mpi_job mpich "mpiexec.mpich -n 2"
[ "$ran" -gt 0 ] || skip "neither Open MPI nor MPICH is installed"
exit 0
