# Two hot functions built to take 75 % and 25 % of the CPU: the Run's
# shares are within 5 percentage points, named at line level, and the
# summary, its JSON twin and the pivot agree.
. "$TESTS_LIB/common.sh"
need_root_bpf

cd "$T"
"$NUNATAK" run --name shares -- "$WORKLOADS/hotspots" 3 >out.txt 2>err.txt || fail "exit $?: $(cat err.txt)"
run=$(run_dir_of err.txt)
[ -d "$run" ] || fail "no Run directory in: $(cat err.txt)"
case "$run" in .nunatak/shares-[0-9]*-[0-9]*) ;; *) fail "Run not named after --name: $run" ;; esac
[ -f "$run/manifest.json" ] && [ -f "$run/pivot.sqlite" ] || fail "Run lacks manifest.json or pivot.sqlite"
grep -q 'heavy_kernel' err.txt || fail "summary does not name heavy_kernel: $(cat err.txt)"

"$NUNATAK" summary --json >s.json 2>/dev/null || fail "summary --json failed"
heavy=$(json s.json '[h["share"] for h in d["hotspots"] if h["name"]=="heavy_kernel"][0]')
light=$(json s.json '[h["share"] for h in d["hotspots"] if h["name"]=="light_kernel"][0]')
assert_near "$heavy" 0.75 0.05 "heavy_kernel share"
assert_near "$light" 0.25 0.05 "light_kernel share"
[ "$(json s.json '[h["resolution_level"] for h in d["hotspots"] if h["name"]=="heavy_kernel"][0]')" = line ] ||
	fail "heavy_kernel not resolved to a line"
json s.json '[h["source_file"] for h in d["hotspots"] if h["name"]=="heavy_kernel"][0]' | grep -q 'hotspots.c$' ||
	fail "heavy_kernel's source file is not hotspots.c"
[ "$(json s.json '[h["module"] for h in d["hotspots"] if h["name"]=="heavy_kernel"][0]')" = hotspots ] ||
	fail "heavy_kernel's module is not 'hotspots'"

# the samples cover the CPU time the kernel accounted to the process
# (3 s on one CPU when the machine is idle; less when it is busy)
samples=$(json s.json 'd["totals"]["samples"]')
cpu=$(sql "$run" "select sum(m.value)/1e9 from measurements m join loci l on l.id=m.locus
	where m.hotspot is null and m.counter in ('cpu_time_user','cpu_time_system') and l.comm='hotspots'")
expected=$(python3 -c "print($cpu * 997)")
assert_near "$samples" "$expected" "$(python3 -c "print(0.1 * $expected + 20)")" \
	"samples against the process' CPU time ($cpu s) at 997 Hz"

# the pivot holds the same, with nothing absolute in it
total=$(sql "$run" "select sum(sample_count) from measurements where hotspot is not null")
[ "$total" = "$samples" ] || fail "pivot measurements ($total) disagree with the summary ($samples)"
[ "$(sql "$run" "pragma user_version")" = 6 ] || fail "pivot schema version is not 6"
[ "$(json "$run/manifest.json" 'd["format"]["name"]')" = nunatak-run ] || fail "manifest format"
[ "$(json "$run/manifest.json" 'd["run"]["exit_code"]')" = 0 ] || fail "manifest exit_code"
[ "$(json "$run/manifest.json" 'd["run"]["command"][-1]')" = 3 ] || fail "manifest command"
[ "$(json "$run/manifest.json" 'd["provenance"]["effective_configuration"]["sampling.frequency"]["value"]')" = 997 ] ||
	fail "manifest lacks the effective configuration"
echo "heavy=$heavy light=$light samples=$samples"
