# The Machine snapshot a Run embeds: its identity (the profile cache key),
# the microarchitecture and the Ceilings — theory (estimated, with the
# reason) for flops when nothing is cached, unavailable (null, never 0)
# otherwise; then, with a profile cached for this identity, the Run takes
# the cached measured Ceilings (source "calibration") and never calibrates;
# a stale profile (another calibration_version) is not used.
. "$TESTS_LIB/common.sh"
need_root_bpf

export XDG_CACHE_HOME="$T/cache"
cd "$T"
"$NUNATAK" run -- "$WORKLOADS/hotspots" 0.2 >/dev/null 2>err.txt || fail "run: $(cat err.txt)"
run=$(run_dir_of err.txt)
m="$run/manifest.json"
id=$(json "$m" 'd["machine"]["identity"]')
case "$id" in [0-9a-f]*) [ ${#id} -eq 64 ] || fail "identity is not a SHA-256: $id" ;; *) fail "no identity: $id" ;; esac
ceiling() { # NAME FIELD
	json "$m" "[c for c in d['machine']['ceilings'] if c['name']=='$1'][0]['$2']"
}
[ "$(ceiling dram_bandwidth quality)" = unavailable ] || fail "dram_bandwidth not unavailable before calibration"
[ "$(ceiling dram_bandwidth value)" = None ] || fail "an unavailable Ceiling has a value"
ceiling dram_bandwidth reason | grep -q "nunatak calibrate" || fail "no remedy in the reason"
uarch=$(json "$m" 'd["machine"]["microarchitecture"]')
if [ "$uarch" != None ]; then
	[ "$(ceiling flops_dp quality)" = estimated ] || fail "theory flops_dp not estimated"
	[ "$(ceiling flops_dp source)" = theory ] || fail "flops_dp source is not theory"
	ceiling flops_dp reason | grep -q "theoretical peak" || fail "theory reason missing"
else
	[ "$(ceiling flops_dp quality)" = unavailable ] || fail "unknown $uarch yet flops_dp has a value"
fi
[ ! -e "$T/cache/nunatak" ] || fail "a Run wrote the Machine cache (it must never calibrate)"

# a profile for this identity, as calibration stores it
mkdir -m 0700 -p "$T/cache/nunatak/machines"
profile="$T/cache/nunatak/machines/$id.json"
write_profile() { # CALIBRATION_VERSION
	python3 - "$m" "$profile" "$1" <<'PY'
import json, os, sys
m = json.load(open(sys.argv[1]))["machine"]
m.pop("ceilings")
p = {"identity": m["identity"], "calibration_version": int(sys.argv[3]),
     "calibrated": "2026-12-02T00:00:00Z", "machine": m,
     "ceilings": [{"name": "flops_dp", "value": 1.5e10, "unit": "flop/s", "quality": "measured", "reason": None},
                  {"name": "dram_bandwidth", "value": 9.5e9, "unit": "B/s", "quality": "measured", "reason": None}]}
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.write(fd, json.dumps(p).encode())
os.close(fd)
PY
}
version=$(sed -n 's/^#define CALIBRATION_VERSION \([0-9]*\).*/\1/p' "$TESTS_LIB/../../userspace/machine/machine_cache.h")
[ -n "$version" ] || fail "cannot read CALIBRATION_VERSION"
write_profile "$version"
"$NUNATAK" run -- "$WORKLOADS/hotspots" 0.2 >/dev/null 2>err.txt || fail "run: $(cat err.txt)"
m="$(run_dir_of err.txt)/manifest.json"
[ "$(ceiling dram_bandwidth quality)" = measured ] || fail "cached dram_bandwidth not used"
assert_near "$(ceiling dram_bandwidth value)" 9.5e9 1 "cached dram_bandwidth"
[ "$(ceiling dram_bandwidth source)" = calibration ] || fail "source is not calibration"
[ "$(ceiling flops_dp quality)" = measured ] || fail "cached flops_dp not used"

write_profile $((version + 1))
"$NUNATAK" run -- "$WORKLOADS/hotspots" 0.2 >/dev/null 2>err.txt || fail "run: $(cat err.txt)"
m="$(run_dir_of err.txt)/manifest.json"
[ "$(ceiling dram_bandwidth quality)" = unavailable ] || fail "a stale profile was used"
exit 0
