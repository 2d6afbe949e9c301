# Paths another user controls never hang nor mislead a root nunatak:
#  1. a FIFO named as a library in the RUNPATH of the application: nunatak
#     does not open it (no hang before launch); the application's loader
#     blocks on it until the test writes to it once, then fails to load it
#     and its exit code 127 is nunatak's. A nunatak that opened the FIFO
#     would take that one write itself, and then block on it, or the
#     application would (the timeout: 124, or 137 when TERM is ignored);
#  2. a FIFO as manifest.json: `summary DIR` fails at once, saying so; a
#     Run planted by nobody in a root runs directory, the most recent, is
#     not the one a plain `summary -o RUNS` reads (ours is), and alone it
#     is skipped with a message;
#  3. a group-writable runs directory, and one reached through a symbolic
#     link in a directory nobody owns: refused before launch (125, a
#     message), nothing created, the application not run.
. "$TESTS_LIB/common.sh"
[ "$(id -u)" = 0 ] || skip "needs root to set owners (chown nobody)"
id nobody >/dev/null 2>&1 || skip "no user 'nobody'"
command -v gcc >/dev/null || skip "gcc missing: cannot build the application with a RUNPATH"
cd "$T"

# --- 1. a FIFO in place of a library of the application
mkdir lib
echo 'int tiny(void) { return 7; }' >tiny.c
printf '#include <stdio.h>\nint tiny(void);\nint main(void) { printf("tiny %%d\\n", tiny()); return 0; }\n' >app.c
gcc -shared -fPIC -o lib/libtiny.so tiny.c || fail "cannot build libtiny.so"
gcc -o app app.c -Llib -ltiny -Wl,-rpath,"$T/lib" || fail "cannot build the application"
[ "$(./app)" = "tiny 7" ] || fail "the application does not run with its real library"
rm lib/libtiny.so && mkfifo lib/libtiny.so
# -k: a nunatak that blocks its signals while it hangs ignores the TERM
timeout -k 5 30 "$NUNATAK" run -o runs -- ./app >out.txt 2>err.txt &
pid=$!
# one writer: whoever opens the FIFO for reading first gets it
timeout 25 sh -c ': >lib/libtiny.so' &
writer=$!
wait "$pid"
rc=$?
kill "$writer" 2>/dev/null
wait "$writer" 2>/dev/null
case $rc in 124 | 137) fail "nunatak hung on a FIFO named as a library (it opened it; exit $rc): $(cat err.txt)" ;; esac
[ $rc = 127 ] || fail "exit $rc, expected 127 from the loader of the application: $(cat err.txt)"
grep -q 'libtiny.so' err.txt || fail "the loader's error is not shown: $(cat err.txt)"
grep -q "not reading library '$T/lib/libtiny.so'.*not a regular file" err.txt ||
	fail "nunatak does not say it left the FIFO alone: $(cat err.txt)"
run=$(run_dir_of err.txt)
[ -f "$run/manifest.json" ] || fail "no Run: $(cat err.txt)"
echo "fifo library: not opened, the application's 127 kept"

# --- 2a. a FIFO as manifest.json
mkdir -m 0700 -p fifo-runs/app-20260101-000000
mkfifo fifo-runs/app-20260101-000000/manifest.json
start=$(date +%s)
timeout -k 5 10 "$NUNATAK" summary fifo-runs/app-20260101-000000 >s.out 2>s.err
rc=$?
case $rc in 124 | 137) fail "summary hung on a FIFO manifest.json (exit $rc)" ;; esac
[ $rc != 0 ] || fail "summary of a FIFO manifest exits 0"
[ $(($(date +%s) - start)) -le 5 ] || fail "summary took $(($(date +%s) - start)) s to refuse a FIFO"
grep -q "manifest.json' is not a regular file but a FIFO" s.err ||
	fail "summary does not say what manifest.json is: $(cat s.err)"
echo "fifo manifest: refused at once ($(head -1 s.err))"

# --- 2b. a Run planted by nobody in a root runs directory
mkdir -m 0755 shared
cp -a "$run" shared/app-20991231-235959
chown -R nobody shared/app-20991231-235959
timeout 30 "$NUNATAK" summary -o shared >s.out 2>s.err
rc=$?
[ $rc != 0 ] || fail "summary read the Run nobody planted: $(cat s.err)"
grep -q "no Run of yours in 'shared': 1 entry skipped" s.err ||
	fail "summary does not say it skipped nobody's Run: $(cat s.err)"
cp -a "$run" shared/app-20200101-000000
timeout 30 "$NUNATAK" summary -o shared >s.out 2>s.err
rc=$?
[ $rc = 0 ] || fail "summary of our Run: exit $rc: $(cat s.err)"
[ "$(sed -n 's/^Run: //p' s.err)" = shared/app-20200101-000000 ] ||
	fail "summary did not read our Run: $(grep '^Run:' s.err)"
echo "planted Run: skipped, ours read"

# --- 3. runs directories another user could change
check_refused() { # RUNS_DIR WORDS...
	local dir=$1
	shift
	rm -f ran
	timeout 30 "$NUNATAK" run -o "$dir" -- touch "$T/ran" >out.txt 2>err.txt
	rc=$?
	[ $rc = 125 ] || fail "runs directory '$dir': exit $rc, expected 125: $(cat err.txt)"
	[ -e ran ] && fail "the application ran with the runs directory '$dir' refused"
	for w in "$@"; do
		grep -qF -- "$w" err.txt || fail "'$w' not in the message: $(cat err.txt)"
	done
}
mkdir -m 0775 group
chmod 0775 group
check_refused "$T/group" "$T/group" "writable by its group" "chmod g-w"
[ -z "$(ls -A group)" ] || fail "something was made in the group-writable runs directory: $(ls -A group)"
mkdir -m 0755 good theirs
ln -s "$T/good" theirs/link
chown nobody theirs
check_refused "$T/theirs/link/runs" "$T/theirs/link/runs" "nobody" "$T/theirs"
[ -e good/runs ] && fail "the runs directory was made through nobody's link"
echo "runs directories: group-writable and linked through nobody's directory refused"
