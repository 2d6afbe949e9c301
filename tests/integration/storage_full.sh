# Disk full during a run: a 2 MB tmpfs as runs directory, filled with dd
# once the Run has stored its first Batch, while the application samples
# at 10 kHz. The application runs once, with its output and exit code;
# nunatak ends promptly; the pivot stays consistent (integrity_check ok)
# and readable by `nunatak summary`; the loss is named: storage-failed
# with a sample count, in the Run (the Aggregator's reserve holds it) or
# else on stderr. SIGTERM during the full-disk phase reaches the
# application. When space comes back, the kept Batches are stored.
. "$TESTS_LIB/common.sh"
need_root_bpf
command -v sqlite3 >/dev/null || skip "sqlite3 not installed"

RUNS="$T/runs"
mkdir "$RUNS"
mount -t tmpfs -o size=2m,mode=0700 nunatak-test "$RUNS" || skip "cannot mount a tmpfs (not allowed here)"
trap 'umount "$RUNS" 2>/dev/null; rm -rf "$T"' EXIT

now() { date +%s.%N; }

# wait_first_batch: until the Run in $RUNS has stored a Batch with samples
wait_first_batch() {
	wait_for 30 has_samples "$RUNS" 1 || fail "no Batch stored 30 s after the start: $(tail -3 err.txt)"
}

fill() { dd if=/dev/zero of="$RUNS/fill" bs=4k 2>/dev/null; true; }

# wait_disk_full: until nunatak has found the disk full (a Batch it could
# not store), not a fixed time: the space a full file system still has
# inside the pivot's own files (its WAL) may take a Batch or two more
wait_disk_full() {
	wait_for 30 grep -q 'cannot store batches' err.txt ||
		fail "the disk was full but nunatak stored every Batch: $(tail -3 err.txt)"
}

reset_runs() {
	umount "$RUNS" && mount -t tmpfs -o size=2m,mode=0700 nunatak-test "$RUNS" || fail "cannot remount the tmpfs"
}

# storage_loss RUN ERRFILE: the sample count of storage-failed, from the
# Run or else from nunatak's stderr; empty when nothing was named
storage_loss() {
	local n
	n=$(sql "$1" "select message from degradations where name = 'storage-failed'" 2>/dev/null |
		sed -n 's/^\([0-9]*\) samples in .*/\1/p')
	[ -n "$n" ] || n=$(sed -n 's/.*degradation storage-failed: \([0-9]*\) samples in .*/\1/p' "$2" | tail -1)
	echo "$n"
}

cd "$T"

# 1. full from the second Batch on, until the end
t0=$(now)
timeout 60 "$NUNATAK" run -o "$RUNS" -F 10000 -- "$WORKLOADS/hotspots" 5 3 >out.txt 2>err.txt &
pid=$!
wait_first_batch
fill
[ "$(df --output=avail "$RUNS" | tail -1 | tr -d ' ')" -lt 8 ] || fail "the tmpfs is not full"
wait_disk_full
wait $pid
rc=$?
t1=$(now)
[ $rc = 3 ] || fail "exit code $rc, expected the application's 3 (stderr: $(tail -5 err.txt))"
[ "$(grep -c 'hotspots: ok' out.txt)" = 1 ] || fail "the application did not run exactly once: $(cat out.txt)"
elapsed=$(python3 -c "print(round($t1 - $t0, 1))")
python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 5 + 15 else 1)" || fail "nunatak took ${elapsed}s for a 5 s application"
run=$(run_dir_of err.txt)
[ -d "$run" ] || fail "no Run directory named on stderr"
[ "$(sqlite3 "$run/pivot.sqlite" 'pragma integrity_check')" = ok ] || fail "integrity_check of a pivot written on a full disk"
[ ! -e "$run/storage-reserve" ] || fail "the storage reserve was left in the Run"
lost=$(storage_loss "$run" err.txt)
[ -n "$lost" ] && [ "$lost" -gt 0 ] || fail "no storage-failed with a sample count, in the Run or on stderr: $(grep -i storage err.txt)"
where=stderr
sql "$run" "select 1 from degradations where name = 'storage-failed'" | grep -q 1 && where=Run
stored=$(sql "$run" 'select coalesce(sum(sample_count), 0) from samples')
timeout 30 "$NUNATAK" summary "$run" >summary.txt 2>summary.err || fail "summary of the Run written on a full disk: $(cat summary.err)"
[ "$where" = stderr ] || grep -q 'storage-failed' summary.txt summary.err || fail "summary does not name storage-failed"
echo "full disk: app exit 3 once, nunatak ${elapsed}s, $stored samples stored, $lost samples lost (named in the $where)"

