# The unit tests whose cases need a real munged and a real slurmctld
# (test_munge_cred, test_slurm_job, test_aggregator_job), run against the
# cluster of tests/lib/slurm.sh: alone they print SKIPPED for those cases;
# here every case must run and pass (a SKIPPED line fails this test).
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/slurm.sh"
slurm_init
slurm_start
# test_aggregator_job's owner and other user
slurm_user nunatak-u1
slurm_user nunatak-u2

B=$(dirname "$NUNATAK")
ran=0
for t in test_munge_cred test_slurm_job test_aggregator_job; do
	bin=
	for d in "$B/tests/$t" "$B-asan/tests/$t"; do
		[ -x "$d" ] && { bin=$d; break; }
	done
	[ -n "$bin" ] || fail "$t is not built (make $B/tests/$t)"
	out=$(NUNATAK_TEST_MUNGE_SOCKET=$SLURM_MUNGE_SOCKET NUNATAK_TEST_SLURM_CONF=$SLURM_CONF_FILE \
		TESTS_LIB=$TESTS_LIB timeout 300 "$bin" 2>&1)
	rc=$?
	[ $rc = 0 ] || fail "$t against the cluster: exit $rc: $(tail -20 <<<"$out")"
	if grep -q 'SKIPPED' <<<"$out"; then
		fail "$t skipped cases although munged and slurmctld run: $(grep -i -B2 skip <<<"$out" | tail -10)"
	fi
	echo "$t: $(grep -E '^\[  PASSED  \]' <<<"$out")"
	ran=$((ran + 1))
done
[ $ran = 3 ] || fail "only $ran of the 3 unit tests ran"
echo PASS
