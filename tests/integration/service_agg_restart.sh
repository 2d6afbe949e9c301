# The aggregator killed with SIGKILL three times during a 60 s run on two
# nodes, and restarted each time (it resumes the open Run from its state
# directory; the Agents keep, resend and spool every unacknowledged Batch):
# Σ samples stored == Σ samples the Agents say they sent (their running
# counter samples_sent, stored with every Batch), every Batch the Agents
# sent is stored once (the pivot's batches table against batches_sent),
# the application's output and exit code are those of a run without nunatak.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init netns
command -v mpiexec.hydra >/dev/null || skip "mpiexec.hydra (mpich) is not installed"
svc_nodes 2
svc_aggregator_start
for i in 1 2; do
	svc_nunatakd_start "$i"
	svc_rsh_start "$i"
done
svc_wait_agents 2
cd "$T"
secs=${SERVICE_RESTART_SECONDS:-60}

svc_bg_run app svc_in_node 1 "$NUNATAK" run -o "$SVC/runs" --name restarts -- \
	$(svc_hydra 1 1 2) -n 2 -ppn 1 "$WORKLOADS/hotspots" "$secs" 5
run=$(svc_wait_run_dir "$SVC/runs" 20) || fail "no Run after 20 s: $(cat app.err)"
start=$(date +%s)
for at in $((secs / 6)) $((secs * 5 / 12)) $((secs * 2 / 3)); do
	while [ $(($(date +%s) - start)) -lt "$at" ]; do sleep 0.2; done
	svc_aggregator_kill KILL
	echo "t=$(($(date +%s) - start)) s: aggregator killed"
	sleep 3
	svc_aggregator_start
	echo "t=$(($(date +%s) - start)) s: aggregator restarted"
done
svc_bg_wait app $((secs + 120))
rc=$?
svc_through_daemon app.err
[ $rc = 5 ] || fail "exit $rc, expected the application's 5: $(cat app.err)"
[ "$(grep -c '^hotspots: ok$' app.out)" = 2 ] || fail "the application's output changed: $(cat app.out)"
[ "$(run_dir_of app.err)" = "$run" ] || fail "the Run printed is not the one made: $(run_dir_of app.err) vs $run"
svc_agg_status >status.json || fail "STATUS after the run"

svc_py - "$run" "$T/status.json" <<'PY' || fail "samples or Batches lost or stored twice (see above)"
import json, sqlite3, sys
run = sys.argv[1]
db = sqlite3.connect(f"file:{run}/pivot.sqlite?mode=ro", uri=True)
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)
stored = dict(db.execute("select l.node, sum(s.sample_count) from samples s join loci l on l.id = s.locus group by l.node"))
sent = dict(db.execute("select node, value from counters where name = 'samples_sent'"))
bsent = dict(db.execute("select node, value from counters where name = 'batches_sent'"))
cols = [r[1] for r in db.execute("pragma table_info(batches)")]
key = "node, incarnation, seq" if "incarnation" in cols else "node, seq"
nb = dict(db.execute("select node, count(*) from batches group by node"))
twice = db.execute(f"select {key}, count(*) from batches group by {key} having count(*) > 1").fetchall()
print("stored samples", stored, "samples_sent", sent, "batches stored", nb, "batches_sent", bsent)
check(sorted(stored) == ["node1", "node2"], f"samples from both nodes: {sorted(stored)}")
for node in ("node1", "node2"):
    check(node in sent, f"{node} samples_sent counter stored")
    check(stored.get(node) == sent.get(node), f"{node}: samples stored {stored.get(node)} == sent {sent.get(node)}")
    # batches_sent counts the Batches before the one that carries it, or with it
    check(node in bsent and nb.get(node, 0) - bsent[node] in (0, 1),
          f"{node}: Batches stored {nb.get(node)} against batches_sent {bsent.get(node)}")
check(not twice, f"no Batch stored twice (key {key}): {twice[:5]}")
m = json.load(open(f"{run}/manifest.json"))
names = [d["name"] for d in m["degradations"]]
print("degradations:", [(d["name"], d["message"]) for d in m["degradations"]])
check(not any(n.startswith(("node-lost", "storage-failed", "spool-full")) for n in names),
      "no node lost, nothing unstored")
st = json.load(open(sys.argv[2]))
print("aggregator counters after the run:", st.get("counters"))
sys.exit(0 if ok else 1)
PY
echo "three SIGKILLs: $(sql "$run" 'select sum(sample_count) from samples') samples stored, none twice"
