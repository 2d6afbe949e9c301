# `nunatak fit` on rows as OCANNL's autotuner writes them, and its report
# as the autotuner prints it. No calibration here: the rows are a fixture.
#
# The fixture is, byte for byte, what the autotuner's writer
# (Cost_model.Calibration.to_line) produces: "%s\t%s\t%s\t%s\t%.6f\t%s\t%d
# \t%d\t%d\t%b\t%b\t%b" — backend digest routine label, measured_ms and
# model_ms floored to 6 decimals (model_ms empty: no model coverage),
# kernels flops bytes as %d, the three flags as true/false — plus rows of
# its older 11-column schema (no routine), one row per line. The answer,
# by hand (rate = count / (ms x 1e-3); legs over the non-opaque rows with
# measured_ms > 0 whose count for the leg is exact and > 0):
#   cc:    A 4e9/2e-3 = 2e12 FLOP/s, 1.2e9/2e-3 = 6e11 B/s; B 1e9/8e-4 =
#          1.25e12, 6e8/8e-4 = 7.5e11; C (11 columns) flops approximate
#          (it would give 4e12), 1e8/2.5e-4 = 4e11; D opaque (9e13: out);
#          E 1e11, 2e11, its model 1.2 ms above its 1 ms: a violation; F two
#          kernels, 1e11, 1e11, 1e9/2e12 + 1e9/7.5e11 = 1.8333e-3 s under its
#          10 ms: no slack; J measured 0: not timed, its approximate flags
#          not counted. peak_flops 2e12 (A), bandwidth 7.5e11 (B); 5 timed
#          rows, 1 opaque, 1 approx-flops, 0 approx-bytes, 1 multi-kernel,
#          1 violation. Printed x (1 + 2e-6): 2.000004e+12, 7.500015e+11.
#   cuda:  G 2e12 FLOP/s, no byte; H (11 columns) 1e12 B/s, no FLOP; I two
#          kernels, 2e9/2e12 + 1e9/1e12 = 2 ms over its 1.5 ms: both legs x
#          the fission slack 4/3 (printed 1.333333, not bumped): 2.666667e12
#          and 1.333333e12, printed x (1 + 2e-6): 2.666672e+12, 1.333336e+12.
#   metal: K 8e6/4e-3 = 2e9 FLOP/s (printed 2.000004e+9: the autotuner
#          drops an exponent's leading zeros), no byte: no memory leg.
# Without the bump the constants would print 2.000000e+12, 7.500000e+11.
#
# Also: the rows nunatak wrote before (flags 0/1, counts %.17g) still fit;
# the test's own of_line reader (tests/lib/ocannl_of_line.py) keeps every
# fixture row and drops those older ones (so it can fail); --json and
# --format ocannl together are bad usage (125), and so is --format xml.
. "$TESTS_LIB/common.sh"
cd "$T"

{
	printf 'cc\t3f2a9c01d4e5b6a7\tmatmul_fwd\tcand-0\t2.000000\t1.500000\t1\t4000000000\t1200000000\tfalse\tfalse\tfalse\n'
	printf 'cc\t8b0e7d6c5a4f3e21\tmatmul_fwd\tcand-1\t0.800000\t\t1\t1000000000\t600000000\tfalse\tfalse\tfalse\n'
	printf 'cuda\td1\tgemm\ttile-a\t1.000000\t\t1\t2000000000\t0\tfalse\tfalse\tfalse\n'
	printf 'cc\t5c5c5c5c00000001\tcand-legacy\t0.250000\t0.300000\t1\t1000000000\t100000000\ttrue\tfalse\tfalse\n'
	printf 'cc\t0d0d0d0d0d0d0d0d\tsoftmax\tcand-2\t0.100000\t\t1\t9000000000\t9000000000\tfalse\tfalse\ttrue\n'
	printf 'cuda\td2\tvec-4\t1.000000\t\t1\t0\t1000000000\tfalse\tfalse\tfalse\n'
	printf 'cc\te1e1e1e1e1e1e1e1\trelu\tcand-0\t1.000000\t1.200000\t1\t100000000\t200000000\tfalse\tfalse\tfalse\n'
	printf 'cc\tf2f2f2f2f2f2f2f2\tmlp\tfused-2\t10.000000\t\t2\t1000000000\t1000000000\tfalse\tfalse\tfalse\n'
	printf 'cuda\td3\tfused\tpair\t1.500000\t\t2\t2000000000\t1000000000\tfalse\tfalse\tfalse\n'
	printf 'cc\t9a9a9a9a9a9a9a9a\twarmup\tcand-9\t0.000000\t\t1\t5\t5\ttrue\ttrue\tfalse\n'
	printf 'metal\td4\treduce\tsum-1\t4.000000\t\t1\t8000000\t0\tfalse\tfalse\tfalse\n'
} >calib.tsv

