# nunatak's own output: SIGPIPE on --json never changes the exit code; a
# --json result that cannot be written is said on stderr and fails only a
# Run whose application succeeded (125, as --help says); bad option values
# say which option and why.
. "${TESTS_LIB:?run through tests/run.sh or make test}/common.sh"
need_root_bpf

cd "$T"

# 1. the reader of --json is gone (| true): the application's code, not 141
timeout 30 "$NUNATAK" run -o runs --linger 0 --json -- sh -c 'exit 0' 2>pipe0.err | true
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || fail "--json | true: exit $rc, not the application's 0: $(tail -3 pipe0.err)"
timeout 30 "$NUNATAK" run -o runs --linger 0 --json -- sh -c 'exit 4' 2>pipe4.err | true
rc=${PIPESTATUS[0]}
[ "$rc" = 4 ] || fail "--json | true: exit $rc, not the application's 4"
grep -q "cannot write" pipe0.err && fail "--json | true: EPIPE reported as an error"
# the application's own SIGPIPE is its own: the default disposition
timeout 30 "$NUNATAK" run -o runs --linger 0 -- sh -c 'yes' 2>yes.err | head -1 >/dev/null
rc=${PIPESTATUS[0]}
[ "$rc" = 141 ] || fail "an application writing to a closed pipe: exit $rc, not 141 (its SIGPIPE)"
echo "--json | true: exit codes 0 and 4 kept; the application's own SIGPIPE is 141"

# 2. --json on a full device: said, and non-zero only when the application succeeded
timeout 30 "$NUNATAK" run -o runs --linger 0 --json -- sh -c 'exit 0' >/dev/full 2>full0.err
rc=$?
[ "$rc" = 125 ] || fail "--json >/dev/full after a successful application: exit $rc, not 125"
grep -q "cannot write the --json result to stdout: No space left on device" full0.err ||
	fail "--json >/dev/full: not said: $(tail -3 full0.err)"
timeout 30 "$NUNATAK" run -o runs --linger 0 --json -- sh -c 'exit 6' >/dev/full 2>full6.err
rc=$?
[ "$rc" = 6 ] || fail "--json >/dev/full after a failed application: exit $rc, not its 6"
grep -q "cannot write the --json result" full6.err || fail "--json >/dev/full (exit 6): not said"
"$NUNATAK" run --help | grep -q "the --json result could not be written" ||
	fail "--help does not say which exit code a failed --json write gives"
echo "--json >/dev/full: 125 after exit 0, 6 after exit 6, said on stderr"

# 3. bad option values name the option and the reason
check_option() { # expected-words args...
	local want=$1
	shift
	timeout 10 "$NUNATAK" run "$@" -- sh -c "touch $T/ran" 2>opt.err
	rc=$?
	[ "$rc" = 125 ] || fail "'$*': exit $rc, not 125"
	grep -q -- "$want" opt.err || fail "'$*': message without '$want': $(cat opt.err)"
	grep -q "invalid option value" opt.err && fail "'$*': says only 'invalid option value'"
	[ ! -e ran ] || fail "'$*': the application ran"
}
check_option "invalid --output '': an empty path" -o ''
check_option "invalid --name '': empty" --name ''
check_option "invalid --name '.'" --name .
check_option "invalid --frequency 'x'" -F x
check_option "invalid --linger '-1'" --linger -1
check_option "invalid --symbolizer-budget '0'" --symbolizer-budget 0
echo "bad option values: each names its option and why"
