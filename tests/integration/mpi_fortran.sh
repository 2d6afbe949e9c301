# A Fortran MPI program (tests/workloads/mpi/sites_f.f90, gfortran) on
# Open MPI and MPICH: its MPI call sites name its own subroutines (through
# `use mpi` and `use mpi_f08`), not the Fortran bindings of the MPI
# library (libmpi_mpifh, libmpi_usempif08, libmpichfort); the calls are
# counted exactly, once each, with the bytes and the peer of the C call the
# binding makes; every function is named as in C (MPI_Recv: never
# PMPI_Recv, mpi_recv_ or MPI_RECV). A family not installed is left out;
# none: SKIPPED.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/mpi.sh"
need_root_bpf
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$T"

# N=40 Allreduce of D=300 doubles, M=25 Send/Recv of B=2048 characters,
# from each subroutine
check_fortran_family() {
	local fam=$1 app run
	app="$WORKLOADS/mpi/sites_f.$fam"
	[ -x "$app" ] || fail "workload $app not built"
	"$NUNATAK" run --mpi-events -- $(mpi_launch "$fam") "$app" 40 300 25 2048 \
		>"$fam.out" 2>"$fam.err" || fail "$fam: exit $?: $(cat "$fam.err")"
	run=$(run_dir_of "$fam.err")
	"$NUNATAK" summary --json "$run" >"$fam.json" 2>/dev/null || fail "$fam: summary --json"
	python3 - "$fam" "$T/$fam.json" "$T/$fam.out" "$run" <<'PY' || fail "$fam: Fortran call sites (see above)"
import json, sqlite3, sys
fam, d = sys.argv[1], json.load(open(sys.argv[2]))
own = {}
for line in open(sys.argv[3]):
    kv = dict(x.split("=") for x in line.split())
    own[int(kv["rank"])] = {k: int(v) for k, v in kv.items()}
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + f"{fam}: {what}")
    ok = ok and bool(cond)

check(sorted(own) == [0, 1], f"both ranks printed their counts: {sorted(own)}")
app = f"sites_f.{fam}"
# every call site is in the program, in the routine that made the call
for s in d["mpi"]:
    cs = s["call_site"]
    check(cs.get("module") == app and cs.get("file", "").endswith("sites_f.f90") and cs.get("line"),
          f"{s['function']} called from {cs.get('function')} in {cs.get('module')}")
    f = s["function"]
    check(f.startswith("MPI_") and f[4:5].isupper() and f[5:] == f[5:].lower(),
          f"function named as in C: {f}")
# (function, subroutine) -> the workload's own count of each rank
want = {("MPI_Allreduce", "sum_over_ranks"): "allreduce",
        ("MPI_Allreduce", "sum_over_ranks_f08"): "allreduce_f08",
        ("MPI_Send", "pass_message"): "send", ("MPI_Send", "pass_message_f08"): "send_f08",
        ("MPI_Recv", "pass_message"): "recv", ("MPI_Recv", "pass_message_f08"): "recv_f08"}
def routine(cs):  # gfortran's __module_MOD_name
    return (cs.get("function") or "").split("_MOD_")[-1]
calls, nbytes = {}, {}
for s in d["mpi"]:
    key = (s["function"], routine(s["call_site"]))
    nbytes[key] = nbytes.get(key, 0) + s["bytes"]
    for pr in s["per_rank"]:
        calls[key + (pr["rank"],)] = calls.get(key + (pr["rank"],), 0) + pr["calls"]
for (fn, sub), name in want.items():
    for r in (0, 1):
        got, exp = calls.get((fn, sub, r), 0), own[r][name]
        check(got == exp, f"rank {r} {fn} from {sub}: {got} calls, the program made {exp}")
    size = 8 * own[0]["d"] if fn == "MPI_Allreduce" else own[0]["b"]
    exp = size * (own[0][name] + own[1][name])
    check(nbytes.get((fn, sub)) == exp, f"{fn} from {sub}: {nbytes.get((fn, sub))} bytes == {exp}")
other = {k: v for k, v in calls.items() if k[:2] not in want and k[0] not in ("MPI_Init", "MPI_Finalize")}
check(not other, f"no other call counted: {other}")
for r in (0, 1):
    check(calls.get(("MPI_Init", "MAIN__", r)) == 1 and calls.get(("MPI_Finalize", "MAIN__", r)) == 1,
          f"rank {r} MPI_INIT and MPI_FINALIZE once each, from the main program")
# the Events carry the C call's arguments: bytes and peer
db = sqlite3.connect(f"file:{sys.argv[4]}/pivot.sqlite?mode=ro", uri=True)
names = [n for (n,) in db.execute("select distinct name from events")]
check(names and all(n.startswith("MPI_") for n in names), f"Event names {names}")
sends = db.execute("select count(*) from events where name='MPI_Send' and peer=1 and bytes=?",
                   (own[0]["b"],)).fetchone()[0]
check(sends == own[0]["send"] + own[0]["send_f08"], f"Send Events to rank 1 of {own[0]['b']} bytes: {sends}")
recvs = db.execute("select count(*) from events where name='MPI_Recv' and peer=0 and bytes=?",
                   (own[0]["b"],)).fetchone()[0]
check(recvs == own[1]["recv"] + own[1]["recv_f08"], f"Recv Events from rank 0: {recvs}")
sys.exit(0 if ok else 1)
PY
	# the text names the subroutines too
	grep -qE '^  MPI_Allreduce .*sites_f\.f90:[0-9]+ \(__sites_legacy_MOD_sum_over_ranks\)$' "$fam.err" ||
		fail "$fam: the summary's call sites: $(cat "$fam.err")"
}

families=0
for fam in openmpi mpich; do
	if ! command -v "mpiexec.$fam" >/dev/null || ! command -v "mpif90.$fam" >/dev/null; then
		echo "$fam or its Fortran compiler is not installed: left out"
		continue
	fi
	check_fortran_family "$fam"
	families=$((families + 1))
done
[ "$families" -gt 0 ] || skip "neither Open MPI nor MPICH with gfortran is installed"
