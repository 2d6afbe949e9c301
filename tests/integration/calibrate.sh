# `nunatak calibrate` on this machine, with its cache in $T:
#   - the first calibration measures (one progress line per kernel) and
#     writes the Machine profile (0600 in a 0700 directory);
#   - the second is a cache hit: cached true, no kernel run, fast, the same
#     Ceilings; the text form has one line per Ceiling, and says the
#     network was not measured and how to;
#   - `-- LAUNCHER` on a cache hit measures the network only: a launcher
#     that does not exist → exit 125 with the reason, the cache untouched;
#     MPICH's mpiexec → network_latency and network_bandwidth measured, the
#     CPU Ceilings kept from the cache, then cached; Open MPI's mpirun too;
#   - no flops value above 1.25 x this CPU's peak (FLOP/cycle from its SIMD
#     flags x its highest frequency x the threads) without being
#     `estimated`, and none above twice that at all (the kernel counts
#     right);
#   - `--force` measures again and its Ceilings agree with an earlier
#     calibration within 10 %, and the best dram_bandwidth is within 25 %
#     of the best of an independent STREAM triad (tests/workloads/
#     calibration/stream_check.c, OpenMP, compiled here) run right after
#     each calibration. The machine is shared with other sessions: up to
#     5 calibrations, any two agreeing is enough (dram_bandwidth on these VMs:
#     repetitions spread 20-30 %, best-of-5 1.7-2.25e10 B/s from one
#     calibration to the next, each said `estimated`); when none do and nunatak
#     said every one was `estimated` (a loaded Machine, a spread), the test
#     says SKIPPED with that reason; a disagreement nunatak called
#     `measured` fails.
. "$TESTS_LIB/common.sh"
SRC=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
command -v cc >/dev/null || skip "no C compiler to build the kernels"
export XDG_CACHE_HOME=$T/cache
cd "$T"
cc -O3 -march=native -fopenmp -Wall -o stream_check "$SRC/tests/workloads/calibration/stream_check.c" ||
	fail "cannot build the STREAM check"

ms() { date +%s%3N; }

