# The aggregator away longer than the Agent's spool holds (spool_max_bytes
# tiny): the Batches beyond the cap are dropped, counted, and the Run names
# the loss (Degradation spool-full with the samples and Batches lost);
# what was kept is replayed when the aggregator returns; the application is
# not affected.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init netns
svc_nodes 1
svc_aggregator_start
svc_nunatakd_start 1 "spool_max_bytes = ${SERVICE_SPOOL_BYTES:-4096}"
svc_wait_agents 1
cd "$T"

svc_bg_run app svc_in_node 1 "$NUNATAK" run -o "$SVC/runs" --name spool -- "$WORKLOADS/hotspots" 16 7
svc_wait_run_dir "$SVC/runs" 20 >/dev/null || fail "no Run after 20 s: $(cat app.err)"
# the aggregator goes once it has stored a Batch, not 2 s after the start
wait_for 30 has_samples "$SVC/runs" 1 || fail "no Batch stored 30 s after the Run started: $(tail -3 app.err)"
svc_aggregator_kill KILL
echo "aggregator killed; away 10 s"
sleep 4
spooled=$(find "${SVC_NODE_SPOOL[1]}" -type f | wc -l)
sleep 6
svc_aggregator_start
echo "aggregator back ($spooled spool files seen while it was away)"
svc_bg_wait app 90
rc=$?
svc_through_daemon app.err
[ $rc = 7 ] || fail "exit $rc, expected the application's 7: $(cat app.err)"
grep -q '^hotspots: ok$' app.out || fail "the application's output changed: $(cat app.out)"
run=$(run_dir_of app.err)
[ -f "$run/manifest.json" ] || fail "no Run: $(cat app.err)"
svc_py - "$run" <<'PY' || fail "the loss is not counted and named (see above)"
import json, re, sqlite3, sys
run = sys.argv[1]
m = json.load(open(f"{run}/manifest.json"))
db = sqlite3.connect(f"file:{run}/pivot.sqlite?mode=ro", uri=True)
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)
degr = [d for d in m["degradations"] if d["name"].startswith("spool-full")]
print("degradations:", [(d["name"], d["message"]) for d in m["degradations"]])
check(degr, "a spool-full Degradation")
msg = degr[0]["message"] if degr else ""
nums = [int(x) for x in re.findall(r"(\d+) samples", msg)]
check(nums and nums[0] > 0, f"it counts the samples lost: {msg!r}")
check("node1" in msg or any(d.get("node") == "node1" for d in degr), "it names the node")
stored = db.execute("select coalesce(sum(sample_count), 0) from samples").fetchone()[0]
sent = dict(db.execute("select name, value from counters where node = 'node1'"))
print("stored", stored, "counters", sent)
if nums and "samples_sent" in sent:
    check(stored + nums[0] == sent["samples_sent"],
          f"stored {stored} + lost {nums[0]} == samples_sent {sent['samples_sent']}")
check(stored > 0, "what was kept is stored")
sys.exit(0 if ok else 1)
PY
echo "spool cap: loss counted and named"
