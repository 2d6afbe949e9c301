# Scale past one aggregator: two nunatak-aggregators, each node lists
# both; every Run goes to endpoints[FNV-1a 64 of run_id mod 2] (agent_route)
# and only that aggregator writes it: 6 Runs on node 1 (each seen in the
# STATUS of its aggregator alone, while it runs), then one Run on both
# nodes through hydra (the other node OPENed by the same aggregator),
# each complete; the aggregators' stored counters add up to the Batches
# of the Runs.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init netns
command -v mpiexec.hydra >/dev/null || skip "mpiexec.hydra (mpich) is not installed"
svc_nodes 2
svc_aggregator_start
svc_aggregator2_start
for i in 1 2; do
	svc_nunatakd_start "$i"
	svc_rsh_start "$i"
done
svc_wait_agents 2
SVC_AGG_ENDPOINT=$SVC_AGG2_ENDPOINT svc_wait_agents 2
cd "$T"

# which aggregator holds the Run being written in DIR: "1 RUN_ID" or "2 RUN_ID"
holder() {
	local k ep
	for k in 1 2; do
		[ "$k" = 1 ] && ep=${SVC_AGG_ENDPOINTS%% *} || ep=${SVC_AGG_ENDPOINTS##* }
		SVC_AGG_ENDPOINT=$ep svc_agg_status 2>/dev/null |
			svc_py -c 'import json,sys; d=json.load(sys.stdin)
for r in d.get("runs", []):
    if r.get("run_dir", "").startswith(sys.argv[1]): print(sys.argv[2], r["run_id"])' "$1" "$k"
	done
}
route() { # FNV-1a 64 of the run_id, mod 2, as 1 or 2
	svc_py -c 'import sys
h = 0xcbf29ce484222325
for c in sys.argv[1].encode():
    h = ((h ^ c) * 0x100000001b3) % 2**64
print(h % 2 + 1)' "$1"
}

seen=" "
for k in 1 2 3 4 5 6; do
	mkdir -m 0700 "$SVC/runs/r$k"
	svc_bg_run "app$k" svc_in_node 1 "$NUNATAK" run -o "$SVC/runs/r$k" --name route -- "$WORKLOADS/hotspots" 1.5
	run=$(svc_wait_run_dir "$SVC/runs/r$k" 20) || fail "no Run $k: $(cat "app$k.err")"
	sleep 0.5
	h=$(holder "$run")
	[ "$(wc -l <<<"$h")" = 1 ] && [ -n "$h" ] || fail "Run $k is held by: '${h//$'\n'/; }' (expected one aggregator)"
	agg=${h%% *} id=${h#* }
	[ "$agg" = "$(route "$id")" ] || fail "Run $k ($id) is on aggregator $agg, its route is $(route "$id")"
	svc_bg_wait "app$k" 60 || fail "Run $k: $(cat "app$k.err")"
	svc_through_daemon "app$k.err"
	[ "$(json "$run/manifest.json" 'len(d["passes"]) > 0 and d["run"]["exit_code"]')" = 0 ] ||
		fail "Run $k is not final: $(head -c 300 "$run/manifest.json")"
	[ "$(sql "$run" 'select sum(sample_count) > 0 from samples')" = 1 ] || fail "Run $k has no samples"
	seen="$seen$agg "
	echo "Run $k: $id on aggregator $agg (its route)"
done
case "$seen" in *" 1 "*) ;; *) echo "(note: all 6 Runs routed to aggregator 2)" ;; esac
case "$seen" in *" 2 "*) ;; *) echo "(note: all 6 Runs routed to aggregator 1)" ;; esac

# a Run on both nodes: the OPEN comes from the Run's own aggregator
mkdir -m 0700 "$SVC/runs/multi"
svc_in_node 1 "$NUNATAK" run -o "$SVC/runs/multi" --name both -- \
	$(svc_hydra 1 1 2) -n 2 -ppn 1 "$WORKLOADS/hotspots" 1.5 >multi.out 2>multi.err ||
	fail "the two-node Run: exit $?: $(cat multi.err)"
svc_through_daemon multi.err
run=$(run_dir_of multi.err)
nodes=$(sql "$run" "select group_concat(node) from (select distinct l.node from samples s join loci l on l.id = s.locus order by 1)")
[ "$nodes" = "node1,node2" ] || fail "the two-node Run has samples from: $nodes"

# every Batch stored once, by one of the two
total=0
for r in "$SVC"/runs/*/*/; do
	total=$((total + $(sql "$r" 'select count(*) from batches')))
done
stored=0
for ep in $SVC_AGG_ENDPOINTS; do
	n=$(SVC_AGG_ENDPOINT=$ep svc_agg_status | svc_py -c 'import json,sys; print(json.load(sys.stdin)["counters"]["stored"])')
	echo "aggregator $ep stored $n Batches"
	stored=$((stored + n))
done
[ "$stored" = "$total" ] || fail "the aggregators stored $stored Batches, the Runs hold $total"
echo "two aggregators: 7 Runs, each on its route, $total Batches stored once"