python3 "$TESTS_LIB/ocannl_of_line.py" calib.tsv >reader.out || fail "the of_line reader drops fixture rows: $(cat reader.out)"
grep -qx "11 rows kept" reader.out || fail "the of_line reader: $(cat reader.out)"

"$NUNATAK" fit calib.tsv --format ocannl >ocannl.txt 2>ocannl.err || fail "fit --format ocannl: exit $?: $(cat ocannl.err)"
cat >expected.txt <<'EOF'
# backend cc: 5 timed rows (1 opaque excluded, 1 approx-flops / 0 approx-bytes excluded per leg, 1 multi-kernel), 1 recorded bound violation
# compute-leg binding row: matmul_fwd/cand-0 (3f2a9c01d4e5b6a7)
model_peak_flops=2.000004e+12
# memory-leg binding row: matmul_fwd/cand-1 (8b0e7d6c5a4f3e21)
model_peak_memory_bandwidth=7.500015e+11
# backend cuda: 3 timed rows (0 opaque excluded, 0 approx-flops / 0 approx-bytes excluded per leg, 1 multi-kernel), 0 recorded bound violations
# fission slack 1.333333 applied to both legs, forced by multi-kernel row: fused/pair (d3)
# compute-leg binding row: gemm/tile-a (d1)
model_peak_flops=2.666672e+12
# memory-leg binding row: vec-4 (d2)
model_peak_memory_bandwidth=1.333336e+12
# backend metal: 1 timed row (0 opaque excluded, 0 approx-flops / 0 approx-bytes excluded per leg, 0 multi-kernel), 0 recorded bound violations
# compute-leg binding row: reduce/sum-1 (d4)
model_peak_flops=2.000004e+9
# no scoreable row constrains model_peak_memory_bandwidth
EOF
diff expected.txt ocannl.txt >ocannl.diff || fail "fit --format ocannl is not the autotuner's report: $(cat ocannl.diff)"

# the same fit in every digit (JSON: not bumped)
"$NUNATAK" fit calib.tsv --format json >fit.json || fail "fit --format json: exit $?"
"$NUNATAK" fit calib.tsv --json >fit2.json || fail "fit --json: exit $?"
cmp -s fit.json fit2.json || fail "--json is not --format json"
python3 - fit.json <<'PY' || fail "the JSON fit is not the hand-computed one"
import json, sys
fits = {f["backend"]: f for f in json.load(open(sys.argv[1]))["fits"]}
assert list(fits) == ["cc", "cuda", "metal"], list(fits)
cc, cuda, metal = fits["cc"], fits["cuda"], fits["metal"]
def near(v, want):
    assert abs(v / want - 1) < 1e-12, (v, want)
assert (cc["timed"], cc["opaque"], cc["flops_approx"], cc["bytes_approx"],
        cc["multi_kernel"], cc["violations"]) == (5, 1, 1, 0, 1, 1), cc
