# The HTML report in a real headless Chromium (Debian's chromium, network
# offline): the report of a single-process Run of the hotspots workload and
# of a 2-rank Open MPI Run with --mpi-events renders every view with zero
# console errors and zero network requests; each view's screenshot is kept
# under ${ARTEFACTS:-/tmp/nunatak-artefacts}/report/ and is not blank; a
# search in the flame graph finds the hot function; the MPI Run's timeline
# draws its Events; the --no-source page renders its Hotspot without text;
# without hardware counters the synthesis says "no roofline placement" once
# (no red badge, no unavailable evidence per finding) and the Hotspot view
# draws no roofline chart, saying why;
# names made of markup stay text (assemble_dev.py --hostile); a sender
# spinning in MPI_Send reads as MPI_Send time at its call site in the
# Hotspot inventory, which counts nunatak's probe samples apart; a
# default MPI Run over the probes' budget shows its estimated call sites
# (≈, ±, an "estimated" badge whose title says why).
# One Chromium per report (tests/report/browser.js).
. "$TESTS_LIB/common.sh"
need_root_bpf
command -v node >/dev/null || skip "node is not installed (Debian package nodejs)"
command -v chromium >/dev/null || skip "chromium is not installed (Debian package chromium)"
BROWSER="$TESTS_LIB/../report/browser.js"
ART=${ARTEFACTS:-/tmp/nunatak-artefacts}/report
rm -rf "$ART" && mkdir -p "$ART" || fail "cannot make $ART"

