# Failures around the start of a Run: before launch nunatak exits 125
# within a second or two, says the real cause and where, leaves no Run
# directory and never runs the application; a symbolizer that never
# answers costs at most its budget, and the application's code stands.
. "${TESTS_LIB:?run through tests/run.sh or make test}/common.sh"
need_root_bpf

cd "$T"
app="touch $T/marker; exit 3"

# elapsed_ms CMD...: runs CMD (bounded by timeout), rc in $rc, time in $ms
elapsed_ms() {
	local t0
	t0=$(date +%s%N)
	"$@"
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
}

# 1. the runs directory on a full 2 MB tmpfs
mkdir full
mount -t tmpfs -o size=2m nunatak-test-full full || skip "cannot mount a tmpfs"
trap 'umount "$T/full" 2>/dev/null; rm -rf "$T"' EXIT
dd if=/dev/zero of=full/fill bs=64k 2>/dev/null
elapsed_ms timeout 20 "$NUNATAK" run -o full/runs -- sh -c "$app" 2>full.err
[ "$rc" = 125 ] || fail "full disk: exit $rc, not 125: $(cat full.err)"
[ "$ms" -lt 2000 ] || fail "full disk: $ms ms before exiting"
grep -qi "no space left on device" full.err || fail "full disk: the cause is not said: $(cat full.err)"
grep -q "full/runs" full.err || fail "full disk: the path is not said: $(cat full.err)"
[ ! -e marker ] || fail "full disk: the application ran"
[ -z "$(ls -A full/runs 2>/dev/null)" ] || fail "full disk: a Run directory was left: $(ls full/runs)"
umount full
echo "full disk: 125 in $ms ms"

# 1b. room for the pivot and the manifest but not for the reserve the end
# of the Run needs (so that a disk filling later still says what it lost):
# the start fails, before launch
mount -t tmpfs -o size=2m nunatak-test-full full || fail "cannot mount a tmpfs again"
dd if=/dev/zero of=full/fill bs=4k count=$(((2048 - 300) / 4)) 2>/dev/null
elapsed_ms timeout 20 "$NUNATAK" run -o full/runs -- sh -c "$app" 2>full.err
[ "$rc" = 125 ] || fail "300 KiB free: exit $rc, not 125: $(cat full.err)"
grep -q "cannot reserve" full.err && grep -qi "no space left" full.err ||
	fail "300 KiB free: the cause is not said: $(cat full.err)"
[ ! -e marker ] || fail "300 KiB free: the application ran"
[ -z "$(ls -A full/runs 2>/dev/null)" ] || fail "300 KiB free: a Run directory was left: $(ls -A full/runs/*)"
umount full
echo "300 KiB free: 125 in $ms ms, the reserve is said"

# 2. a runs path of ~3850 characters: every file of the Run is made under
# its directory's descriptor, so the Run works; past PATH_MAX it cannot
# even be named: 125, "too long", no hang
long="$T/$(python3 -c "print('/'.join(['d' * 200] * 19))")"
elapsed_ms timeout 20 "$NUNATAK" run -o "$long" -- sh -c "exit 3" 2>long.err
[ "$rc" = 3 ] || fail "long path (${#long} characters): exit $rc, not 3: $(tail -c 300 long.err)"
[ -s "$(run_dir_of long.err)/manifest.json" ] || fail "long path: no manifest"
echo "path of ${#long} characters: the Run works (exit 3 in $ms ms)"
longer="$T/$(python3 -c "print('/'.join(['e' * 200] * 21))")"
elapsed_ms timeout 20 "$NUNATAK" run -o "$longer" -- sh -c "$app" 2>longer.err
[ "$rc" != 124 ] || fail "longer path: nunatak hung"
[ "$rc" = 125 ] || fail "longer path (${#longer} characters): exit $rc, not 125: $(tail -c 300 longer.err)"
[ "$ms" -lt 2000 ] || fail "longer path: $ms ms before exiting"
grep -qi "too long" longer.err || fail "longer path: the cause is not said: $(tail -c 300 longer.err)"
[ ! -e marker ] || fail "longer path: the application ran"
[ -z "$(find "$T"/e* -name 'sh-*' 2>/dev/null)" ] || fail "longer path: a Run directory was left"
echo "path of ${#longer} characters: 125 in $ms ms"