# 2. SIGTERM while the disk is full: forwarded, nunatak ends promptly
reset_runs
timeout 60 "$NUNATAK" run -o "$RUNS" -F 10000 -- "$WORKLOADS/hotspots" 30 >out.txt 2>err.txt &
pid=$!
wait_first_batch
fill
wait_disk_full
t0=$(now)
kill -TERM $pid
wait $pid
rc=$?
t1=$(now)
elapsed=$(python3 -c "print(round($t1 - $t0, 1))")
[ $rc = 143 ] || fail "SIGTERM during a full disk: exit $rc, expected 143 (the application killed by it)"
python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 15 else 1)" || fail "nunatak took ${elapsed}s to end after SIGTERM"
run=$(run_dir_of err.txt)
[ -n "$run" ] && [ "$(sqlite3 "$run/pivot.sqlite" 'pragma integrity_check')" = ok ] || fail "integrity_check after SIGTERM on a full disk"
echo "SIGTERM on a full disk: exit 143 after ${elapsed}s"

# 3. full before the first Batch: the loss still reaches the Run (the
# reserve is made when the Run starts, not with the first Batch)
reset_runs
timeout 60 "$NUNATAK" run -o "$RUNS" -F 10000 -- "$WORKLOADS/hotspots" 2 3 >out.txt 2>err.txt &
pid=$!
has_manifest() { ls "$RUNS"/*/manifest.json >/dev/null 2>&1; }
wait_for 30 has_manifest || fail "no Run started 30 s after the start: $(tail -3 err.txt)"
fill
wait $pid
rc=$?
[ $rc = 3 ] || fail "full before the first Batch: exit $rc, expected the application's 3"
run=$(run_dir_of err.txt)
sql "$run" "select count(*) from batches" | grep -qx 0 || echo "note: a Batch was stored before the disk filled"
sql "$run" "select message from degradations where name = 'storage-failed'" | grep -q 'samples in' ||
	fail "full before the first Batch: storage-failed is not in the Run: $(tail -8 err.txt)"
grep -q 'degradations: none' err.txt && fail "the summary says 'degradations: none' for a Run that lost samples"
echo "full before the first Batch: storage-failed in the Run"

# 4. the space comes back: the Batches kept in memory are stored
reset_runs
timeout 60 "$NUNATAK" run -o "$RUNS" -F 10000 -- "$WORKLOADS/hotspots" 5 >out.txt 2>err.txt &
pid=$!
wait_first_batch
fill
wait_disk_full
rm -f "$RUNS/fill"
wait $pid
rc=$?
[ $rc = 0 ] || fail "exit code $rc after the space came back"
run=$(run_dir_of err.txt)
[ "$(sqlite3 "$run/pivot.sqlite" 'pragma integrity_check')" = ok ] || fail "integrity_check after the space came back"
grep -q 'cannot store batches' err.txt || fail "the disk was never full for nunatak: $(cat err.txt)"
[ -z "$(storage_loss "$run" err.txt)" ] || fail "samples lost although the space came back: $(grep storage err.txt)"
seen=$(sql "$run" "select value from counters where name = 'samples_seen'")
stored=$(sql "$run" 'select coalesce(sum(sample_count), 0) from samples')
dropped=$(sql "$run" "select coalesce(sum(value), 0) from counters where name in ('samples_dropped')")
[ "$stored" -gt 0 ] && [ $((stored + dropped)) -ge $((seen * 99 / 100)) ] ||
	fail "after the space came back $stored of $seen samples stored"
echo "space back once nunatak found the disk full: $stored of $seen samples stored, none lost"
exit 0
