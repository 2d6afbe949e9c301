# calibration rows and the envelope fit, end to end, with the cache in $T:
#   - `nunatak calibrate --rows cal.tsv` appends one row per timed kernel
#     repetition (5 x triad, fma_dp, fma_sp) to the Machine's rows file and
#     to cal.tsv, both 0600, the same rows: 12 columns, backend = the
#     Machine identity, times with 6 decimals, counts as integers and flags
#     true/false (as OCANNL's autotuner writes them), triad 24 B per 2 FLOP,
#     fma no byte, fma_sp opaque (single precision is not the flops_dp leg);
#   - every one of them kept by the autotuner's reader (of_line's rules,
#     applied by tests/lib/ocannl_of_line.py), and fitted by
#     `--format ocannl` into its model_peak_* lines;
#   - a cache hit measures nothing and appends nothing, and says so;
#   - `nunatak fit cal.tsv --json`: one backend, 10 rows, 5 opaque, each leg
#     the best rate of the rows recomputed here, and within 1e-4 of the
#     Ceiling calibrate reported from the same repetitions;
#   - the text's [ceilings] block pasted into nunatak.toml: `nunatak run`'s
#     manifest has flops_dp and dram_bandwidth measured, source fit, the
#     printed values, the reason naming the fit and the file; with another
#     Machine's backend the table is ignored, with a warning;
#   - a malformed line fails the fit with file:line (exit 1); --margin 0.5
#     is bad usage (125).
. "$TESTS_LIB/common.sh"
command -v cc >/dev/null || skip "no C compiler to build the kernels"
export XDG_CACHE_HOME=$T/cache
cd "$T"

"$NUNATAK" calibrate --rows cal.tsv --json >c.json 2>c.err || fail "calibrate: exit $?: $(cat c.err)"
id=$(json c.json 'd["machine"]["identity"]')
machine_rows=$XDG_CACHE_HOME/nunatak/machines/$id.rows.tsv
[ -f "$machine_rows" ] || fail "no rows file $machine_rows"
[ "$(stat -c %a "$machine_rows")" = 600 ] || fail "rows file mode $(stat -c %a "$machine_rows")"
[ "$(stat -c %a cal.tsv)" = 600 ] || fail "--rows file mode $(stat -c %a cal.tsv)"
cmp -s "$machine_rows" cal.tsv || fail "the two rows files differ"
python3 - "$id" cal.tsv <<'PY' || fail "the rows are not what the kernels did"
import re, sys
identity, path = sys.argv[1], sys.argv[2]
rows = [l.rstrip("\n").split("\t") for l in open(path)]
kinds = {}
for r in rows:
    assert len(r) == 12, r
    backend, digest, routine, label, ms, model, kernels, flops, nbytes, fa, ba, opaque = r
    assert backend == identity, backend
    assert re.fullmatch(r"[0-9a-f]{16}", digest), digest
    assert re.fullmatch(r"\d+\.\d{6}", ms) and float(ms) > 0, ms
    assert model == "" or re.fullmatch(r"\d+\.\d{6}", model), model
    assert kernels == "1" and fa == "false" and ba == "false", r
    assert re.fullmatch(r"[1-9]\d*", flops) and re.fullmatch(r"0|[1-9]\d*", nbytes), r
    f, b = int(flops), int(nbytes)
    if routine == "triad":
        assert b == 12 * f and opaque == "false", r
    else:
        assert b == 0 and opaque == ("true" if routine == "fma_sp" else "false"), r
    assert re.search(r"rep=\d$", label), label
    kinds[routine] = kinds.get(routine, 0) + 1
assert kinds == {"triad": 5, "fma_dp": 5, "fma_sp": 5}, kinds
PY
python3 "$TESTS_LIB/ocannl_of_line.py" cal.tsv >of_line.out || fail "the autotuner would drop rows: $(cat of_line.out)"
grep -qx "15 rows kept" of_line.out || fail "the autotuner's reader: $(cat of_line.out)"

"$NUNATAK" calibrate --rows cal.tsv >c2.out 2>c2.err || fail "cached calibrate: exit $?: $(cat c2.err)"
grep -q "nothing measured, no row appended to 'cal.tsv'" c2.err || fail "the cache hit does not say: $(cat c2.err)"
[ "$(wc -l <cal.tsv)" = 15 ] || fail "a cache hit appended rows"

