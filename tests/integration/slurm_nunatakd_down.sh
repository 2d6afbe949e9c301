# The profiler never fails a job or drains a node (deploy/slurm on a real
# Slurm, tests/lib/slurm.sh): with the node's nunatakd stopped, with a
# stale control socket nobody answers on, with a control socket that
# accepts and never replies (a hung nunatakd), and with a nunatak that
# hangs deaf to SIGTERM (a stand-in), a `sbatch --nunatak` job of
# a non-root user and an `srun --nunatak` both run and succeed, the node
# stays idle (not drained), the Prolog and the Epilog exit 0 within their
# bounds (6 s and 28 s, plus the 1 s of timeout's kill), measured from the
# harness's record of each script's start and end.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init local
. "$TESTS_LIB/slurm.sh"
slurm_init
svc_nunatakd_local
slurm_start "${SVC_NODE_CONFIG[0]}"
U=${SLURM_TEST_USER1:-nunatak-u1}
slurm_user "$U"
W=$(slurm_workdir "$U")
sock=${SVC_SOCK[0]}

# one job with --nunatak in the state of the moment: succeeds, node idle,
# both scripts exit 0 within their bound; prints the scripts' durations
check_job() {
	local what=$1 j st ec kind line rc s e dur bound
	j=$(slurm_sbatch "$U" "$W" --nunatak --wrap 'sleep 1; echo job-ran')
	slurm_wait_gone "$j" 60 || fail "$what: job $j still queued after 60 s: $(squeue -j "$j")"
	st=$(slurm_job_state "$j")
	ec=$(scontrol show job -o "$j" | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p')
	[ "$st" = COMPLETED ] && [ "$ec" = 0:0 ] || fail "$what: job $j $st exit $ec: $(scontrol show job "$j" | grep -E 'Reason|State')"
	grep -q job-ran "$W/slurm-$j.out" || fail "$what: job $j did not run its script: $(cat "$W/slurm-$j.out")"
	slurm_wait_idle 10 || fail "$what: node $(slurm_node_state) after job $j: $(sinfo -R)"
	for kind in prolog epilog; do
		line=$(slurm_script_line "$kind" "$j")
		[ -n "$line" ] || fail "$what: no $kind ran for job $j"
		rc=$(sed -n 's/.* rc=\([0-9]*\) .*/\1/p' <<<"$line")
		s=$(sed -n 's/.* start=\([0-9.]*\) .*/\1/p' <<<"$line")
		e=$(sed -n 's/.* end=\([0-9.]*\) .*/\1/p' <<<"$line")
		[ "$rc" = 0 ] || fail "$what: the $kind of job $j exited $rc"
		dur=$(python3 -c "print(f'{$e - $s:.2f}')")
		# the bound, and 0.5 s for the harness's own wrapper (two date execs)
		if [ "$kind" = prolog ]; then bound=7.5; else bound=29.5; fi
		python3 -c "import sys; sys.exit(0 if $dur <= $bound else 1)" ||
			fail "$what: the $kind of job $j ran $dur s, over its bound of $bound s"
		eval "dur_$kind=\$dur"
	done
	echo "$what: job $j COMPLETED 0:0, node idle, prolog ${dur_prolog} s, epilog ${dur_epilog} s (exit 0)"
	# nunatak's own line for the job (once nunatak has job-prolog)
	if [ -z "${2:-}" ] && "$NUNATAK" job-prolog --help >/dev/null 2>&1; then
		for kind in prolog epilog; do
			grep -q "^nunatak job-$kind: job $j: not " "$SLURM_DIR/log/nunatak.log" ||
				fail "$what: nunatak job-$kind did not say job $j is not profiled: $(tail -4 "$SLURM_DIR/log/nunatak.log")"
		done
		grep "^nunatak job-prolog: job $j: " "$SLURM_DIR/log/nunatak.log"
	fi
}

# 1. nunatakd stopped (its socket gone with it)
svc_nunatakd_kill 0 TERM
check_job "nunatakd stopped"
(cd "$W" && slurm_as "$U" srun --nunatak true) >"$T/srun.out" 2>&1 || fail "srun --nunatak with nunatakd stopped: $(cat "$T/srun.out")"
slurm_wait_idle 10 || fail "node $(slurm_node_state) after srun: $(sinfo -R)"

# 2. a hung nunatakd: the socket accepts, nothing ever answers
rm -f "$sock"
python3 - "$sock" 2>>"$T/hung.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # the control socket's type
s.bind(sys.argv[1])
s.listen(64)
held = []
while True:
    c, _ = s.accept()
    held.append(c)   # never read, never answered, never closed
PY
hung=$!
svc_track "$hung"
for i in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || fail "harness: the hung socket did not appear: $(cat "$T/hung.log")"
check_job "hung control socket"

# 3. a stale socket file: nothing listens behind it
kill -KILL "$hung"
wait "$hung" 2>/dev/null
[ -S "$sock" ] || fail "harness: the stale socket file is gone"
check_job "stale control socket"

# 4. nunatak itself hangs, deaf to SIGTERM: the scripts' own bounds end it
mkdir -p -m 0755 "$T/bin"
printf '#!/bin/sh\nexec python3 -c "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"\n' \
	>"$T/bin/nunatak-hangs"
chmod 0755 "$T/bin/nunatak-hangs"
slurm_install_scripts "${SVC_NODE_CONFIG[0]}" "$T/bin/nunatak-hangs"
check_job "nunatak hangs" stand-in
python3 -c "import sys; sys.exit(0 if $dur_prolog >= 6 and $dur_epilog >= 28 else 1)" ||
	fail "the stand-in that hangs was not run, or not until the bound: prolog $dur_prolog s, epilog $dur_epilog s"
exit 0
