# Totals per executable on a real Run of many processes: a `make -j2` of
# generated C files (one gcc driver, cc1 and as per file). The compiler
# proper (cc1) is the top executable of the summary and of `summary --json`,
# with one process per file; every executable's samples, share and process
# count are the sums of the per-process rows of the same JSON; its share
# in the text is the JSON's; the executables table comes before the
# per-process one, in the terminal and in the report's page (headless
# Chromium, when installed).
. "$TESTS_LIB/common.sh"
need_root_bpf
command -v make >/dev/null || skip "make is not installed"
command -v gcc >/dev/null || skip "gcc is not installed"

FILES=6
cd "$T"
mkdir src
# each file: 300 inlined functions, enough for cc1 to work ~1 s at -O2
for i in $(seq 1 $FILES); do
	python3 - "$i" >"src/u$i.c" <<'PY' || fail "cannot generate src/u$1.c"
import sys
i = int(sys.argv[1])
for k in range(300):
    print(f"static inline int f{i}_{k}(int x) {{ int s = 0; "
          f"for (int j = 0; j < x; j++) s += j * {k} ^ (s >> 3); return s; }}")
print(f"int unit{i}(int x) {{ int s = 0;")
for k in range(300):
    print(f"  s += f{i}_{k}(x + {k});")
print("  return s; }")
PY
done
printf 'OBJS := %s\nall: $(OBJS)\n%%.o: %%.c\n\tgcc -O2 -c $< -o $@\n' \
	"$(cd src && ls u*.c | sed 's/\.c$/.o/' | tr '\n' ' ')" >src/Makefile

"$NUNATAK" run -o runs --name make -- make -j2 -C src >out.txt 2>err.txt ||
	fail "run: exit $?: $(cat err.txt)"
run=$(run_dir_of err.txt)
[ -d "$run" ] || fail "no Run directory in: $(cat err.txt)"
[ "$(ls src/*.o | wc -l)" = "$FILES" ] || fail "make did not build $FILES objects"

# the terminal: executables, then processes
exe_line=$(grep -n '^executables: ' err.txt | head -1 | cut -d: -f1)
proc_line=$(grep -n '^processes: ' err.txt | head -1 | cut -d: -f1)
[ -n "$exe_line" ] || fail "no executables section in the summary: $(cat err.txt)"
[ -n "$proc_line" ] || fail "no processes section in the summary: $(cat err.txt)"
[ "$exe_line" -lt "$proc_line" ] || fail "the executables section is not before the processes one"
# its first row (after the heading and the column heads) is cc1's
top=$(sed -n "$((exe_line + 2))p" err.txt)
top_name=$(echo "$top" | awk '{print $NF}')
[ "$top_name" = cc1 ] || fail "top executable '$top_name', expected cc1: $top"
top_share=$(echo "$top" | awk '{print $1}')

"$NUNATAK" summary --json "$run" >s.json 2>s.err || fail "summary --json: $(cat s.err)"
python3 - s.json "$FILES" "$top_share" <<'PY' || fail "executables in summary --json (above)"
import json, sys
d = json.load(open(sys.argv[1]))
files, text_share = int(sys.argv[2]), sys.argv[3]
exes, procs = d["executables"], d["processes"]
errors = []
def check(ok, what):
    if not ok:
        errors.append(what)
check(len(exes) >= 3, f"{len(exes)} executables, expected cc1, as, gcc and make at least")
top = exes[0]
check(top["name"] == "cc1", f"top executable {top['name']}, expected cc1")
check(top["executable"] and top["executable"].endswith("/cc1"), f"cc1's path {top['executable']}")
check(top["processes"] == files, f"cc1: {top['processes']} processes, expected {files}")
check(top["share"] > 0.5, f"cc1's share {top['share']}: the compiler should dominate")
check(f"{100 * top['share']:.1f}%" == text_share, f"share {top['share']} in JSON, {text_share} in the text")
# a process' samples include those of nunatak's own code that ran in it
# (its BPF programs at an exec, say): the totals leave them out
total = sum(p["samples"] for p in procs)
own = (d.get("nunatak_probes") or {}).get("samples") or 0
check(total == d["totals"]["samples"] + own,
      f"processes' samples {total} != totals {d['totals']['samples']} + nunatak's {own}")
# each executable: the sums of its processes' rows
for e in exes:
    mine = [p for p in procs if p["executable"] == e["executable"] and
            (e["executable"] is not None or p["comm"] == e["comm"])]
    check(len(mine) == e["processes"], f"{e['name']}: {e['processes']} processes, {len(mine)} rows")
    check(sum(p["samples"] for p in mine) == e["samples"], f"{e['name']}: samples")
    check(abs(sum(p["share"] for p in mine) - e["share"]) < 1e-9, f"{e['name']}: share")
    if e["seconds"] is not None:
        check(abs(sum(p["seconds"] for p in mine) - e["seconds"]) < 1e-6, f"{e['name']}: seconds")
    if e["cpu_time"] is not None:
        check(abs(sum(p["cpu_time"] for p in mine) - e["cpu_time"]) < 1e-6, f"{e['name']}: CPU time")
check(sum(e["processes"] for e in exes) == len(procs), "every process in one executable")
check(abs(sum(e["share"] for e in exes) - 1) < 1e-9, "shares add up to 1")
check([e["samples"] for e in exes] == sorted((e["samples"] for e in exes), reverse=True),
      "executables by decreasing samples")
for e in errors:
    print("executables:", e)
print(json.dumps(exes[:4], indent=1))
sys.exit(1 if errors else 0)
PY

# the page: the Executables table before the Processes one
if ! command -v node >/dev/null || ! command -v chromium >/dev/null; then
	echo "SKIPPED (page): node or chromium is not installed"
else
	ART=${ARTEFACTS:-/tmp/nunatak-artefacts}/executables
	rm -rf "$ART" && mkdir -p "$ART" || fail "cannot make $ART"
	node "$TESTS_LIB/../report/browser.js" --report "$run/report.html" --artefacts "$ART" \
		--views components --no-print --expect "components=Executables (" \
		--expect-before "components=Executables (|Processes" >"$ART/browser.log" 2>&1
	rc=$?
	[ "$rc" = 0 ] || [ "$rc" = 77 ] || fail "page: $(grep -v '^ok' "$ART/browser.log")"
	[ "$rc" = 77 ] && echo "page: $(grep SKIPPED "$ART/browser.log")"
fi
sed -n "${exe_line},$((proc_line - 1))p" err.txt
exit 0
