#!/bin/bash
# report_size — how big and how slow the HTML report of a big Run is: a
# real Run's manifest (`nunatak run -- true`) with a synthetic pivot built
# through the pivot API (build/bench/report-pivot: 64 ranks, 5000
# Hotspots, 100 000 distinct Stacks, 2000 MPI Events per rank by
# default), then `nunatak report` on it. Prints the page's size (the
# issue's bound: under 20 MB) and the time to make it, then opens it in
# headless Chromium (tests/report/browser.js: synthesis, flame graph and
# timeline) and prints the time the page took to load and each view to be
# ready (the issue's bound: opens in under 3 s). Exit 1 when a bound is
# not met.
#
# usage: report_size.sh NUNATAK BENCH_DIR [RANKS HOTSPOTS STACKS EVENTS]   (root)
set -eu
nunatak=$1 bench=$2
shift 2
[ "$(id -u)" = 0 ] || { echo "SKIPPED: report_size needs root (nunatak run)"; exit 77; }
T=$(mktemp -d /tmp/nunatak-report-size.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$nunatak" run -o "$T/runs" --name big -- true >/dev/null 2>"$T/run.err" ||
	{ cat "$T/run.err"; exit 1; }
run=$(sed -n 's/^Run: //p' "$T/run.err" | tail -1)
rm -f "$run/pivot.sqlite" "$run/report.html"
start=$(date +%s.%N)
"$bench/report-pivot" "$run/pivot.sqlite" "$@"
built=$(date +%s.%N)
/usr/bin/time -f '%M' -o "$T/rss" "$nunatak" report "$run" --json >"$T/report.json" 2>"$T/report.err" ||
	{ cat "$T/report.err"; exit 1; }
done_=$(date +%s.%N)
python3 - "$T/report.json" "$run/report.html" "$start" "$built" "$done_" "$(cat "$T/rss")" <<'PY'
import json, re, sys
j = json.load(open(sys.argv[1]))
page = open(sys.argv[2], encoding="utf-8").read()
m = re.search(r'<script id="nunatak-payload" type="application/json">(.*?)</script>', page, re.S)
p = json.loads(m.group(1))
start, built, done, rss = map(float, sys.argv[3:7])
mb = j["bytes"] / 1e6
print(f"page: {j['bytes']} bytes ({mb:.2f} MB), payload {len(m.group(1))} bytes")
f, e = p["flame"], p["events"]
print(f"flame: {len(f['stacks'])} Stacks kept of {f['limit']['of'] if f['limit'] else len(f['stacks'])}, "
      f"{len(f['frames'])} frames, {f['kept_samples']} of {f['samples']} samples; "
      f"events: {len(e['events'])}{' of ' + str(e['limit']['of']) if e['limit'] else ''}; "
      f"hotspots: {len(p['summary']['hotspots'])}; loci: {len(p['loci'])}")
print(f"pivot built in {built - start:.1f} s; nunatak report in {done - built:.1f} s, max RSS {rss / 1024:.0f} MiB")
print("under 20 MB:", "yes" if mb < 20 else "NO")
sys.exit(0 if mb < 20 else 1)
PY
browser=$(dirname "$0")/../report/browser.js
if ! command -v node >/dev/null || ! command -v chromium >/dev/null; then
	echo "open: SKIPPED (node or chromium missing)"
	exit 0
fi
node "$browser" --report "$run/report.html" --artefacts "$T/shots" --no-print \
	--views synthesis,flame,timeline --timeout 60 >"$T/browser.out" 2>&1 ||
	{ cat "$T/browser.out"; exit 1; }
grep -E "^(ok|FAILED).*(open|view )" "$T/browser.out" | sed 's/^/  /'
ms=$(sed -n 's/.* loaded in \([0-9]*\) ms.*/\1/p' "$T/browser.out" | head -1)
echo "opens in under 3 s: $([ -n "$ms" ] && [ "$ms" -lt 3000 ] && echo yes || echo "NO (${ms:-?} ms)")"
[ -n "$ms" ] && [ "$ms" -lt 3000 ]
