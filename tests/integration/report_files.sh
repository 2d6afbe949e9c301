# The HTML report as files, on a real Run of the hotspots workload:
# `nunatak run` writes report.html (0600, not empty) and prints
# `Report: PATH` after `Run: DIR`; the page is one file (no http:// or
# https:// src, href, @import or url()); it holds the hot function and the
# workload's source lines; `nunatak report --no-source` writes
# report-no-source.html, which holds no line of tests/workloads/hotspots.c
# (in the HTML, escaped or not, nor in its payload); the page's summary is
# `nunatak summary --json`'s (one model: they cannot drift apart) with
# each Hotspot's quality and inline chains added; `--json` parses and
# says the page's path and size; the report of a runs directory is its
# latest Run's; no temporary file is left in the Run.
. "$TESTS_LIB/common.sh"
need_root_bpf

src="$TESTS_LIB/../workloads/hotspots.c"
[ -r "$src" ] || fail "no workload source at $src"
cd "$T"
"$NUNATAK" run -o runs --name rep -- "$WORKLOADS/hotspots" 1 >out.txt 2>err.txt ||
	fail "run: exit $?: $(cat err.txt)"
run=$(run_dir_of err.txt)
[ -f "$run/pivot.sqlite" ] || fail "no Run in: $(cat err.txt)"
page="$run/report.html"
grep -qx "Report: $page" err.txt || fail "run does not print 'Report: $page': $(tail -5 err.txt)"
[ "$(grep -n '^Run: ' err.txt | cut -d: -f1)" -lt "$(grep -n '^Report: ' err.txt | cut -d: -f1)" ] ||
	fail "'Report:' is not after 'Run:': $(tail -5 err.txt)"
[ -s "$page" ] || fail "report.html is empty or missing"
[ "$(stat -c %a "$page")" = 600 ] || fail "report.html is $(stat -c %a "$page"), not 600"
[ "$(stat -c %u "$page")" = "$(stat -c %u "$run")" ] || fail "report.html is not owned as its Run"

# one file: nothing fetched from anywhere
if grep -Eiq "(src|href)[[:space:]]*=[[:space:]]*[\"']?[[:space:]]*(https?:)?//|@import|url\([\"']?[[:space:]]*(https?:)?//" "$page"; then
	fail "the page loads something from the network: $(grep -Eio "(src|href)=[^ >]*//[^ >]*|@import[^;]*|url\([^)]*\)" "$page" | head -3)"
fi

"$NUNATAK" report "$run" --no-source --json >nosrc.json 2>nosrc.err ||
	fail "report --no-source: exit $?: $(cat nosrc.err)"
nosrc="$run/report-no-source.html"
grep -qx "Report: $nosrc" nosrc.err || fail "report does not print 'Report: $nosrc': $(cat nosrc.err)"
[ "$(stat -c %a "$nosrc")" = 600 ] || fail "report-no-source.html is $(stat -c %a "$nosrc"), not 600"
[ "$(json nosrc.json 'd["report"]')" = "$nosrc" ] || fail "--json report: $(cat nosrc.json)"
[ "$(json nosrc.json 'd["bytes"]')" = "$(stat -c %s "$nosrc")" ] || fail "--json bytes: $(cat nosrc.json)"
[ "$(json nosrc.json 'd["schema"]')" = 1 ] || fail "--json schema: $(cat nosrc.json)"
[ "$(json nosrc.json 'd["no_source"]')" = True ] || fail "--json no_source: $(cat nosrc.json)"

"$NUNATAK" summary --json "$run" >summary.json 2>summary.err || fail "summary --json: $(cat summary.err)"

# the source's lines: in report.html (so the check can fail), in no form in
# report-no-source.html; the summary the same as summary --json's
python3 - "$src" "$page" "$nosrc" summary.json <<'PY' || fail "source lines or summary (see above)"
import html, json, re, sys
src, with_page, without_page, summary = sys.argv[1:5]
lines = {l.strip() for l in open(src, encoding="utf-8")}
lines = [l for l in lines if len(l) >= 12]

def texts(path):
    page = open(path, encoding="utf-8").read()
    m = re.search(r'<script id="nunatak-payload" type="application/json">(.*?)</script>', page, re.S)
    if not m:
        print("FAIL no payload in", path); sys.exit(1)
    payload = json.loads(m.group(1))
    if payload["format"]["name"] != "nunatak-report" or payload["format"]["schema"] != 1:
        print("FAIL payload format:", payload["format"]); sys.exit(1)
    return payload, page + html.unescape(page) + json.dumps(payload, ensure_ascii=False)

payload, text = texts(with_page)
found = [l for l in lines if l in text]
names = [h["name"] for h in payload["summary"]["hotspots"]]
print(f"report.html: {len(found)} of {len(lines)} source lines, hotspots {names[:3]}")
if not found or "heavy_kernel" not in names or payload["no_source"]:
    print("FAIL report.html holds no source line or no heavy_kernel"); sys.exit(1)
cli = json.load(open(summary))
for k in ("run", "manifest_run", "being_written"):
    cli.pop(k)
page_summary = payload["summary"]
for h in page_summary["hotspots"]:
    if "quality" not in h or "inline" not in h:
        print("FAIL a Hotspot without quality or inline:", h["name"]); sys.exit(1)
    del h["quality"], h["inline"]
if page_summary != cli:
    diff = [k for k in set(cli) | set(page_summary) if cli.get(k) != page_summary.get(k)]
    print("FAIL the page's summary differs from summary --json in", diff); sys.exit(1)
payload, text = texts(without_page)
leaked = [l for l in lines if l in text]
if leaked or not payload["no_source"]:
    print("FAIL report-no-source.html holds source lines:", leaked[:3]); sys.exit(1)
status = {(h.get("source") or {}).get("status") for h in payload["summary"]["hotspots"]} - {None}
if status != {"disabled"}:
    print("FAIL source status in report-no-source.html:", status); sys.exit(1)
print(f"report-no-source.html: none of the {len(lines)} lines")
PY

# a runs directory: its latest Run's page, made again
rm "$page"
"$NUNATAK" report runs >again.txt 2>again.err || fail "report runs: exit $?: $(cat again.err)"
grep -qx "Report: $page" again.err || fail "report of the runs directory: $(cat again.err)"
[ -s "$page" ] || fail "report.html not made again"
leftover=$(ls -A "$run" | grep -v -x -e pivot.sqlite -e manifest.json -e report.html -e report-no-source.html)
[ -z "$leftover" ] || fail "files left in the Run: $leftover"
echo "report.html $(stat -c %s "$page") bytes, report-no-source.html $(stat -c %s "$nosrc") bytes"
