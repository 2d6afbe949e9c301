# `nunatak summary` finds Runs (latest, by path, by name) and explains what
# it cannot find; the configuration cascade names Runs and places them, and
# a broken nunatak.toml is refused with file:line:column before launch.
. "$TESTS_LIB/common.sh"
need_root_bpf

mkdir -p "$T/project/sub" && cd "$T/project"
cat >nunatak.toml <<'TOML'
name = "from-config"
runs_dir = "runs"

[sampling]
frequency = 499
TOML
cd sub
"$NUNATAK" run -- "$WORKLOADS/hotspots" 0.5 >/dev/null 2>err.txt || fail "run: $(cat err.txt)"
run=$(run_dir_of err.txt)
case "$run" in runs/from-config-*) ;; *) fail "config name/runs_dir not used: $run" ;; esac
[ "$(json "$run/manifest.json" 'd["provenance"]["effective_configuration"]["sampling.frequency"]["source"]')" = "$T/project/nunatak.toml" ] ||
	fail "frequency source not recorded"
# the frequency is per second of CPU time: on a loaded machine the 0.5 s
# workload gets less CPU, and as many fewer samples
samples=$(sql "$run" "select sum(sample_count) from measurements where hotspot is not null")
cpu_ms=$(sql "$run" "select cast(sum(value) / 1000000 as integer) from measurements where hotspot is null and counter in ('cpu_time_user', 'cpu_time_system')")
[ "${cpu_ms:-0}" -ge 100 ] || fail "the workload had ${cpu_ms:-no} ms of CPU time: too little to judge the frequency"
assert_near "$samples" $((cpu_ms * 499 / 1000)) $((cpu_ms * 499 / 1000 / 4)) "samples at 499 Hz for $cpu_ms ms of CPU time"

"$NUNATAK" run --name flagged -- "$WORKLOADS/hotspots" 0.1 >/dev/null 2>err.txt
case "$(run_dir_of err.txt)" in runs/flagged-*) ;; *) fail "--name does not override the config" ;; esac

"$NUNATAK" summary 2>s.txt || fail "summary of the latest Run failed"
grep -q "Run: runs/flagged-" s.txt || fail "summary did not pick the latest Run: $(tail -1 s.txt)"
"$NUNATAK" summary "$run" 2>s.txt || fail "summary by path failed"
grep -q heavy_kernel s.txt || fail "summary by path lacks heavy_kernel"
"$NUNATAK" summary "$(basename "$run")" --json >s.json 2>/dev/null || fail "summary by name failed"
json s.json 'd["totals"]["samples"]' >/dev/null || fail "summary --json lacks totals"
"$NUNATAK" summary nowhere 2>s.txt && fail "summary of a missing Run succeeded"
grep -q "no Run at 'nowhere'" s.txt || fail "unclear message for a missing Run: $(cat s.txt)"

printf 'name = "x"\n[sampling]\nfrequency = "fast"\n' >../nunatak.toml
"$NUNATAK" run -- true 2>err.txt
[ $? = 125 ] || fail "a broken config must exit 125 before launch"
grep -q "nunatak.toml:3:13" err.txt || fail "no file:line:column in: $(cat err.txt)"

# llvm-symbolizer missing: announced before launch, recorded, and names
# still come from the ELF symbols (function level, no source line)
printf '[tools]\nllvm-symbolizer = "/nonexistent/llvm-symbolizer"\n' >../nunatak.toml
"$NUNATAK" run -- "$WORKLOADS/hotspots" 0.5 >/dev/null 2>err.txt || fail "run without symbolizer: $(cat err.txt)"
grep -q 'degradation symbolizer-missing' err.txt || fail "missing symbolizer not announced: $(cat err.txt)"
run=$(run_dir_of err.txt)
[ "$(sql "$run" "select resolution_level from hotspots where name='heavy_kernel'")" = function ] ||
	fail "without symbolizer heavy_kernel is not named at function level"
json "$run/manifest.json" '[x["name"] for x in d["degradations"]]' | grep -q symbolizer-missing ||
	fail "the Run does not record symbolizer-missing"
