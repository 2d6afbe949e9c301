# `nunatak export --format folded` on real Runs of the hotspots workload:
# every line parses (frames, a space, a count), the counts add up to the
# Run's cpu-clock samples in the pivot, heavy_kernel and light_kernel sit
# on main; -o makes a 0600 file, refuses an existing one and never follows
# a link planted there, --force replaces it; `nunatak summary DIR` and
# `nunatak export DIR` on a runs directory read its latest Run; no
# pivot.sqlite-wal/-shm is left by run, summary or export.
. "$TESTS_LIB/common.sh"
need_root_bpf

cd "$T"
"$NUNATAK" run -o runs --name older -- "$WORKLOADS/hotspots" 1 >out1.txt 2>err1.txt ||
	fail "first run: exit $?: $(cat err1.txt)"
older=$(run_dir_of err1.txt)
sleep 1 # another second: another Run name, a later one
"$NUNATAK" run -o runs --name newer -- "$WORKLOADS/hotspots" 2 >out.txt 2>err.txt ||
	fail "run: exit $?: $(cat err.txt)"
run=$(run_dir_of err.txt)
[ -f "$run/pivot.sqlite" ] || fail "no Run in: $(cat err.txt)"

no_wal() {
	for r in "$older" "$run"; do
		[ ! -e "$r/pivot.sqlite-wal" ] && [ ! -e "$r/pivot.sqlite-shm" ] ||
			fail "$1 left -wal/-shm in $r: $(ls -A "$r")"
	done
}
no_wal "nunatak run"
[ "$(sql "$run" 'pragma journal_mode')" = delete ] || fail "the pivot is not sealed"

"$NUNATAK" export "$run" --format folded >run.folded 2>export.err || fail "export: exit $?: $(cat export.err)"
no_wal "nunatak export"
grep -q "folded stacks" export.err || fail "export does not say what it wrote: $(cat export.err)"
total=$(sql "$run" "select sum(sample_count) from samples where counter = 'cpu-clock'")
# exit 2: only the call chains are wrong; the other checks still run
chains=ok
python3 - run.folded "$total" <<'PY'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
total = int(sys.argv[2])
ok, chains, counts, leaf = True, True, 0, {}
for line in lines:
    stack, _, count = line.rpartition(" ")
    if not stack or not count.isdigit() or int(count) <= 0:
        print("FAIL malformed line:", repr(line)); ok = False; continue
    frames = stack.split(";")
    if any(not f for f in frames):
        print("FAIL empty frame in:", repr(line)); ok = False
    counts += int(count)
    name = frames[-1]
    if name in ("heavy_kernel", "light_kernel"):
        on_main = "main" in frames[:-1] and frames[0] != "[truncated]"
        n, m = leaf.get(name, (0, 0))
        leaf[name] = (n + int(count), m + (int(count) if on_main else 0))
print(f"{len(lines)} lines, {counts} samples, the Run holds {total}")
if counts != total:
    print("FAIL the counts do not add up to the Run's samples"); ok = False
for name in ("heavy_kernel", "light_kernel"):
    n, m = leaf.get(name, (0, 0))
    print(f"{name}: {n} samples, {m} with main below it")
    if not n:
        print(f"FAIL {name} is not a leaf of any stack"); ok = False
    elif m < 0.99 * n:
        print(f"FAIL {name}: main is below it in {100.0 * m / n:.1f}% of its samples, not 99%")
        chains = False
sys.exit(1 if not ok else 0 if chains else 2)
PY
rc=$?
[ $rc = 2 ] && chains="heavy_kernel/light_kernel not on main (see above)"
[ $rc = 0 ] || [ $rc = 2 ] || fail "folded stacks (see above)"
json_total=$("$NUNATAK" summary --json "$run" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["samples"])')
echo "summary --json totals.samples=$json_total, pivot samples=$total"

