# nunatak exits with the application's code; 127 not found, 126 not
# executable, 128+N for a signal; the application runs exactly once.
. "$TESTS_LIB/common.sh"
need_root_bpf

cd "$T"
"$NUNATAK" run -- "$WORKLOADS/hotspots" 0.1 3 >/dev/null 2>err.txt
rc=$?
[ $rc = 3 ] || fail "exit code $rc, expected 3"
grep -q '^Run: ' err.txt || fail "no Run written for an application exiting 3"
[ "$(json "$(run_dir_of err.txt)/manifest.json" 'd["run"]["exit_code"]')" = 3 ] || fail "manifest exit_code is not 3"

"$NUNATAK" run -- ./does-not-exist 2>err.txt
rc=$?
[ $rc = 127 ] || fail "not found: exit $rc, expected 127"
grep -q "command not found" err.txt || fail "no 'command not found' message: $(cat err.txt)"

printf 'not a program' >plain && chmod 0644 plain
"$NUNATAK" run -- ./plain 2>err.txt
rc=$?
[ $rc = 126 ] || fail "not executable: exit $rc, expected 126"

"$NUNATAK" run -- sh -c 'kill -9 $$' 2>err.txt
rc=$?
[ $rc = 137 ] || fail "killed by SIGKILL: exit $rc, expected 137"

# exactly once: the command appends one line per execution
"$NUNATAK" run -- sh -c 'echo ran >> count.txt' 2>/dev/null
[ "$(wc -l <count.txt)" = 1 ] || fail "the application ran $(wc -l <count.txt) times"

"$NUNATAK" run --frequency 0 -- true 2>err.txt
[ $? = 125 ] || fail "bad --frequency must exit 125"
grep -q "frequency" err.txt || fail "bad --frequency message: $(cat err.txt)"
"$NUNATAK" run 2>/dev/null
[ $? = 125 ] || fail "no command must exit 125"
