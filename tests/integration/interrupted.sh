# nunatak killed mid-run: the application goes on; what was published
# until then is in the Run, and `nunatak summary` finalizes it, once, with
# a Degradation saying so.
. "$TESTS_LIB/common.sh"
need_root_bpf

cd "$T"
# killed once the Run holds 500 samples (Batches stored), not after a fixed
# time: the start alone takes more than a second, more on a loaded machine;
# the application runs 6 s, long enough to be still running then
"$NUNATAK" run -o runs -- "$WORKLOADS/hotspots" 6 >app.out 2>err.txt &
nunatak_pid=$!
wait_for 30 has_samples runs 500 || fail "no 500 samples stored in the Run 30 s after the start: $(tail -3 err.txt)"
kill -KILL "$nunatak_pid"
wait "$nunatak_pid" 2>/dev/null
grep -q 'hotspots: ok' app.out && fail "the application ended before nunatak was killed: not a kill mid-run"
kept=$(stored_samples "$(ls -d runs/hotspots-*)")
# the application was not killed with it: it finishes and prints
app_ok() { grep -q 'hotspots: ok' app.out; }
wait_for 30 app_ok || fail "the application did not survive nunatak"

"$NUNATAK" summary -o runs --json >s.json 2>s.err || fail "summary of an interrupted Run: $(cat s.err)"
grep -q "was never finalized" s.err || fail "no word that the Run is finalized late: $(cat s.err)"
heavy=$(json s.json '[h["share"] for h in d["hotspots"] if h["name"]=="heavy_kernel"][0]')
assert_near "$heavy" 0.75 0.05 "heavy_kernel share in the interrupted Run"
samples=$(json s.json 'd["totals"]["samples"]')
[ "$samples" -ge "$kept" ] || fail "only $samples samples kept of the $kept stored before the kill"
json s.json '[x["name"] for x in d["degradations"]]' | grep -q run-interrupted ||
	fail "no run-interrupted Degradation"
run=$(ls -d runs/hotspots-*)
[ "$(json "$run/manifest.json" 'd["run"]["exit_code"]')" = None ] || fail "an exit code was invented"

"$NUNATAK" summary -o runs 2>s2.err >/dev/null || fail "second summary"
grep -q "was never finalized" s2.err && fail "finalized twice"
echo "samples=$samples heavy=$heavy"