# browse NAME PAGE ARGS...: browser.js on PAGE, its output kept in $ART
browse() {
	local name=$1 page=$2 rc
	shift 2
	node "$BROWSER" --report "$page" --artefacts "$ART/$name" "$@" >"$ART/$name.log" 2>&1
	rc=$?
	[ "$rc" = 77 ] && skip "$(grep SKIPPED "$ART/$name.log")"
	[ "$rc" = 0 ] || fail "$name page: $(grep -v '^ok' "$ART/$name.log")"
	ls "$ART/$name"/*.png >/dev/null 2>&1 || fail "$name: no screenshot kept"
}

cd "$T"
"$NUNATAK" run -o runs --name single -- "$WORKLOADS/hotspots" 1 >out.txt 2>err.txt ||
	fail "run: exit $?: $(cat err.txt)"
run=$(run_dir_of err.txt)
page=$(sed -n 's/^Report: //p' err.txt | tail -1)
[ "$page" = "$run/report.html" ] || fail "nunatak run did not print Report: $run/report.html"
[ -s "$page" ] || fail "no $page"
"$NUNATAK" report "$run" >rep.out 2>rep.err || fail "report: exit $?: $(cat rep.err)"
grep -q "^Report: $run/report.html" rep.err || fail "report did not print its path: $(cat rep.err)"
browse single "$run/report.html" --search heavy_kernel

# without hardware counters, what holds for the whole Run is said once: no
# red badge nor "unavailable" evidence per finding, no roofline chart (an
# estimated peak over an empty plot) but why there is no point
if grep -q '^  - degradation hardware-counters-unavailable' err.txt; then
	# the cause, as the Run's analysis words it (whatever the Machine's)
	"$NUNATAK" summary --json "$run" >np.json 2>/dev/null || fail "summary --json"
	cause=$(json np.json 'd["diagnostic_run"]["no_placement"][:30]')
	[ -n "$cause" ] && [ "$cause" != None ] || fail "no no_placement in summary --json"
	browse single-no-pmu "$run/report.html" --views synthesis,hotspot --no-print \
		--expect "synthesis=No roofline placement in this Run, so no roofline class: $cause" \
		--expect "synthesis=Imbalance not applicable: one thread of one process ran it" \
		--expect-no "synthesis=.run-no-placement ~ .run-no-placement" \
		--expect-no "synthesis=.findings .q-unavailable" \
		--expect-no "synthesis=.findings .unavail" \
		--expect "hotspot=No roofline chart: no Hotspot of this Run is placed ($cause" \
		--expect "hotspot=Not computed: dram intensity, achieved, attainable, envelope fraction — no roofline placement in this Run" \
		--expect "hotspot=Class: none (no roofline placement in this Run)" \
		--expect "synthesis=Ceilings: none is used, since no Hotspot of this Run is placed" \
		--expect-no "hotspot=svg.roofline"
else
	echo "hardware counters on this Machine: the no-PMU page checks do not apply"
fi

"$NUNATAK" report --no-source "$run" >/dev/null 2>rep.err || fail "report --no-source: $(cat rep.err)"
browse single-no-source "$run/report-no-source.html" --views synthesis,hotspot --no-print \
	--expect "hotspot=(text not in this report)" --expect "hotspot=the report was made with --no-source"

# names that look like markup (</script>, <img onerror>, C++ templates) stay text:
# the page assembled by tests/report/assemble_dev.py --hostile from the same
# Run; an <img> made of a name would be a network request, and fails
"$NUNATAK" summary --json "$run" >s.json 2>/dev/null || fail "summary --json"
"$NUNATAK" summary "$run" >/dev/null 2>s.txt || fail "summary"
python3 "$TESTS_LIB/../report/assemble_dev.py" --run "$run" --summary s.json --summary-text s.txt \
	--hostile -o hostile.html || fail "assemble_dev.py --hostile"
browse hostile hostile.html --views synthesis,hotspots,hotspot,flame \
	--search '</script>' --no-print

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if command -v mpirun.openmpi >/dev/null && [ -x "$WORKLOADS/mpi/pattern.openmpi" ]; then
	"$NUNATAK" run -o runs --name mpi --mpi-events -- mpirun.openmpi --oversubscribe -n 2 \
		"$WORKLOADS/mpi/pattern.openmpi" 600 100 1000 100 4096 >mpi.out 2>err.txt ||
		fail "MPI run: exit $?: $(cat err.txt)"
	run=$(run_dir_of err.txt)
	"$NUNATAK" report "$run" >/dev/null 2>rep.err || fail "report (MPI): $(cat rep.err)"
	browse mpi "$run/report.html" --search compute_units --expect-timeline
	# a sender spinning inside MPI_Send, and many tiny MPI calls: the
	# inventory names the MPI call and its call site beside the library's
	# Hotspots, and counts nunatak's probe samples apart
	[ -x "$WORKLOADS/mpi/busy_send.openmpi" ] || fail "workload busy_send.openmpi not built"
	"$NUNATAK" run -o runs --name busy -- mpirun.openmpi --oversubscribe -n 2 \
		"$WORKLOADS/mpi/busy_send.openmpi" 20 262144 50 20000 >busy.out 2>err.txt ||
		fail "MPI run (busy_send): exit $?: $(cat err.txt)"
	run=$(run_dir_of err.txt)
	browse busy "$run/report.html" --views hotspots,ranks --no-print \
		--expect "hotspots=MPI_Send ← send_blocks (busy_send.c:" \
		--expect "hotspots=nunatak's probes: " \
		--expect "ranks=nunatak's MPI probes cost " \
		--expect "ranks=nunatak probe cost"
	# a default Run whose every call probed would exceed the probes' budget:
	# its sites are estimated from sampled windows (2 000 000 calls: ~8 s, a
	# window closes; 300 000 ended before one did), shown ≈ and ± with an
	# "estimated" badge, and why is said once; every badge says why: a
	# site's windows, a rank's MPI time from its samples or its windows
	[ -x "$WORKLOADS/mpi/mpi_loop.openmpi" ] || fail "workload mpi_loop.openmpi not built"
	"$NUNATAK" run -o runs --name est -- mpirun.openmpi --oversubscribe -n 2 \
		"$WORKLOADS/mpi/mpi_loop.openmpi" allreduce 2000000 >est.out 2>err.txt ||
		fail "MPI run (mpi_loop): exit $?: $(cat err.txt)"
	run=$(run_dir_of err.txt)
	"$NUNATAK" summary --json "$run" >est.json 2>/dev/null || fail "summary --json (mpi_loop)"
	why=$(json est.json '[m["estimate"] for m in d["mpi"] if m["function"] == "MPI_Allreduce"][0]')
	case $why in "probed in "*" sampled windows"*) ;;
	*) fail "mpi_loop's Allreduce is not estimated from sampled windows: $why" ;; esac
	browse est "$run/report.html" --views ranks --no-print \
		--expect "ranks=≈ estimated, ± one standard error: 1 call site (marked estimated): $why" \
		--expect "ranks=estimated" --expect "ranks= ± " \
		--expect-no "ranks=.est .q-estimated:not([title^='probed in ']):not([title^='from ']):not([title^='extrapolated from its windows: '])"
else
	fail "Open MPI or the workload $WORKLOADS/mpi/pattern.openmpi is missing"
fi
echo "screenshots and logs in $ART"
exit 0
