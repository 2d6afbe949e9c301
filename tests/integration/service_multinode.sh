# Three nodes (network namespaces, a nunatakd in each, netns_only), one
# nunatak-aggregator over TCP+CURVE: `nunatak run -- mpiexec.hydra` on node
# 1 fans one MPI rank out to each node through a launcher that starts it
# outside the launcher's process tree (as sshd would), hydra forwards the
# environment, so the Run token reaches every rank → ONE Run, with every
# node's Loci, each rank on its own node, and each node's samples where
# the workload put its work (rank r computes r+1 units: 1:2:3).
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init netns
command -v mpiexec.hydra >/dev/null || skip "mpiexec.hydra (mpich) is not installed"
app="$WORKLOADS/mpi/pattern.mpich"
[ -x "$app" ] || fail "workload $app not built"

svc_nodes 3
svc_aggregator_start
for i in 1 2 3; do
	svc_nunatakd_start "$i"
	svc_rsh_start "$i"
done
svc_wait_agents 3

cd "$T"
# 3 ranks, compute unit 400 ms: rank r computes (r+1) * 400 ms of CPU
svc_in_node 1 "$NUNATAK" run -o "$SVC/runs" --name multinode -- \
	$(svc_hydra 1 1 2 3) -n 3 -ppn 1 "$app" 400 20 1000 20 4096 >app.out 2>err.txt ||
	fail "exit $?: $(cat err.txt)"
svc_through_daemon err.txt
run=$(run_dir_of err.txt)
[ -f "$run/manifest.json" ] || fail "no Run: $(cat err.txt)"
[ "$(ls "$SVC/runs" | wc -l)" = 1 ] || fail "more than one Run: $(ls "$SVC/runs")"
[ "$(wc -l <app.out)" = 3 ] || fail "the application did not print one line per rank: $(cat app.out)"

svc_py - "$run" "$T/app.out" <<'PY' || fail "the Run does not hold every node's work (see above)"
import json, sqlite3, sys
run, out = sys.argv[1], sys.argv[2]
db = sqlite3.connect(f"file:{run}/pivot.sqlite?mode=ro", uri=True)
m = json.load(open(f"{run}/manifest.json"))
own = {}
for line in open(out):
    kv = dict(x.split("=") for x in line.split())
    own[int(kv["rank"])] = kv
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)

nodes = sorted(r[0] for r in db.execute("select distinct node from loci"))
check(nodes == ["node1", "node2", "node3"], f"Loci of every node: {nodes}")
manifest_nodes = sorted(n.get("node", n.get("name")) if isinstance(n, dict) else n for n in m.get("nodes", []))
check(manifest_nodes == ["node1", "node2", "node3"], f"manifest nodes: {manifest_nodes}")
rank_node = dict(db.execute("select rank, node from loci where rank is not null group by rank, node"))
check(rank_node == {0: "node1", 1: "node2", 2: "node3"}, f"each rank on its node: {rank_node}")
dup = db.execute("select rank, count(distinct node) from loci where rank is not null group by rank having count(distinct node) > 1").fetchall()
check(not dup, f"no rank seen by two Agents: {dup}")
# compute_units samples per node against the rank's own CPU time
comp = dict(db.execute("""select l.node, sum(m.value) from measurements m join hotspots h on h.id = m.hotspot
    join loci l on l.id = m.locus where h.name = 'compute_units' and m.counter = 'cpu-clock' group by l.node"""))
print("compute_units cpu-clock per node (s):", {k: round(v / 1e9, 3) for k, v in comp.items()})
total = sum(comp.values()) or 1
for r in (0, 1, 2):
    node = f"node{r + 1}"
    share = comp.get(node, 0) / total
    check(abs(share - (r + 1) / 6) <= 0.05, f"{node} share of compute_units {share:.3f} within 0.05 of {(r + 1) / 6:.3f}")
    mine, theirs = comp.get(node, 0) / 1e9, float(own[r]["compute_cpu_s"])
    check(abs(mine - theirs) <= 0.15 * theirs, f"{node} compute_units {mine:.3f} s within 15 % of the rank's own {theirs:.3f} s")
per_node = dict(db.execute("select l.node, sum(s.sample_count) from samples s join loci l on l.id = s.locus group by l.node"))
print("samples per node:", per_node)
check(all(per_node.get(f"node{i}", 0) > 0 for i in (1, 2, 3)), "samples from every node")
sys.exit(0 if ok else 1)
PY
echo "one Run, three nodes: $(sql "$run" 'select node, count(*) from loci group by node' | tr '\n' ' ')"
