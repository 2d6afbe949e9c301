# `nunatak doctor`: as root here, BPF and BTF are ok and the PMU is missing
# with its remedy (this VM has none; asserted only where
# /sys/bus/event_source/devices has no core PMU), doctor's
# hardware-counters-unavailable saying no PMU, once, in the words of a
# Run's (the same message and remedy, whatever the Machine); --json parses with the
# documented shape; with a command, what its binary offers: the demo
# workload (debug info) says line, a copy without -g says function, a
# stripped one says symbol; -fno-omit-frame-pointer and -fomit-frame-pointer
# builds differ; behind `mpirun -n 2` the application is the one examined;
# a command that does not exist is a check, exit 0; as an unprivileged user
# it says what is missing (privileges, BPF, the Degradation bpf-denied).
. "$TESTS_LIB/common.sh"
need_root_bpf
command -v cc >/dev/null || skip "no C compiler (cc) to build the test's programs"

# doctor_json NAME ARGS...: doctor --json into $T/NAME.json, exit 0 checked
doctor_json() {
	local name=$1
	shift
	"$NUNATAK" doctor --json "$@" >"$T/$name.json" 2>"$T/$name.err"
	local rc=$?
	[ $rc = 0 ] || fail "doctor $* exited $rc, not 0: $(cat "$T/$name.err")"
}
# check NAME CHECK FIELD: the field of the (first) check named CHECK
check() {
	json "$T/$1.json" "[c for c in d['checks'] if c['name'] == '$2'][0]['$3']"
}

export XDG_CACHE_HOME="$T/cache" # no Machine profile: this Machine was never calibrated there
doctor_json root
json "$T/root.json" 'sorted(d.keys())' | grep -qx "\['checks', 'degradations'\]" ||
	fail "--json keys: $(json "$T/root.json" 'sorted(d.keys())')"
json "$T/root.json" 'all(sorted(c.keys()) == ["detail", "name", "remedy", "status"] and c["status"] in ("ok", "warning", "missing") for c in d["checks"])' |
	grep -qx True || fail "a check without {name, status, detail, remedy} or with another status"
json "$T/root.json" 'all(sorted(x.keys()) == ["message", "name", "remedy"] for x in d["degradations"])' |
	grep -qx True || fail "a Degradation without {name, message, remedy}"
for c in privileges bpf btf kernel uprobe_multi perf_events perf_event_paranoid kernel_symbols pmu \
	pmu_counter_group llvm-symbolizer llvm-dwarfdump compiler mpi nunatakd aggregator \
	machine_profile; do
	json "$T/root.json" "[c['name'] for c in d['checks']]" | grep -q "'$c'" || fail "no check '$c'"
done
[ "$(check root privileges status)" = ok ] || fail "root: privileges $(check root privileges detail)"
[ "$(check root bpf status)" = ok ] || fail "root: BPF not ok: $(check root bpf detail)"
[ "$(check root btf status)" = ok ] || fail "root: BTF not ok: $(check root btf detail)"
# the one cause of missing counters: doctor and a Run say it in the same words
hcu() { json "$1" "[x['$2'] for x in d['degradations'] if x['name'] == 'hardware-counters-unavailable']"; }
"$NUNATAK" run -o "$T/runs" -- "$WORKLOADS/hotspots" 0.3 >/dev/null 2>"$T/run.err" ||
	fail "the Run failed: $(cat "$T/run.err")"
run=$(run_dir_of "$T/run.err")
[ "$(hcu "$run/manifest.json" message)" = "$(hcu "$T/root.json" message)" ] ||
	fail "the Run and doctor differ: $(hcu "$run/manifest.json" message) / $(hcu "$T/root.json" message)"
[ "$(hcu "$run/manifest.json" remedy)" = "$(hcu "$T/root.json" remedy)" ] ||
	fail "the Run's remedy is not doctor's: $(hcu "$run/manifest.json" remedy) / $(hcu "$T/root.json" remedy)"
if ! ls /sys/bus/event_source/devices/ | grep -qx 'cpu\|cpu_core\|cpu_atom\|armv[78]_.*'; then
	[ "$(check root pmu status)" = missing ] || fail "no PMU here, yet pmu is $(check root pmu status)"
	check root pmu detail | grep -q '^no PMU on this Machine: ' ||
		fail "the pmu check does not say there is no PMU: $(check root pmu detail)"
	check root pmu remedy | grep -q 'bare metal' || fail "the PMU check has no remedy: $(check root pmu remedy)"
	for who in "$run/manifest.json" "$T/root.json"; do
		[ "$(json "$who" "len([x for x in d['degradations'] if x['name'] == 'hardware-counters-unavailable'])")" = 1 ] ||
			fail "$who: not one hardware-counters-unavailable Degradation: $(json "$who" 'd["degradations"]')"
		msg=$(hcu "$who" message)
		grep -q "no PMU on this Machine: " <<<"$msg" || fail "$who does not say there is no PMU: $msg"
		grep -qi "event table\|not known\|counter fp_\|counter FP_" <<<"$msg" &&
			fail "$who says another cause than the missing PMU: $msg"
	done
	check root pmu_counter_group detail | grep -q '(of no use here: no PMU, see pmu)$' ||
		fail "pmu_counter_group does not say it is moot without a PMU: $(check root pmu_counter_group detail)"
	echo "no PMU, said once by doctor and the Run: $(hcu "$run/manifest.json" message)"
else
	echo "note: this machine has a PMU: the 'no PMU' cause is not checked (doctor and the Run still agree)"
	check root pmu detail | grep -q '^no PMU' && fail "a PMU is listed, yet doctor says none: $(check root pmu detail)"