"$NUNATAK" fit cal.tsv --json >fit.json 2>fit.err || fail "fit: exit $?: $(cat fit.err)"
python3 - cal.tsv fit.json c.json <<'PY' || fail "the fit is not the best exact rate"
import json, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
fit = json.load(open(sys.argv[2]))["fits"]
cal = {c["name"]: c for c in json.load(open(sys.argv[3]))["ceilings"]}
assert len(fit) == 1, fit
f = fit[0]
assert (f["timed"], f["rows"], f["opaque"], f["multi_kernel"], f["fission_slack"]) == (10, 10, 5, 0, None), f
best_f = max(float(r[7]) / (float(r[4]) / 1e3) for r in rows if r[11] == "false")
best_b = max(float(r[8]) / (float(r[4]) / 1e3) for r in rows if r[11] == "false")
for leg, best, ceiling in (("peak_flops", best_f, "flops_dp"),
                           ("peak_memory_bandwidth", best_b, "dram_bandwidth")):
    v = f[leg]["value"]
    assert abs(v / best - 1) < 1e-9, (leg, v, best)
    c = cal[ceiling]["value"]
    print(f"{leg} {v:.7g}, calibrate's {ceiling} {c:.7g}")
    assert abs(v / c - 1) < 1e-4, (leg, v, c)
PY

"$NUNATAK" fit cal.tsv >fit.txt || fail "fit (text): exit $?"
grep -q "^# peak_flops bound by 'fma_dp/threads=" fit.txt || fail "no binding row: $(cat fit.txt)"
"$NUNATAK" fit cal.tsv --format ocannl >fit.ocannl || fail "fit --format ocannl: exit $?"
grep -q "^# backend $id: 10 timed rows (5 opaque excluded, 0 approx-flops / 0 approx-bytes excluded per leg, 0 multi-kernel), " fit.ocannl &&
	grep -q '^# compute-leg binding row: fma_dp/threads=.* ([0-9a-f]\{16\})$' fit.ocannl &&
	grep -q '^model_peak_flops=[1-9]\.[0-9]\{6\}e+[1-9][0-9]*$' fit.ocannl &&
	grep -q '^model_peak_memory_bandwidth=[1-9]\.[0-9]\{6\}e+[1-9][0-9]*$' fit.ocannl ||
	fail "--format ocannl: $(cat fit.ocannl)"
grep -v '^#' fit.txt >nunatak.toml
chmod 600 nunatak.toml
flops=$(sed -n 's/^peak_flops = \([^ ]*\).*/\1/p' nunatak.toml)
[ -n "$flops" ] || fail "no peak_flops in the block: $(cat fit.txt)"

"$NUNATAK" fit --margin 0.5 cal.tsv >/dev/null 2>&1
[ $? = 125 ] || fail "--margin 0.5 is not bad usage"
{ cat cal.tsv; printf 'x\ty\n'; } >bad.tsv
"$NUNATAK" fit cal.tsv bad.tsv >/dev/null 2>bad.err
[ $? = 1 ] || fail "a malformed line does not fail the fit"
grep -q "bad.tsv:16: 2 columns" bad.err || fail "no file:line: $(cat bad.err)"

[ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] || {
	echo "SKIPPED: the Run part needs root and BTF (the rows and the fit passed)"
	exit 77
}
"$NUNATAK" run -- /bin/true >run.out 2>run.err || fail "run: exit $?: $(tail -3 run.err)"
run=$(run_dir_of run.err)
python3 - "$run/manifest.json" "$flops" "$T/nunatak.toml" <<'PY' || fail "the Run does not carry the fit"
import json, sys
m = json.load(open(sys.argv[1]))
c = {x["name"]: x for x in m["machine"]["ceilings"]}
for name in ("flops_dp", "dram_bandwidth"):
    x = c[name]
    assert (x["quality"], x["source"]) == ("measured", "fit"), x
    assert x["reason"].startswith("fitted Ceiling ([ceilings] of %s): envelope fit of 10 rows (nunatak fit cal.tsv) on " % sys.argv[3]), x
assert c["flops_dp"]["value"] == float(sys.argv[2]), c["flops_dp"]
assert c["flops_sp"]["source"] == "calibration", c["flops_sp"]
PY
sed -i "s/^backend = .*/backend = \"0000\"/" nunatak.toml
"$NUNATAK" run -- /bin/true >run2.out 2>run2.err || fail "run: exit $?: $(tail -3 run2.err)"
grep -q "ignoring the \[ceilings\] of the configuration: fitted on Machine '0000', this one is '$id'" run2.err ||
	fail "no warning for another Machine's table: $(cat run2.err)"
run=$(run_dir_of run2.err)
[ "$(json "$run/manifest.json" '[x["source"] for x in d["machine"]["ceilings"] if x["name"] == "flops_dp"][0]')" = calibration ] ||
	fail "another Machine's fit was taken"
exit 0
