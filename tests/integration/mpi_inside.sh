# Samples inside MPI and nunatak's own probes (issue 21, item 3), on real
# Open MPI and MPICH: rank 0 of tests/workloads/mpi/busy_send.c sends 256
# KiB messages that rank 1 receives only after computing, so rank 0 spins
# in the shared-memory transport inside MPI_Send (Open MPI: vader,
# mca_btl_vader and libopen-pal; MPICH here: UCX, libuct, libucp and
# libucs, under libmpich's own progress loop); then both ranks call
# MPI_Iprobe 20000 times, each call two probe traps.
# Checked, per family: the spinning samples are shown as MPI_Send time
# called from send_blocks (summary --json and text) and add up to the time
# the workload measured itself inside MPI_Send; the transport's Hotspots
# are inside MPI; the probe traps (found in the pivot by their kernel
# frames, independently of nunatak's classifier) are counted as nunatak's
# and are in no Hotspot of the application.
. "$TESTS_LIB/common.sh"
need_root_bpf
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# check_family FAMILY "MPIRUN ARGS" TRANSPORT_MODULES (comma-separated
# prefixes of the modules the sender spins in)
check_family() {
	fam=$1 launcher=$2 transport=$3
	app="$WORKLOADS/mpi/busy_send.$fam"
	[ -x "$app" ] || fail "workload $app not built"
	mkdir -p "$T/$fam" && cd "$T/$fam" || fail "cd"
	# shellcheck disable=SC2086 # the launcher's words
	"$NUNATAK" run -- $launcher "$app" 20 262144 50 20000 \
		>app.out 2>err.txt || fail "$fam: exit $?: $(cat err.txt)"
	run=$(run_dir_of err.txt)
	[ -n "$run" ] || fail "$fam: no Run: $(cat err.txt)"
	"$NUNATAK" summary --json "$run" >s.json 2>/dev/null || fail "$fam: summary --json"
	"$NUNATAK" summary "$run" >s.txt 2>&1 || fail "$fam: summary"

	grep -qE 'inside MPI_Send \([0-9.]+% of it\), called from send_blocks \(busy_send\.c:[0-9]+\)' s.txt ||
		fail "$fam: no Hotspot read as MPI_Send time called from send_blocks: $(cat s.txt)"
	grep -q "^nunatak's probes: [0-9]* samples" s.txt ||
		fail "$fam: probe samples not counted apart: $(cat s.txt)"
	if grep -E '\[(kernel|uprobes|anon)\]' s.txt | grep -qiE 'JIT|as root'; then
		fail "$fam: nunatak's frames explained as JIT or 'run as root': $(grep -E 'JIT|as root' s.txt)"
	fi
	check_figures "$fam" "$transport" "$run" || fail "$fam: inside-MPI and probe figures (see above)"
}

# check_figures FAMILY TRANSPORT_MODULES RUN (in the family's directory)
check_figures() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sqlite3, sys
fam, transport = sys.argv[1], tuple(sys.argv[2].split(","))
d = json.load(open("s.json"))
own = {}
for line in open("app.out"):
    kv = dict(x.split("=") for x in line.split())
    own[int(kv["rank"])] = kv
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + fam + ": " + what)
    ok = ok and bool(cond)

# the spinning sender: MPI_Send time at send_blocks, 1 sample = 1 ms of CPU
send = 0
for h in d["hotspots"]:
    for c in (h["inside_mpi"] or {"calls": []})["calls"]:
        if c["function"] == "MPI_Send" and (c["call_site"] or {}).get("function") == "send_blocks":
            send += c["samples"]
# against the thread CPU time the workload measured inside MPI_Send (its
# wall time there is longer when the 2 cores are shared: the sampler sees
# CPU time); the traps of its 20 calls are a few ms at most
waited = float(own[0]["send_wait_s"])
cpu = float(own[0]["send_cpu_s"])
check(waited > 0.3, f"rank 0 waited {waited:.3f} s in MPI_Send (the workload's own clock)")
check(0.7 * cpu <= send / 1e3 <= 1.2 * cpu + 0.02,
      f"{send} samples of MPI_Send at send_blocks vs {cpu:.3f} CPU s measured by the workload")
