# What `nunatak summary` does with a Run, by its state:
#  - still being written (its nunatak holds the lock): it reads what is
#    there, says on stderr that the Run is not final, exits 0, and neither
#    finalizes it nor records run-interrupted (the Run, once its nunatak
#    ends, has its exit code and no run-interrupted);
#  - its nunatak killed (-9) before any sample was stored: it finalizes
#    it, and says it was interrupted (a Degradation, not "none"); killed
#    later: finalized into plain files, with no symbolizer another user
#    can write; owned by another user: read, and left as it is;
#  - finalized: sealed plain SQLite (no -wal, no -shm, journal_mode
#    DELETE; a finalized Run left in WAL mode is sealed by summary), read from a read-only mount by nunatak, sqlite3 and Python's
#    plain sqlite3.connect(); a pivot still in WAL mode (the control) is
#    not readable there.
. "$TESTS_LIB/common.sh"
need_root_bpf
command -v sqlite3 >/dev/null || skip "sqlite3 missing (make deps)"

cd "$T"
# run_of DIR: the Run directory under DIR once its first manifest exists
run_of() {
	local run
	run=$(ls -d "$1"/*-2* 2>/dev/null | head -1)
	[ -n "$run" ] && [ -f "$run/manifest.json" ] && echo "$run"
}
# wait_run DIR: run_of, waited for (30 s)
wait_run() {
	wait_for 30 run_of "$1" >/dev/null && run_of "$1"
}
# batch_stored RUN: the Run's pivot holds a Batch
batch_stored() {
	[ "$(sql "$1" 'select count(*) from batches' 2>/dev/null)" -ge 1 ] 2>/dev/null
}
# a plain connection, as a user's script opens a Run (no mode=ro)
py_count() {
	python3 -c 'import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$1" "$2"
}

# --- 1. summary while the Run is written
timeout 60 "$NUNATAK" run -o live -- sleep 3 >app.out 2>run.err &
pid=$!
run=$(wait_run live) || fail "no Run appeared: $(cat run.err)"
wait_for 30 batch_stored "$run" || fail "no Batch stored in the running Run: $(tail -3 run.err)"
cp "$run/pivot.sqlite" wal-copy.sqlite # the control below: a pivot in WAL mode
timeout 30 "$NUNATAK" summary -o live >s.out 2>s.err
rc=$?
[ $rc = 0 ] || fail "summary of a running Run: exit $rc: $(cat s.err)"
grep -q "still being written" s.err || fail "summary does not say the Run is being written: $(cat s.err)"
grep -q "not final" s.err || fail "summary does not say the Run is not final: $(cat s.err)"
grep -q "finalizing it now" s.err && fail "summary finalized a running Run: $(cat s.err)"
grep -q "Batches (.* samples) stored so far" s.err || fail "summary does not say what the running Run holds: $(cat s.err)"
grep -q "no samples were recorded" s.err && fail "summary of a running Run claims no samples: $(cat s.err)"
[ "$(json "$run/manifest.json" 'd["run"]["exit_code"]')" = None ] || fail "summary wrote the manifest of a running Run"
kill -0 "$pid" 2>/dev/null || fail "nunatak did not outlive the summary"
wait "$pid"
rc=$?
[ $rc = 0 ] || fail "the live Run's nunatak exited $rc: $(cat run.err)"
[ "$(json "$run/manifest.json" 'd["run"]["exit_code"]')" = 0 ] || fail "the finished Run has no exit code"
json "$run/manifest.json" '[x["name"] for x in d["degradations"]]' | grep -q run-interrupted &&
	fail "the finished Run records run-interrupted: $(json "$run/manifest.json" 'd["degradations"]')"
[ -z "$(sql "$run" "select name from degradations where name = 'run-interrupted'")" ] ||
	fail "the pivot records run-interrupted"
echo "live: summary said 'still being written', the Run ended with exit code 0, no run-interrupted"

# --- 2. nunatak killed before any sample reached the pivot
"$NUNATAK" run -o killed -- sleep 3 >app.out 2>run.err & # its pid, for the kill
pid=$!
run=$(wait_run killed) || fail "no Run appeared: $(cat run.err)"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
batches=$(sql "$run" 'select count(*) from batches')
modules=$(sql "$run" 'select count(*) from modules')
[ "$modules" = 0 ] || skip "the kill came too late: $modules modules already stored"
timeout 60 "$NUNATAK" summary -o killed --json >k.json 2>k.err || fail "summary of the killed Run: $(cat k.err)"
grep -q "was never finalized" k.err || fail "summary does not say the Run was interrupted: $(cat k.err)"
json k.json '[x["name"] for x in d["degradations"]]' | grep -q run-interrupted ||
	fail "no run-interrupted Degradation: $(json k.json 'd["degradations"]')"
json "$run/manifest.json" '[x["name"] for x in d["degradations"]]' | grep -q run-interrupted ||
	fail "the manifest does not record run-interrupted"
timeout 60 "$NUNATAK" summary -o killed >k2.out 2>k2.err || fail "second summary: $(cat k2.err)"
grep -q "degradations: none" k2.err && fail "the interrupted Run claims no Degradation: $(cat k2.err)"
grep -q "was never finalized" k2.err && fail "finalized twice"
[ "$(ls -A "$run" | tr '\n' ' ')" = "manifest.json pivot.sqlite " ] || fail "the finalized Run is not plain files: $(ls -A "$run")"
echo "killed with $batches Batches, $modules modules stored: run-interrupted recorded"

# --- 2b. killed after Batches were stored: once finalized, plain files
"$NUNATAK" run -o killed2 -- "$WORKLOADS/hotspots" 3 >app.out 2>run.err &
pid=$!
run=$(wait_run killed2) || fail "no Run appeared: $(cat run.err)"
for _ in $(seq 300); do
	[ "$(sql "$run" 'select count(*) from batches' 2>/dev/null)" -gt 1 ] 2>/dev/null && break
	sleep 0.02
done
kill -KILL "$pid"
wait "$pid" 2>/dev/null
# the same Run in another user's hands: read, never written by root (but
# for the -shm index, which SQLite's readers of a WAL file keep)
cp -a "$run" theirs && chown -R nobody theirs
owned() { sha256sum theirs/manifest.json theirs/pivot.sqlite theirs/pivot.sqlite-wal | sha256sum; }
before=$(owned)
timeout 60 "$NUNATAK" summary "$T/theirs" >t.out 2>t.err || fail "summary of another user's Run: $(cat t.err)"
grep -q "not a private (0700) Run of yours" t.err || fail "summary does not say why it leaves the Run as it is: $(cat t.err)"
[ "$(owned)" = "$before" ] || fail "root wrote into another user's Run: $(ls -la theirs)"
# finalized with a symbolizer another user can replace: not run
mkdir -m 0777 evil
printf '#!/bin/sh\ntouch "%s"\n' "$T/pwned" >evil/llvm-symbolizer && chmod 0755 evil/llvm-symbolizer
printf '[tools]\nllvm-symbolizer = "%s"\n' "$T/evil/llvm-symbolizer" >site.toml
NUNATAK_SITE_CONFIG=$T/site.toml timeout 60 "$NUNATAK" summary -o killed2 >k.out 2>k.err ||
	fail "summary of the killed Run: $(cat k.err)"
grep -q "was never finalized" k.err || fail "the killed Run was not finalized: $(cat k.err)"
[ ! -e pwned ] || fail "summary ran a symbolizer another user can write"
grep -q "refusing '$T/evil/llvm-symbolizer'" k.err || fail "the untrusted symbolizer is not named: $(cat k.err)"
json "$run/manifest.json" '[x["name"] for x in d["degradations"]]' | grep -q "symbolizer-untrusted" ||
	fail "the finalized Run does not record symbolizer-untrusted: $(json "$run/manifest.json" 'd["degradations"]')"
[ "$(ls -A "$run" | tr '\n' ' ')" = "manifest.json pivot.sqlite " ] || fail "the finalized Run is not plain files: $(ls -A "$run")"

# --- 3. a finalized Run read from a read-only mount
"$NUNATAK" run -o done -- "$WORKLOADS/hotspots" 0.5 >app.out 2>run.err || fail "run: $(cat run.err)"
run=$(run_dir_of run.err)
[ ! -e "$run/pivot.sqlite-wal" ] && [ ! -e "$run/pivot.sqlite-shm" ] || fail "-wal/-shm left: $(ls -a "$run")"
[ "$(sql "$run" 'pragma journal_mode')" = delete ] || fail "the pivot is not sealed (journal_mode DELETE)"
# a finalized Run left in WAL mode (an older nunatak, a reader at the end)
# is sealed by the next summary
cp -a "$run" unsealed
[ "$(sqlite3 unsealed/pivot.sqlite 'pragma journal_mode = wal')" = wal ] || fail "cannot unseal the copy"
timeout 60 "$NUNATAK" summary "$T/unsealed" >u.out 2>u.err || fail "summary of an unsealed Run: $(cat u.err)"
[ "$(sqlite3 unsealed/pivot.sqlite 'pragma journal_mode')" = delete ] || fail "summary did not seal a finalized Run"
grep -q "finaliz" u.err && fail "summary finalized a finalized Run again: $(cat u.err)"
mkdir mnt
mount -t tmpfs -o size=32m tmpfs mnt || skip "cannot mount a tmpfs here"
trap 'umount "$T/mnt" 2>/dev/null; rm -rf "$T"' EXIT
cp -a "$run" mnt/
cp wal-copy.sqlite mnt/
mount -o remount,ro mnt || fail "cannot remount the tmpfs read-only"
copy=mnt/$(basename "$run")
touch "$copy/x" 2>/dev/null && fail "the mount is not read-only"
timeout 60 "$NUNATAK" summary "$copy" >r.out 2>r.err || fail "nunatak summary from a read-only mount: $(cat r.err)"
grep -q heavy_kernel r.err || fail "the summary from the read-only copy misses the hotspots: $(cat r.err)"
grep -q "finaliz" r.err && fail "summary tried to finalize a sealed Run: $(cat r.err)"
[ "$(sqlite3 "$copy/pivot.sqlite" 'pragma integrity_check')" = ok ] || fail "sqlite3 cannot read the read-only copy"
[ "$(sqlite3 "$copy/pivot.sqlite" 'select count(*) > 0 from samples')" = 1 ] || fail "sqlite3 reads no sample"
n=$(py_count "$copy/pivot.sqlite" 'select sum(sample_count) from samples') || fail "python3's sqlite3 cannot read the read-only copy"
[ "$n" -gt 100 ] || fail "python3 reads only $n samples"
# the control: a pivot left in WAL mode is what a read-only place cannot read
py_count mnt/wal-copy.sqlite 'select count(*) from batches' >/dev/null 2>&1 &&
	fail "the control (a WAL pivot) is readable: the read-only check proves nothing"
umount mnt
echo "sealed Run read read-only by nunatak, sqlite3 and python3 ($n samples); the WAL control is not"
