# Without the rights to load BPF the application still runs, its exit code
# is kept, and the Run records why it is empty; --strict then exits 121.
. "$TESTS_LIB/common.sh"
command -v setpriv >/dev/null || skip "setpriv (util-linux) missing"
[ "$(id -u)" = 0 ] || skip "needs root to switch to an unprivileged user"
user=nobody
id "$user" >/dev/null 2>&1 || skip "no user '$user'"
as_user() { setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups -- "$@"; }

cp "$NUNATAK" "$T/nunatak" && cp "$WORKLOADS/hotspots" "$T/hotspots"
cd "$T"
mkdir runs && chown "$user" runs # a runs directory of its own: one of root's is refused
as_user ./nunatak run -o "$T/runs" -- ./hotspots 0.2 4 >out.txt 2>err.txt
rc=$?
[ $rc = 4 ] || fail "exit code $rc, expected the application's 4: $(cat err.txt)"
grep -q 'hotspots: ok' out.txt || fail "the application did not run"
grep -q 'degradation bpf-denied' err.txt || fail "the Degradation is not announced: $(cat err.txt)"
grep -q 'remedy' err.txt || fail "no remedy given"
run=$(run_dir_of err.txt)
# bpf-denied alone, on any processor and PMU: nothing is sampled, so no
# hardware-counters-unavailable claims that time is
[ "$(json "$run/manifest.json" '[x["name"] for x in d["degradations"]]')" = "['bpf-denied']" ] ||
	fail "manifest degradations: $(json "$run/manifest.json" 'd["degradations"]')"
[ "$(json "$run/manifest.json" 'd["run"]["exit_code"]')" = 4 ] || fail "manifest exit code"
grep -q 'no samples' err.txt || fail "the summary does not say the Run is empty: $(cat err.txt)"

as_user ./nunatak run --strict -o "$T/runs" -- ./hotspots 0.1 >/dev/null 2>err.txt
rc=$?
[ $rc = 121 ] || fail "--strict with a Degradation: exit $rc, expected 121"