near(cc["peak_flops"]["value"], 2e12)
assert cc["peak_flops"]["row"] == {"name": "matmul_fwd/cand-0", "digest": "3f2a9c01d4e5b6a7"}, cc
near(cc["peak_memory_bandwidth"]["value"], 7.5e11)
assert cc["fission_slack"] is None, cc
near(cuda["fission_slack"]["value"], 4 / 3)
near(cuda["peak_flops"]["value"], 2e12 * 4 / 3)
near(cuda["peak_memory_bandwidth"]["value"], 1e12 * 4 / 3)
assert cuda["peak_memory_bandwidth"]["row"]["name"] == "vec-4", cuda
near(metal["peak_flops"]["value"], 2e9)
assert metal["peak_memory_bandwidth"] is None, metal
PY

# the toml block of the same rows (the default format)
"$NUNATAK" fit calib.tsv >fit.toml || fail "fit: exit $?"
grep -qx 'peak_flops = 2.000004e+12  # FLOP/s' fit.toml || fail "toml: $(cat fit.toml)"

# nunatak's older rows (0/1 flags, %.17g counts) and the new ones, one fit
{
	printf 'cc\told1\tmatmul_fwd\tcand-5\t0.500000\t\t1\t2000000000\t1e+09\t0\t0\t0\n'
	printf 'cc\told2\tcand-6\t1.000000\t\t1\t3.5\t100\t1\t0\t1\n'
} >old.tsv
"$NUNATAK" fit calib.tsv old.tsv --format ocannl >mixed.txt 2>mixed.err || fail "older rows: exit $?: $(cat mixed.err)"
# old1: 2e9/5e-4 = 4e12 FLOP/s, 1e9/5e-4 = 2e12 B/s: both legs; old2 opaque
grep -qx 'model_peak_flops=4.000008e+12' mixed.txt || fail "older rows not fitted: $(cat mixed.txt)"
grep -qx '# memory-leg binding row: matmul_fwd/cand-5 (old1)' mixed.txt || fail "older rows: $(cat mixed.txt)"
grep -q '^# backend cc: 6 timed rows (2 opaque excluded' mixed.txt || fail "older rows: $(cat mixed.txt)"
# the autotuner's reader drops both (0/1 flags, a %.17g count): ours can fail
python3 "$TESTS_LIB/ocannl_of_line.py" old.tsv >old.out && fail "the of_line reader keeps 0/1 rows: $(cat old.out)"
grep -q "old.tsv:1: dropped: Int.of_string '1e+09'" old.out || fail "of_line reader: $(cat old.out)"
grep -q "old.tsv:2: dropped: Int.of_string '3.5'" old.out || fail "of_line reader: $(cat old.out)"

# the autotuner's own complaint of the issue: true/false read, not refused
printf 'cc\td\tr\tl\t1.000000\t\t1\t1\t1\tmaybe\tfalse\tfalse\n' >bad.tsv
"$NUNATAK" fit bad.tsv >/dev/null 2>bad.err
[ $? = 1 ] || fail "a bad flag does not fail the fit"
grep -q "bad.tsv:1: column 10 (flops_approx): 'maybe' is not true, false, 0 or 1" bad.err || fail "bad flag: $(cat bad.err)"

"$NUNATAK" fit calib.tsv --json --format ocannl >/dev/null 2>usage.err
[ $? = 125 ] || fail "--json with --format ocannl is not bad usage"
grep -q -- "--json and --format ocannl disagree" usage.err || fail "usage: $(cat usage.err)"
"$NUNATAK" fit calib.tsv --format xml >/dev/null 2>usage.err
[ $? = 125 ] || fail "--format xml is not bad usage"
"$NUNATAK" fit --help >help.txt || fail "fit --help: exit $?"
grep -q -- "--format=FORMAT" help.txt && grep -q "model_peak_flops=" help.txt || fail "--help does not teach --format: $(cat help.txt)"
exit 0