# no flops above 1.25 x the peak of this CPU's SIMD units (its highest
# frequency: the frequency nunatak's theory uses is not higher) without a
# downgrade, none above twice that at all
peak_check() {
	python3 - "$@" <<'PY' || fail "a value above the theoretical peak"
import glob, json, re, sys
info = open("/proc/cpuinfo").read()
flags = set(re.search(r"^flags\s*:(.*)$", info, re.M).group(1).split()) if "flags" in info else set()
dp = 32 if "avx512f" in flags else 16 if {"avx2", "fma"} <= flags else None
if dp is None:
    print("no x86 FMA flags: the peak check is not made here"); sys.exit(0)
hz = [float(x) * 1e6 for x in re.findall(r"^cpu MHz\s*:\s*(\S+)", info, re.M)]
hz += [float(x) * 1e9 for x in re.findall(r"@ *([0-9.]+) *GHz", info)]
try:
    hz.append(float(open("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read()) * 1e3)
except OSError:
    pass
ok = True
for f in sys.argv[1:]:
    d = json.load(open(f))
    threads = len(d["machine"]["allocation"]["affinity_mask"])
    for c in d["ceilings"]:
        if c["name"] not in ("flops_dp", "flops_sp") or c["value"] is None:
            continue
        peak = dp * (2 if c["name"] == "flops_sp" else 1) * max(hz) * threads
        print(f"{f} {c['name']} {c['value']:.4g} {c['quality']}: peak {peak:.4g}")
        if c["value"] > 2 * peak:
            print("FAIL twice the peak: the kernel counts FLOP wrong")
            ok = False
        elif c["value"] > 1.25 * peak and c["quality"] != "estimated":
            print("FAIL above 1.25 x the peak and not estimated")
            ok = False
sys.exit(0 if ok else 1)
PY
}

"$NUNATAK" calibrate --json >c1.json 2>c1.err || fail "calibrate: exit $?: $(cat c1.err)"
[ "$(grep -c '^nunatak: calibrate: .* kernel, ' c1.err)" = 3 ] || fail "not one progress line per kernel: $(cat c1.err)"
[ "$(json c1.json 'd["cached"]')" = False ] || fail "the first calibration says cached"
profile=$(ls "$XDG_CACHE_HOME"/nunatak/machines/*.json) || fail "no Machine profile cached"
[ "$(stat -c %a "$profile")" = 600 ] || fail "profile mode $(stat -c %a "$profile")"
[ "$(stat -c %a "$XDG_CACHE_HOME/nunatak/machines")" = 700 ] || fail "cache dir not 0700"
./stream_check >s1.txt || fail "stream_check failed"
peak_check c1.json

start=$(ms)
"$NUNATAK" calibrate --json >c2.json 2>c2.err || fail "cache hit: exit $?: $(cat c2.err)"
elapsed=$(($(ms) - start))
[ "$(json c2.json 'd["cached"]')" = True ] || fail "the second calibration is not a cache hit"
[ "$(json c2.json 'd["calibrated"] is not None and d["machine"]["identity"] in open("'"$profile"'").read()')" = True ] ||
	fail "a cache hit does not say when, or which Machine"
[ ! -s c2.err ] || fail "a cache hit ran something: $(cat c2.err)"
[ "$elapsed" -lt 1500 ] || fail "a cache hit took $elapsed ms"
same='json.dumps(d["ceilings"], sort_keys=True)'
[ "$(json c2.json "$same")" = "$(json c1.json "$same")" ] ||
	fail "the cached Ceilings differ from the measured ones"
"$NUNATAK" calibrate >c2.txt 2>&1 || fail "text form: exit $?"
grep -q '^Ceilings of this Machine (cached' c2.txt || fail "text form does not say cached: $(cat c2.txt)"
for c in flops_dp flops_sp dram_bandwidth network_latency network_bandwidth; do
	[ "$(grep -c "^  $c " c2.txt)" = 1 ] || fail "no line for $c: $(cat c2.txt)"
done
grep -q '^  network_latency .* unavailable not measured: give an MPI launcher' c2.txt ||
	fail "the unmeasured network is not said: $(cat c2.txt)"

# a copy of this profile (network not measured) for Open MPI below
cp -a "$XDG_CACHE_HOME" "$T/cache-ompi"

# a launcher on a cache hit: the network only
"$NUNATAK" calibrate --json -- /nonexistent/mpirun -n 2 >bad.json 2>bad.err
rc=$?
[ $rc = 125 ] || fail "a missing launcher: exit $rc, not 125"
grep -q '^nunatak: calibrate: network_latency: not measured: .*nonexistent/mpirun' bad.err ||
	fail "the missing launcher is not said: $(cat bad.err)"
grep -q 'triad' bad.err && fail "the CPU kernels ran again on a cache hit"
[ "$(json "$profile" '[c for c in d["ceilings"] if c["name"] == "network_latency"][0]["value"]')" = None ] ||
	fail "a failed network calibration changed the cache"
if command -v mpiexec.mpich >/dev/null; then
	"$NUNATAK" calibrate --json -- mpiexec.mpich -n 2 >m.json 2>m.err || fail "MPI: exit $?: $(cat m.err)"
	grep -q 'ping-pong' m.err || fail "no ping-pong progress: $(cat m.err)"
	grep -q 'kernel, ' m.err && fail "the CPU kernels ran again: $(cat m.err)"
	python3 - <<'PY' || fail "network Ceilings"
import glob, json, sys
m = json.load(open("m.json"))
get = lambda d, n: [x for x in d["ceilings"] if x["name"] == n][0]
lat, bw = get(m, "network_latency"), get(m, "network_bandwidth")
print(lat, bw, sep="\n")
ok = lat["quality"] != "unavailable" and 1e-9 < lat["value"] < 1e-3 and lat["unit"] == "s"
ok = ok and bw["quality"] != "unavailable" and 1e7 < bw["value"] < 1e12 and bw["unit"] == "B/s"
ok = ok and lat["source"] == bw["source"] == "calibration" and m["cached"] is False
last = json.load(open(sorted(glob.glob("c*.json"), key=lambda f: int(f[1:-5]))[-1]))
ok = ok and all(get(m, n) == get(last, n) for n in ("flops_dp", "flops_sp", "dram_bandwidth"))
sys.exit(0 if ok else 1)
PY
	"$NUNATAK" calibrate --json -- mpiexec.mpich -n 2 >m2.json 2>m2.err || fail "MPI again: exit $?"
	[ "$(json m2.json 'd["cached"]')" = True ] || fail "the network, once measured, is not cached"
else
	echo "mpiexec.mpich not installed: its ping-pong is not tried"
fi
# Open MPI: its mpicc (opal_wrapper) must be called by its own name
if command -v mpirun.openmpi >/dev/null; then
	XDG_CACHE_HOME=$T/cache-ompi OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
		"$NUNATAK" calibrate --json -- mpirun.openmpi --oversubscribe -n 2 >o.json 2>o.err ||
		fail "Open MPI: exit $?: $(cat o.err)"
	[ "$(json o.json '[c["source"] for c in d["ceilings"] if c["name"].startswith("network_")]')" = "['calibration', 'calibration']" ] ||
		fail "Open MPI: the network is not measured: $(cat o.err)"
else
	echo "mpirun.openmpi not installed: its ping-pong is not tried"
fi
# --force rounds until two calibrations agree and the triad meets STREAM
round=2
while :; do
	"$NUNATAK" calibrate --force --json >c$round.json 2>c$round.err ||
		fail "--force: exit $?: $(cat c$round.err)"
	./stream_check >s$round.txt || fail "stream_check failed"
	[ "$(json c$round.json 'd["cached"]')" = False ] || fail "--force says cached"
	peak_check c$round.json
	# exit 0: agreement; 1: not yet; at the last round 2: a disagreement
	# between values nunatak called measured, 3: only between estimated ones
	python3 - "$round" 5 <<'PY'
import json, re, sys
rounds, last = int(sys.argv[1]), int(sys.argv[1]) >= int(sys.argv[2])
cal = [json.load(open(f"c{i}.json")) for i in range(1, rounds + 1)]
stream = [float(re.search(r"triad_bytes_per_second=(\S+)", open(f"s{i}.txt").read()).group(1))
          for i in range(1, rounds + 1)]
def ceiling(d, name):
    c = [c for c in d["ceilings"] if c["name"] == name][0]
    assert c["source"] == "calibration" and c["quality"] in ("measured", "estimated"), c
    assert c["quality"] == "measured" or c["reason"], c
    return c
def agree(a, b, tolerance):
    return abs(a - b) <= tolerance * max(a, b)
ok, hard = True, False
for name in ("flops_dp", "flops_sp", "dram_bandwidth"):
    cs = [ceiling(d, name) for d in cal]
    v = [c["value"] for c in cs]
    pairs = [(i, j) for i in range(len(v)) for j in range(i + 1, len(v)) if agree(v[i], v[j], 0.10)]
    print(f"{name}: {['%.4g %s' % (c['value'], c['quality']) for c in cs]} agreeing pairs {pairs}")
    measured = [c["value"] for c in cs if c["quality"] == "measured"]
    if not pairs:
        ok = False
        hard = hard or (len(measured) >= 2 and not any(
            agree(a, b, 0.10) for i, a in enumerate(measured) for b in measured[i + 1:]))
triad = max((ceiling(d, "dram_bandwidth") for d in cal), key=lambda c: c["value"])
best = max(stream)
print(f"best triad {triad['value']:.4g} B/s ({triad['quality']}), best STREAM {best:.4g} B/s: "
      f"ratio {triad['value'] / best:.2f}")
if not agree(triad["value"], best, 0.25):
    ok = False
    hard = hard or triad["quality"] == "measured"
sys.exit(0 if ok else 1 if not last else 2 if hard else 3)
PY
	rc=$?
	case $rc in
	0) break ;;
	1) round=$((round + 1)) ;;
	2) fail "calibrations nunatak called measured disagree (see above)" ;;
	*) skip "the calibrations disagree beyond 10 % or with STREAM beyond 25 %, and nunatak said each of those was estimated (the Machine is shared: load average $(cut -d' ' -f1-3 /proc/loadavg)); the other checks passed" ;;
	esac
done
echo "ok: $(cat s1.txt)"