# 3. a trusted symbolizer (root's, set by a root-owned site config) that
# answers --version and then never answers anything
cat >sleeper <<'SH'
#!/bin/sh
case "$*" in *--version*) echo "LLVM version 0 (never answers)"; exit 0 ;; esac
exec sleep 600
SH
chmod 0755 sleeper
printf '[tools]\nllvm-symbolizer = "%s"\n' "$T/sleeper" >site.toml
chmod 0644 site.toml
elapsed_ms env NUNATAK_SITE_CONFIG="$T/site.toml" timeout 30 "$NUNATAK" run -o runs \
	--symbolizer-budget 2 -- sh -c "$WORKLOADS/hotspots 1 >/dev/null; exit 3" 2>sym.err
[ "$rc" = 3 ] || fail "sleeping symbolizer: exit $rc, not the application's 3: $(tail -5 sym.err)"
[ "$ms" -lt 12000 ] || fail "sleeping symbolizer: $ms ms for a 2 s budget"
run=$(run_dir_of sym.err)
json "$run/manifest.json" '[x["name"] for x in d["degradations"]]' | grep -q symbolizer-timeout ||
	fail "no symbolizer-timeout Degradation in the manifest"
msg=$(json "$run/manifest.json" '[x["message"] for x in d["degradations"] if x["name"]=="symbolizer-timeout"][0]')
echo "$msg" | grep -q "2 s in all" || fail "the budget is not said: $msg"
# the hotspots keep their ELF names
json "$run/manifest.json" 'd["run"]["exit_code"]' | grep -qx 3 || fail "exit code not recorded"
[ "$(sql "$run" "SELECT count(*) FROM hotspots WHERE name = 'heavy_kernel'")" = 1 ] ||
	fail "heavy_kernel lost its ELF name"
echo "sleeping symbolizer: exit 3 after $ms ms"

# 4. a symbolizer others can write is never run: symbolizer-untrusted
mkdir -m 0755 open
printf '#!/bin/sh\ntouch %s/untrusted-ran\n' "$T" >open/planted
chmod 0777 open/planted
printf '[tools]\nllvm-symbolizer = "%s"\n' "$T/open/planted" >site2.toml
chmod 0644 site2.toml
NUNATAK_SITE_CONFIG="$T/site2.toml" timeout 30 "$NUNATAK" run -o runs -- "$WORKLOADS/hotspots" 0.3 3 >/dev/null 2>untrusted.err
rc=$?
[ "$rc" = 3 ] || fail "untrusted symbolizer: exit $rc, not the application's 3"
[ ! -e untrusted-ran ] || fail "a symbolizer others can write was run"
run=$(run_dir_of untrusted.err)
json "$run/manifest.json" '[x["message"] for x in d["degradations"] if x["name"]=="symbolizer-untrusted"][0]' |
	grep -q "open/planted" || fail "no symbolizer-untrusted Degradation naming the file"
[ "$(json "$run/manifest.json" '[x["name"] for x in d["degradations"] if x["name"].startswith("symbolizer")]')" = "['symbolizer-untrusted']" ] ||
	fail "the refusal is said once, as symbolizer-untrusted: $(json "$run/manifest.json" 'd["degradations"]')"
echo "untrusted symbolizer: not run, symbolizer-untrusted, exit $rc"

# 5. a symbolizer that runs but does not answer as llvm-symbolizer does:
# named, not silent (the names come from ELF symbols)
mkdir -m 0755 garbage
printf '#!/bin/sh\necho garbage\n' >garbage/sym
chmod 0755 garbage/sym
printf '[tools]\nllvm-symbolizer = "%s"\n' "$T/garbage/sym" >site3.toml
NUNATAK_SITE_CONFIG="$T/site3.toml" timeout 60 "$NUNATAK" run -o runs -- "$WORKLOADS/hotspots" 0.3 3 >/dev/null 2>garbage.err
rc=$?
[ "$rc" = 3 ] || fail "failing symbolizer: exit $rc, not the application's 3"
run=$(run_dir_of garbage.err)
json "$run/manifest.json" '[x["message"] for x in d["degradations"] if x["name"]=="symbolizer-failed"][0]' |
	grep -q "named 0 of" || fail "no symbolizer-failed Degradation: $(json "$run/manifest.json" 'd["degradations"]')"
grep -q "heavy_kernel" garbage.err || fail "the hotspots are not named from ELF symbols: $(cat garbage.err)"
echo "failing symbolizer: symbolizer-failed, ELF names, exit $rc"