# a finished Run left in WAL mode (a reader held it when it was sealed): a
# reader without a symbolizer (export, as `nunatak run`'s own summary)
# seals it rather than leave -wal/-shm beside it
if command -v sqlite3 >/dev/null; then
	cp -a "$run" unsealed
	[ "$(sqlite3 unsealed/pivot.sqlite 'pragma journal_mode = wal')" = wal ] || fail "cannot unseal the copy"
	"$NUNATAK" export "$T/unsealed" -f folded >unsealed.folded 2>/dev/null || fail "export of an unsealed Run"
	cmp -s unsealed.folded run.folded || fail "the unsealed copy exports other lines"
	[ "$(ls -A unsealed | tr '\n' ' ')" = "manifest.json pivot.sqlite report.html " ] ||
		fail "export left $(ls -A unsealed | tr '\n' ' ')in an unsealed finished Run"
	[ "$(sqlite3 unsealed/pivot.sqlite 'pragma journal_mode')" = delete ] || fail "export did not seal it"
fi

# -o: a new 0600 file, the same lines
"$NUNATAK" export "$run" -f folded -o out.folded 2>o.err || fail "export -o: $(cat o.err)"
cmp -s out.folded run.folded || fail "-o wrote other lines than stdout"
[ "$(stat -c %a out.folded)" = 600 ] || fail "out.folded is $(stat -c %a out.folded), not 600"
# an existing file is refused, and left as it is
echo keep >kept.folded
"$NUNATAK" export "$run" -f folded -o kept.folded 2>e.err
rc=$?
[ $rc = 1 ] || fail "export over an existing file: exit $rc, not 1"
grep -q "exists: not overwritten" e.err || fail "the refusal is not said: $(cat e.err)"
[ "$(cat kept.folded)" = keep ] || fail "the existing file was changed"
# a link planted at FILE is never followed, not even with --force
echo secret >victim
ln -s "$T/victim" link.folded
"$NUNATAK" export "$run" -f folded -o link.folded 2>l.err && fail "export wrote through a link"
"$NUNATAK" export "$run" -f folded -o link.folded --force 2>l.err || fail "--force: $(cat l.err)"
[ "$(cat victim)" = secret ] || fail "the link's target was written"
[ -L link.folded ] && fail "--force left the link in place"
cmp -s link.folded run.folded || fail "--force wrote other lines"
# bad usage: 125, said
"$NUNATAK" export "$run" 2>u.err
[ $? = 125 ] || fail "export without --format: not 125"
grep -q -- "--format is required" u.err || fail "missing --format not said: $(cat u.err)"
"$NUNATAK" export "$run" --format svg 2>u.err
[ $? = 125 ] || fail "export --format svg: not 125"
"$NUNATAK" export "$T/nowhere" -f folded 2>u.err
[ $? = 1 ] && grep -q "no Run at" u.err || fail "a missing Run: $(cat u.err)"

# a runs directory: its latest Run, for summary and export
"$NUNATAK" summary runs >s.out 2>s.err || fail "summary DIR: exit $?: $(cat s.err)"
[ "$(sed -n 's/^Run: //p' s.err)" = "runs/$(basename "$run")" ] ||
	fail "summary of the runs directory did not show its latest Run: $(tail -1 s.err)"
grep -q heavy_kernel s.err || fail "summary DIR shows no hotspot: $(cat s.err)"
"$NUNATAK" summary --json runs >s.json 2>/dev/null || fail "summary --json DIR"
[ "$(json s.json 'd["run"]')" = "runs/$(basename "$run")" ] || fail "summary --json DIR: $(json s.json 'd["run"]')"
json s.json '[h["name"] for h in d["hotspots"] if "above_floor" in h]' | grep -q heavy_kernel ||
	fail "hotspots without above_floor"
[ "$(json s.json 'len(d["processes"])')" -ge 1 ] || fail "no processes in the JSON"
json s.json 'd["kernel_share"]' >/dev/null || fail "no kernel_share"
"$NUNATAK" export runs -f folded >latest.folded 2>/dev/null || fail "export DIR"
cmp -s latest.folded run.folded || fail "export of the runs directory is not its latest Run"
"$NUNATAK" summary "$older" >/dev/null 2>&1 || fail "summary of the older Run"
no_wal "nunatak summary"
[ "$chains" = ok ] || fail "$chains"
echo "export: $(wc -l <run.folded) lines, $total samples; summary/export DIR read $(basename "$run")"