fi
[ "$(check root machine_profile status)" = missing ] || fail "an empty cache: machine_profile $(check root machine_profile status)"
check root machine_profile remedy | grep -q 'nunatak calibrate' || fail "no calibrate remedy"
# the text form: one line per check, exit 0
"$NUNATAK" doctor >"$T/text.out" 2>&1 || fail "doctor (text) did not exit 0"
grep -q '^ok  *btf ' "$T/text.out" || fail "text: no 'ok btf' line: $(head -5 "$T/text.out")"
grep -q '^Degradations a Run here would have' "$T/text.out" || fail "text: no Degradations part"

# what a binary offers
cat >"$T/p.c" <<'C'
#define F(n) __attribute__((noinline)) int f##n(int x) { volatile int a[8]; a[x & 7] = x; return a[(x + n) & 7] * n + x; }
F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10)
int main(int c, char **v) { (void)v; return f1(c) + f2(c) + f3(c) + f4(c) + f5(c) + f6(c) + f7(c) + f8(c) + f9(c) + f10(c) == 1; }
C
(cd "$T" && cc -O2 -o plain p.c && cp plain stripped && strip stripped &&
	cc -O2 -g -fno-omit-frame-pointer -o fp p.c && cc -O2 -g -fomit-frame-pointer -o nofp p.c &&
	cc -O2 -fomit-frame-pointer -fno-asynchronous-unwind-tables -fno-unwind-tables -o notab p.c) ||
	fail "cannot build the test programs"

doctor_json hot -- "$WORKLOADS/hotspots" 0.1
[ "$(check hot command status)" = ok ] || fail "hotspots: command $(check hot command detail)"
check hot attribution detail | grep -q '^line:' || fail "hotspots: attribution $(check hot attribution detail)"
doctor_json plain -- "$T/plain"
check plain attribution detail | grep -q '^function:' || fail "no -g: $(check plain attribution detail)"
doctor_json stripped -- "$T/stripped"
check stripped attribution detail | grep -q '^symbol:' || fail "stripped: $(check stripped attribution detail)"
[ "$(check stripped attribution status)" != ok ] || fail "a stripped binary's attribution is ok"

doctor_json fp -- "$T/fp"
doctor_json nofp -- "$T/nofp"
[ "$(check fp frame_pointers status)" = ok ] || fail "-fno-omit-frame-pointer: $(check fp frame_pointers detail)"
check fp frame_pointers detail | grep -q '^present' || fail "fp: $(check fp frame_pointers detail)"
[ "$(check nofp frame_pointers status)" = warning ] ||
	fail "-fomit-frame-pointer: $(check nofp frame_pointers status) $(check nofp frame_pointers detail)"
check nofp frame_pointers detail | grep -q '^absent' || fail "nofp: $(check nofp frame_pointers detail)"
[ "$(check nofp unwind_tables status)" = ok ] || fail "nofp has .eh_frame: $(check nofp unwind_tables detail)"

# neither unwind tables nor frame pointers (nor -g, whose .debug_frame the
# unwinder reads too): truncated stacks, said as a Degradation
doctor_json notab -- "$T/notab"
[ "$(check notab unwind_tables status)" = missing ] || fail "no tables: $(check notab unwind_tables detail)"
json "$T/notab.json" "[x['name'] for x in d['degradations']]" | grep -q stacks-truncated ||
	fail "no tables, no frame pointers: no stacks-truncated Degradation"
json "$T/fp.json" "[x['name'] for x in d['degradations']]" | grep -q stacks-truncated &&
	fail "stacks-truncated announced for a binary with tables"

# behind an MPI launcher: the application's binary
doctor_json mpi -- mpirun -n 2 --allow-run-as-root "$T/stripped"
check mpi command detail | grep -q "$T/stripped, started by mpirun" ||
	fail "behind mpirun: $(check mpi command detail)"
check mpi attribution detail | grep -q '^symbol:' || fail "behind mpirun: $(check mpi attribution detail)"

# a command that does not exist: said as a check, exit 0
doctor_json none -- "$T/no-such-program" arg
[ "$(check none command status)" = missing ] || fail "a missing command: $(check none command status)"
check none command detail | grep -q 'command not found' || fail "not said: $(check none command detail)"
"$NUNATAK" doctor -- "$T/no-such-program" >/dev/null 2>&1 || fail "text doctor of a missing command did not exit 0"

# as an unprivileged user
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
	cp "$NUNATAK" "$T/nunatak" && chmod 0755 "$T/nunatak"
	(cd "$T" && setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- \
		./nunatak doctor --json -- ./fp >"$T/user.json" 2>"$T/user.err") ||
		fail "doctor as nobody did not exit 0: $(cat "$T/user.err")"
	[ "$(check user privileges status)" = missing ] || fail "nobody: privileges $(check user privileges status)"
	check user privileges remedy | grep -q 'CAP_BPF' || fail "nobody: no remedy naming CAP_BPF"
	[ "$(check user bpf status)" = missing ] || fail "nobody: bpf $(check user bpf status)"
	json "$T/user.json" "[x['name'] for x in d['degradations']]" | grep -q bpf-denied ||
		fail "nobody: no bpf-denied Degradation: $(json "$T/user.json" 'd["degradations"]')"
	# nothing is sampled without BPF: bpf-denied alone, as in the user's Run (unprivileged.sh)
	json "$T/user.json" "[x['name'] for x in d['degradations']]" | grep -q hardware-counters-unavailable &&
		fail "nobody: hardware-counters-unavailable beside bpf-denied: $(json "$T/user.json" 'd["degradations"]')"
	[ "$(check user attribution status)" = ok ] || fail "nobody: the binary is still examined"
else
	echo "note: setpriv or the user nobody missing: the unprivileged part was not run"
fi
echo "doctor: ok"
