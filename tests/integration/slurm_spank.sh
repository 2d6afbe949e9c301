# The SPANK plugin and the Prolog/Epilog of deploy/slurm on a real Slurm
# (slurmctld + slurmd + munge of tests/lib/slurm.sh), no nunatakd needed:
# sbatch/srun show and take --nunatak[=FREQ]; what reaches the Prolog and
# the Epilog is SPANK_NUNATAK=<FREQ> or "default" when none was asked (also
# from "#SBATCH --nunatak=N"
# and srun's own allocation), SPANK_NUNATAK_PROFILE=1 from a submitter's
# NUNATAK_PROFILE=1, nothing for a job that did not ask; a FREQ that is not
# one is reported on the user's terminal and dropped ("default"), the job
# accepted. Every job of a non-root user completes, both scripts exit 0
# (nothing listening at the site's control socket), the node stays idle.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/slurm.sh"
slurm_init
# the scripts' site configuration: a control socket nobody listens on (the
# machine's own nunatakd, if any, never hears of these jobs)
mkdir -m 0700 "$T/etc"
printf '[service]\nagent_socket = "%s"\n' "$T/nobody/agent.sock" >"$T/etc/site.toml"
chmod 0600 "$T/etc/site.toml"
slurm_start "$T/etc/site.toml"
U=${SLURM_TEST_USER1:-nunatak-u1}
slurm_user "$U"
W=$(slurm_workdir "$U")

help=$(slurm_as "$U" sbatch --help 2>&1)
grep -q -- '--nunatak=FREQ .*Profile this job with nunatak' <<<"$help" ||
	fail "sbatch --help does not show --nunatak: $(grep -A3 'plugins' <<<"$help")"
slurm_as "$U" srun --help 2>&1 | grep -q -- '--nunatak' || fail "srun --help does not show --nunatak"

# job -> what its Prolog and Epilog must see ("-": unset)
declare -A want_freq want_profile
j=$(slurm_sbatch "$U" "$W" --nunatak --wrap 'true'); want_freq[$j]=default want_profile[$j]=-
j=$(slurm_sbatch "$U" "$W" --nunatak=500 --wrap 'true'); want_freq[$j]=500 want_profile[$j]=-
j=$(slurm_sbatch "$U" "$W" --nunatak=abc --wrap 'true'); want_freq[$j]=default want_profile[$j]=-
grep -q "nunatak: --nunatak=abc: FREQ must be a whole number of Hz (1..10000); profiling at the nodes' own frequency" "$W/sbatch.err" ||
	fail "no message for --nunatak=abc on the user's terminal: $(cat "$W/sbatch.err")"
j=$(slurm_sbatch "$U" "$W" --nunatak=100000 --wrap 'true'); want_freq[$j]=default want_profile[$j]=-
grep -q 'out of range' "$W/sbatch.err" || fail "no message for --nunatak=100000: $(cat "$W/sbatch.err")"
j=$(slurm_sbatch "$U" "$W" --nunatak=0 --wrap 'true'); want_freq[$j]=default want_profile[$j]=-
j=$(slurm_sbatch "$U" "$W" --wrap 'true'); want_freq[$j]=- want_profile[$j]=-
printf '#!/bin/sh\n#SBATCH --nunatak=123\ntrue\n' >"$W/job.sh"
chmod 0644 "$W/job.sh"
j=$(slurm_sbatch "$U" "$W" "$W/job.sh"); want_freq[$j]=123 want_profile[$j]=-
j=$(slurm_sbatch "$U" "$W" NUNATAK_PROFILE=1 --wrap 'true'); want_freq[$j]=- want_profile[$j]=1
j=$(slurm_sbatch "$U" "$W" NUNATAK_PROFILE=0 --wrap 'true'); want_freq[$j]=- want_profile[$j]=-
j=$(slurm_sbatch "$U" "$W" NUNATAK_PROFILE=1 --nunatak=42 --wrap 'true'); want_freq[$j]=42 want_profile[$j]=1
# srun with its own allocation (local context)
(cd "$W" && slurm_as "$U" srun --nunatak=7 true) >"$W/srun.out" 2>&1 || fail "srun --nunatak=7: $(cat "$W/srun.out")"
j=$(squeue -h -u "$U" -t all -o '%A %j' 2>/dev/null | awk '$2 == "true" {print $1}' | sort -n | tail -1)
[ -n "$j" ] || fail "the srun job is not in squeue: $(squeue -t all)"
want_freq[$j]=7 want_profile[$j]=-

for j in "${!want_freq[@]}"; do
	slurm_wait_gone "$j" 30 || fail "job $j still in the queue after 30 s: $(squeue -j "$j")"
done
for j in $(printf '%s\n' "${!want_freq[@]}" | sort -n); do
	st=$(slurm_job_state "$j")
	[ "$st" = COMPLETED ] || fail "job $j: $st, not COMPLETED: $(scontrol show job "$j" | head -5)"
	for kind in prolog epilog; do
		line=$(slurm_script_line "$kind" "$j")
		[ -n "$line" ] || fail "no $kind for job $j: $(cat "$SLURM_DIR/log/scripts.log")"
		rc=$(sed -n 's/.* rc=\([0-9]*\) .*/\1/p' <<<"$line")
		freq=$(sed -n 's/.* spank_nunatak=\([^ ]*\) .*/\1/p' <<<"$line")
		profile=$(sed -n 's/.* spank_profile=\([^ ]*\)$/\1/p' <<<"$line")
		[ "$rc" = 0 ] || fail "the $kind of job $j exited $rc"
		[ "${freq:--}" = "${want_freq[$j]}" ] || fail "job $j: $kind saw SPANK_NUNATAK='$freq', expected ${want_freq[$j]}: $line"
		[ "${profile:--}" = "${want_profile[$j]}" ] ||
			fail "job $j: $kind saw SPANK_NUNATAK_PROFILE='$profile', expected ${want_profile[$j]}: $line"
		# the plain name never reaches the scripts: only the plugin forwards it
		! grep -q '^NUNATAK_PROFILE=' "$SLURM_DIR/log/$kind-env.$j" || fail "job $j: NUNATAK_PROFILE in the $kind environment"
	done
	echo "job $j: SPANK_NUNATAK=${want_freq[$j]} SPANK_NUNATAK_PROFILE=${want_profile[$j]}, COMPLETED, scripts exit 0"
done
slurm_wait_idle 10 || fail "node $(slurm_node_state) after the jobs: $(sinfo -R)"
exit 0