spinning = [h for h in d["hotspots"] if h["module"].startswith(transport) and h["samples"] >= 30]
check(spinning, f"Hotspots of the transport {transport}: {len(spinning)}")
for h in spinning:
    inside = (h["inside_mpi"] or {"samples": 0})["samples"]
    check(inside >= 0.9 * h["samples"], f"{h['name']}: {inside} of {h['samples']} samples inside MPI")
check(d["inside_mpi"]["samples"] >= send and 0 < d["inside_mpi"]["share"] <= 1,
      f"Run inside MPI: {d['inside_mpi']}")

# the probe traps, found in the pivot by their kernel frames alone
db = sqlite3.connect(f"file:{sys.argv[3]}/pivot.sqlite?mode=ro", uri=True)
traps = ("asm_exc_int3", "uprobe_notify_resume", "__ia32_sys_uretprobe", "__x64_sys_uretprobe",
         "uprobe_prog_run")
q = ",".join("?" * len(traps))
probe_stacks = [r[0] for r in db.execute(f"""select distinct f.stack from stack_frames f
    join addresses a on a.id = f.address join hotspots h on h.id = a.hotspot
    where h.name in ({q}) or h.name like '[nunatak %'""", traps)]
n_probe = db.execute(f"""select coalesce(sum(s.sample_count), 0) from samples s join loci l on l.id = s.locus
    where l.comm like 'busy_send%' and s.counter = 'cpu-clock'
    and s.stack in ({','.join(map(str, probe_stacks)) or 'NULL'})""").fetchone()[0]
probes = d["nunatak_probes"]
check(n_probe > 0, f"{n_probe} samples of the application's processes in the probe traps")
check(probes["samples"] >= 0.9 * n_probe, f"nunatak_probes {probes['samples']} >= 0.9 x {n_probe}")
check(probes["share"] is not None and 0 < probes["share"] < 1, f"probe share {probes['share']}")
# a Hotspot whose every sample is a trap is not the application's
only_traps = {r[0] for r in db.execute(f"""select h.name from samples s join stack_frames f
    on f.stack = s.stack and f.position = 0 join addresses a on a.id = f.address
    join hotspots h on h.id = a.hotspot join loci l on l.id = s.locus
    where l.comm like 'busy_send%' group by h.id
    having sum(case when s.stack in ({','.join(map(str, probe_stacks)) or 'NULL'})
               then 0 else s.sample_count end) = 0""")}
listed = {h["name"] for h in d["hotspots"]}
check(not (only_traps & listed), f"trap-only Hotspots {sorted(only_traps)} not listed (listed: {sorted(only_traps & listed)})")
names = [h["name"] for h in d["hotspots"]]
check(not any(n.startswith("[nunatak") or n.startswith("[anon]") for n in names),
      "no nunatak frame among the Hotspots")
total = sum(h["samples"] for h in d["hotspots"])
check(total == d["totals"]["samples"], f"Hotspot samples {total} = totals {d['totals']['samples']}")
sys.exit(0 if ok else 1)
PY
}

families=0
if command -v mpirun.openmpi >/dev/null; then
	check_family openmpi "mpirun.openmpi --oversubscribe -n 2" mca_btl_vader,libopen-pal
	families=$((families + 1))
else
	echo "Open MPI is not installed: left out"
fi
# MPICH's intranode transport here is UCX (ch4:ucx): the sender spins in
# UCX's progress (libuct, libucp, libucs) and libmpich's own loop
if command -v mpirun.mpich >/dev/null; then
	check_family mpich "mpirun.mpich -n 2" libuct,libucp,libucs,libmpich
	families=$((families + 1))
else
	echo "MPICH is not installed: left out"
fi
[ "$families" -gt 0 ] || skip "neither Open MPI nor MPICH is installed"
echo PASS
