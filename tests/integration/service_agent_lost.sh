# An Agent killed (SIGKILL) while the ranks of its node run: the
# application's output and exit code are those of a run without nunatak,
# and the Run names the lost node (Degradation node-lost, on that node).
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

app="$(svc_hydra 1 1 2) -n 2 -ppn 1 $WORKLOADS/hotspots 5 3"
netns_exec 1 $app >bare.out 2>bare.err
bare_rc=$?
svc_bg_run app svc_in_node 1 "$NUNATAK" run -o "$SVC/runs" --name lost -- $app
run=$(svc_wait_run_dir "$SVC/runs" 20) || fail "no Run after 20 s: $(cat app.err)"
# node2 is lost once it is in the Run: a Batch of it stored, not 2 s after
node2_stored() { [ "$(sql "$run" "select count(*) from batches where node = 'node2'" 2>/dev/null)" -ge 1 ] 2>/dev/null; }
wait_for 30 node2_stored || fail "no Batch of node2 stored 30 s after the Run started: $(tail -3 app.err)"
svc_nunatakd_kill 2 KILL
echo "node2's nunatakd killed"
svc_bg_wait app 90
rc=$?
svc_through_daemon app.err
[ $rc = "$bare_rc" ] || fail "exit $rc, the application alone exits $bare_rc: $(cat app.err)"
[ "$(sort app.out)" = "$(sort bare.out)" ] || fail "output changed: $(cat app.out) vs $(cat bare.out)"
run=$(run_dir_of app.err)
[ -f "$run/manifest.json" ] || fail "no Run: $(cat app.err)"
json "$run/manifest.json" '"\n".join(x["name"] + " " + x.get("node", "") + ": " + x["message"] for x in d["degradations"])' >degr.txt
grep -q '^node-lost' degr.txt || fail "no node-lost Degradation: $(cat degr.txt)"
grep '^node-lost' degr.txt | grep -q 'node2' || fail "node-lost does not name node2: $(cat degr.txt)"
grep '^node-lost' degr.txt | grep -q 'node1' && fail "node-lost names node1, which was not lost: $(cat degr.txt)"
n=$(sql "$run" "select sum(s.sample_count) from samples s join loci l on l.id = s.locus where l.node = 'node1'")
[ "${n:-0}" -gt 0 ] || fail "nothing from node1"
echo "node2 lost: exit $rc kept, output kept, $(grep node-lost degr.txt | head -1)"
