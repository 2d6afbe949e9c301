# Source extracts: a Run of the demo workload embeds the hot loop's lines
# with their shares; --no-source leaves no line of code anywhere in the
# Run; a copy built with DWARF 5 checksums is verified, then, its source
# edited after the build, neither shown nor embedded (the reason says it
# changed); a source moved after the build is found through --source-map
# and by its name under the project root.
. "$TESTS_LIB/common.sh"
need_root_bpf

cd "$T"
HOT='x = x \* 1.0000001 + 0.5 / (x + 1.0);'

# 1. the demo workload: heavy_kernel's extract holds the hot loop
"$NUNATAK" run --name src -- "$WORKLOADS/hotspots" 2 >out.txt 2>err.txt || fail "exit $?: $(cat err.txt)"
run=$(run_dir_of err.txt)
grep -q 'source of heavy_kernel' err.txt || fail "the summary shows no source: $(cat err.txt)"
"$NUNATAK" summary --json "$run" >s.json 2>/dev/null || fail "summary --json failed"
src() { json s.json "[h['source'] for h in d['hotspots'] if h['name']=='heavy_kernel'][0]$1"; }
status=$(src "['status']")
case "$status" in embedded | not-verified) ;; *) fail "heavy_kernel's source is $status: $(src '')" ;; esac
file=$(src "['resolved']")
[ -f "$file" ] || fail "resolved source '$file' is not a file"
for_line=$(grep -n 'for (i = 0; i < 200000; i++)' "$file" | cut -d: -f1)
x_line=$(grep -n "$HOT" "$file" | cut -d: -f1)
[ -n "$for_line" ] && [ -n "$x_line" ] || fail "the hot loop is not in '$file'"
# the sampled lines: the hot loop's lines hold (almost) all of them
hot=$(src "['lines']" | python3 -c "
import ast, sys
lines = ast.literal_eval(sys.stdin.read())
total = sum(l['samples'] for l in lines)
loop = sum(l['samples'] for l in lines if l['line'] in ($for_line, $x_line))
print(loop / total if total else 0)")
assert_near "$hot" 1 0.05 "share of heavy_kernel's sampled lines in the hot loop"
# the text stored is the file's, line for line
text=$(src "['lines']" | python3 -c "
import ast, sys
print([l['text'] for l in ast.literal_eval(sys.stdin.read()) if l['line'] == $x_line][0])")
[ "$text" = "$(sed -n "${x_line}p" "$file")" ] || fail "line $x_line stored as '$text'"
[ "$(sql "$run" "select count(*) from extracts e join sources s on s.id = e.source
	where s.status in ('embedded', 'not-verified') and e.text like '%1.0000001%'")" -ge 1 ] ||
	fail "the pivot holds no extract line of the hot loop"
first=$(src "['first_line']")
[ "$first" -le $((for_line - 3)) ] || fail "extract starts at $first, after 3 lines before the loop"

# 2. --no-source: no line of the source anywhere in the Run
"$NUNATAK" run --no-source --name nosrc -- "$WORKLOADS/hotspots" 1 >/dev/null 2>err.txt ||
	fail "--no-source: exit $?: $(cat err.txt)"
run=$(run_dir_of err.txt)
# (fixed strings: as a regex "1.0000001" also matches numbers such as
# 4110000001 in report.html's payload)
code='x = x * 1.0000001 + 0.5 / (x + 1.0);'
if grep -rqF -e "$code" -e 'for (i = 0; i < 200000; i++)' "$run"; then
	fail "--no-source: a line of code is in $(grep -rlF -e "$code" -e 'for (i = 0; i < 200000; i++)' "$run")"
fi
[ "$(sql "$run" "select distinct status || ': ' || reason from sources")" = "disabled: --no-source" ] ||
	fail "--no-source: sources say $(sql "$run" "select status, reason from sources")"
[ "$(json "$run/manifest.json" 'd["provenance"]["effective_configuration"]["source.embed"]["value"]')" = False ] ||
	fail "--no-source not in the effective configuration"

# 3. DWARF 5 checksums: verified, then stale once the source is edited
command -v clang >/dev/null || skip "no clang to build with DWARF 5 checksums"
mkdir w && cp "$file" w/hotspots.c && (cd w && clang -O2 -g -gdwarf-5 -o hs hotspots.c) || fail "clang build"
"$NUNATAK" run --name fresh -- w/hs 1 >/dev/null 2>err.txt || fail "fresh: exit $?"
run=$(run_dir_of err.txt)
[ "$(sql "$run" "select s.status from sources s join hotspots h on h.id = s.hotspot where h.name = 'heavy_kernel'")" = embedded ] ||
	fail "a DWARF 5 build's source is not embedded: $(sql "$run" "select status, reason from sources")"
sed -i 's/one unit of work/one unit of work, edited/' w/hotspots.c
"$NUNATAK" run --name edited -- w/hs 1 >/dev/null 2>err.txt || fail "edited: exit $?"
run=$(run_dir_of err.txt)
reason=$(sql "$run" "select s.status || ': ' || s.reason from sources s join hotspots h on h.id = s.hotspot where h.name = 'heavy_kernel'")
case "$reason" in "stale: "*"changed since the build"*) ;; *) fail "edited source: $reason" ;; esac
grep -q "source of heavy_kernel.*changed since the build" err.txt || fail "the summary does not say it changed"
if grep -rqF -e "$code" "$run"; then fail "a line of the edited source is in the Run"; fi

# 4. moved after the build: --source-map, then the name under the project root
mkdir -p b proj/.git proj/deep/er && cp "$file" b/hotspots.c && (cd b && clang -O2 -g -gdwarf-5 -o hs hotspots.c) ||
	fail "clang build"
mv b/hotspots.c proj/deep/er/hotspots.c
"$NUNATAK" run --source-map "$T/b=$T/proj/deep/er" --name mapped -- b/hs 1 >/dev/null 2>err.txt || fail "mapped: exit $?"
run=$(run_dir_of err.txt)
[ "$(sql "$run" "select s.status || ' ' || s.resolved_path from sources s join hotspots h on h.id = s.hotspot where h.name = 'heavy_kernel'")" = "embedded $T/proj/deep/er/hotspots.c" ] ||
	fail "--source-map: $(sql "$run" "select status, resolved_path, reason from sources")"
(cd proj/deep && "$NUNATAK" run -o "$T/runs" --name byname -- "$T/b/hs" 1 >/dev/null 2>"$T/err.txt") || fail "byname: exit $?"
run=$(run_dir_of err.txt)
[ "$(sql "$run" "select s.status || ' ' || s.resolved_path from sources s join hotspots h on h.id = s.hotspot where h.name = 'heavy_kernel'")" = "embedded $T/proj/deep/er/hotspots.c" ] ||
	fail "basename search: $(sql "$run" "select status, resolved_path, reason from sources")"
echo "demo: $status, hot loop $hot of the sampled lines; edited: stale; moved: mapped and found by name"
