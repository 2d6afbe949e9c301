# `nunatak status --json` through a node's nunatakd: the Agent (node,
# incarnation, Targets with their Batch counters) and the aggregator's
# STATUS (every Agent known, the Run in progress, counters received /
# stored / duplicates / refused / agents_refused), and none of it left
# once the Run is over; `nunatak status` says it in text too.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init netns
svc_nodes 2
svc_aggregator_start
for i in 1 2; do svc_nunatakd_start "$i"; done
svc_wait_agents 2
cd "$T"

svc_bg_run app svc_in_node 1 "$NUNATAK" run -o "$SVC/runs" --name statusrun -- "$WORKLOADS/hotspots" 5
svc_wait_run_dir "$SVC/runs" 20 >/dev/null || fail "no Run after 20 s: $(cat app.err)"
# the status once a Batch with samples is stored, not 2.5 s after the start
wait_for 30 has_samples "$SVC/runs" 1 || fail "no Batch stored 30 s after the Run started: $(tail -3 app.err)"
svc_in_node 1 "$NUNATAK" status --json >during.json 2>during.err || fail "status --json: exit $?: $(cat during.err)"
svc_bg_wait app 60 || fail "the run: $(cat app.err)"
svc_through_daemon app.err
svc_in_node 1 "$NUNATAK" status --json >after.json 2>after.err || fail "status --json after: $(cat after.err)"
svc_in_node 2 "$NUNATAK" status >text.txt 2>text.err || fail "status (text): exit $?: $(cat text.err)"
# the Run over, the aggregator shows no active Target left (an Agent says
# Hello every second: 3 s at most)
for i in $(seq 1 15); do
	svc_agg_status >agg_after.json
	left=$(svc_py -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(a.get("active_targets", 0) for a in d["agents"]) + len(d["runs"]))' agg_after.json)
	[ "$left" = 0 ] && break
	sleep 0.2
done
[ "$left" = 0 ] || fail "3 s after the Run, the aggregator still shows active Targets or Runs: $(cat agg_after.json)"
svc_py - "$T/during.json" "$T/after.json" <<'PY' || fail "status --json (see above)"
import json, sys
during, after = (json.load(open(p)) for p in sys.argv[1:3])
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)
a = during.get("agent", {})
check(a.get("node") == "node1", f"agent node {a.get('node')}")
inc = a.get("incarnation")
try:  # a JSON integer, or its hex text (a u64 does not fit a double)
    inc_value = inc if isinstance(inc, int) else int(inc, 16)
except (TypeError, ValueError):
    inc_value = 0
check(inc_value != 0, f"agent incarnation {inc!r}")
targets = a.get("targets", [])
check(len(targets) >= 1, f"the Run's Target listed: {targets}")
for t in targets[:1]:
    for k in ("run_id", "batches_sent", "acked", "spooled", "dropped", "samples_sent"):
        check(k in t, f"target has {k}: {t.get(k)}")
    check(t.get("batches_sent", 0) >= 1 and t.get("samples_sent", 0) > 0, "the Target has sent Batches and samples")
aggs = during.get("aggregators", [])
check(len(aggs) >= 1, f"aggregators: {len(aggs)}")
g = aggs[0] if aggs else {}
nodes = sorted(x.get("node") for x in g.get("agents", []))
check(nodes == ["node1", "node2"], f"agents known to the aggregator: {nodes}")
for x in g.get("agents", [])[:1]:
    for k in ("version", "incarnation", "last_contact_s", "active_targets"):
        check(k in x, f"agent entry has {k}: {x.get(k)}")
check(any(x.get("node") == "node1" and x.get("active_targets", 0) >= 1 for x in g.get("agents", [])),
      "node1 has an active Target")
mine = [x for x in g.get("agents", []) if x.get("node") == "node1"]
if mine and inc_value:
    other = mine[0].get("incarnation")
    other = other if isinstance(other, int) else int(str(other), 16)
    check(other % 2**64 == inc_value, f"the aggregator knows node1's incarnation: {mine[0].get('incarnation')!r} vs {inc!r}")
    check(other >= 0, f"the aggregator shows it as the unsigned number it is: {mine[0].get('incarnation')!r}")
runs = g.get("runs", [])
check(len(runs) == 1 and runs[0].get("batches", 0) >= 1, f"the Run in progress: {runs}")
c = g.get("counters", {})
for k in ("received", "stored", "duplicates", "refused", "agents_refused"):
    check(k in c, f"counter {k}: {c.get(k)}")
ca = (after.get("aggregators") or [{}])[0].get("counters", {})
check(ca.get("stored", 0) >= c.get("stored", 0) >= 1, f"stored grows: {c.get('stored')} -> {ca.get('stored')}")
check(not after.get("agent", {}).get("targets"), f"no Target left after the Run: {after.get('agent', {}).get('targets')}")
sys.exit(0 if ok else 1)
PY
grep -q node2 text.txt || fail "status text does not name the node: $(cat text.txt)"
echo "status: $(tr '\n' ' ' <text.txt | head -c 300)"
