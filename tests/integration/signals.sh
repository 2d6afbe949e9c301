# Signals: nunatak passes on to the application what a shell would, once
# each, never dies of one while it runs, and exits with its code; once
# the application has ended, SIGINT stops the finalize at once and the Run
# says it was interrupted.
. "${TESTS_LIB:?run through tests/run.sh or make test}/common.sh"
need_root_bpf

cd "$T"

# wait_bounded PID SECONDS: waits for a background job, SIGKILL at the
# bound; its exit status in $rc (124 when it had to be killed)
wait_bounded() {
	local n=$(($2 * 20))
	while kill -0 "$1" 2>/dev/null && [ "$n" -gt 0 ]; do
		sleep 0.05
		n=$((n - 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -KILL "$1"
		wait "$1" 2>/dev/null
		rc=124
	else
		wait "$1"
		rc=$?
	fi
}

# 1. the application logs each signal it gets and exits 3 after TERM
cat >app <<SH
#!/bin/bash
for s in USR1 USR2 HUP WINCH INT QUIT ALRM PROF XCPU RTMIN; do trap "echo \$s >>$T/got" \$s; done
trap 'echo TERM >>$T/got; exit 3' TERM
touch $T/ready
for i in \$(seq 400); do sleep 0.05; done
exit 9
SH
chmod +x app
"$NUNATAK" run -o runs --linger 0 -- ./app 2>app.err &
np=$!
wait_for 30 test -e ready || fail "the application did not start"
# got_signal SIG: the application has logged SIG (each signal is sent once
# the one before it arrived, so their order is the order sent)
got_signal() { grep -qx "$1" got 2>/dev/null; }
for s in USR1 USR2 HUP WINCH INT QUIT ALRM PROF XCPU RTMIN TERM; do
	kill -"$s" "$np" 2>/dev/null || fail "nunatak died before SIG$s"
	wait_for 10 got_signal "$s" ||
		fail "SIG$s sent to nunatak did not reach the application in 10 s (it got: $(tr '\n' ' ' <got))"
done
wait_bounded "$np" 20
[ "$rc" = 3 ] || fail "exit $rc, not the application's 3: $(tail -5 app.err)"
got=$(tr '\n' ' ' <got)
[ "$got" = "USR1 USR2 HUP WINCH INT QUIT ALRM PROF XCPU RTMIN TERM " ] ||
	fail "the application got '$got' (each of USR1 USR2 HUP WINCH INT QUIT ALRM PROF XCPU RTMIN TERM once expected)"
echo "forwarded once each: $got; exit $rc"

# 2. SIGINT once the application has ended, during a finalize made slow
# by a symbolizer that never answers (default budget: 60 s)
cat >sleeper <<SH
#!/bin/sh
case "\$*" in *--version*) echo "LLVM version 0 (never answers)"; exit 0 ;; esac
echo \$\$ >$T/sleeper.pid
exec sleep 600
SH
chmod 0755 sleeper
printf '[tools]\nllvm-symbolizer = "%s"\n' "$T/sleeper" >site.toml
chmod 0644 site.toml
NUNATAK_SITE_CONFIG="$T/site.toml" "$NUNATAK" run -o runs --linger 0 --json -- \
	sh -c "$WORKLOADS/hotspots 1 >/dev/null; touch $T/done; exit 4" >int.json 2>int.err &
np=$!
wait_for 30 test -e done || fail "the application did not end"
# the last Batch, then FINALIZE: llvm-symbolizer is waited for
wait_for 30 test -s sleeper.pid || fail "nunatak did not run the symbolizer in its finalize: $(tail -3 int.err)"
kill -0 "$np" 2>/dev/null || fail "nunatak ended before the symbolizer's budget: $(tail -3 int.err)"
t0=$(date +%s%N)
kill -INT "$np"
wait_bounded "$np" 20
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" = 4 ] || fail "exit $rc after SIGINT in the finalize, not the application's 4: $(tail -5 int.err)"
[ "$ms" -lt 3000 ] || fail "$ms ms from SIGINT to exit"
run=$(run_dir_of int.err)
json "$run/manifest.json" '[x["name"] for x in d["degradations"]]' | grep -q run-interrupted ||
	fail "the Run does not say it was interrupted: $(json "$run/manifest.json" 'd["degradations"]')"
json int.json '[x["message"] for x in d["degradations"] if x["name"]=="run-interrupted"][0]' |
	grep -q "finalize stopped by the user" || fail "the --json result does not say it"
[ "$(sql "$run" "SELECT count(*) FROM hotspots WHERE name = 'heavy_kernel'")" = 1 ] ||
	fail "heavy_kernel lost its ELF name"
echo "SIGINT in the finalize: exit $rc after $ms ms, run-interrupted"

# 2b. the same for `nunatak summary` finalizing a Run whose nunatak was
# killed: SIGINT stops it at once and no llvm-symbolizer is left running
cat >sleeper2 <<SH
#!/bin/sh
case "\$*" in *--version*) echo "LLVM version 0 (never answers)"; exit 0 ;; esac
echo \$\$ >$T/sleeper2.pid
exec sleep 600
SH
chmod 0755 sleeper2
printf '[tools]\nllvm-symbolizer = "%s"\n' "$T/sleeper2" >site2.toml
chmod 0644 site2.toml
"$NUNATAK" run -o killed -- "$WORKLOADS/hotspots" 3 >/dev/null 2>killed.err &
np=$!
# killed once a Batch with samples is stored: the finalize has then
# addresses to symbolize
wait_for 30 has_samples killed 1 || fail "no Batch with samples stored in the Run: $(tail -3 killed.err)"
kill -KILL "$np" || fail "nunatak ended before it was killed"
wait "$np" 2>/dev/null
krun=$(ls -d killed/*/ | head -1)
NUNATAK_SITE_CONFIG="$T/site2.toml" "$NUNATAK" summary "$krun" >/dev/null 2>ks.err &
sp=$!
wait_for 30 test -s sleeper2.pid || fail "summary never ran the symbolizer: $(cat ks.err)"
t0=$(date +%s%N)
kill -INT "$sp"
wait_bounded "$sp" 20
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" = 130 ] || fail "summary after SIGINT: exit $rc, not 130: $(tail -3 ks.err)"
[ "$ms" -lt 3000 ] || fail "summary took $ms ms to stop after SIGINT"
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_for 5 gone "$(cat sleeper2.pid)" || fail "llvm-symbolizer was left running after summary stopped"
echo "SIGINT in summary's finalize: exit 130 after $ms ms, no symbolizer left"

# 3. Ctrl-C on a terminal: the terminal signals the whole foreground
# process group, so the application gets SIGINT from it, and not a second
# time from nunatak
rm -f got ready
python3 - "$NUNATAK" "$T" <<'PY' || fail "Ctrl-C on a terminal: see above"
import os, pty, select, sys, time
nunatak, t = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.chdir(t)
    os.execv(nunatak, [nunatak, "run", "-o", "runs", "--linger", "0", "--", "./app"])
out = b""
def drain(seconds):
    """reads what nunatak writes to the terminal for that long"""
    global out
    end = time.time() + seconds
    while time.time() < end:
        try:
            r, _, _ = select.select([fd], [], [], 0.05)
            if r:
                out += os.read(fd, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            time.sleep(max(0, end - time.time()))
def wait_for(seconds, cond, what):
    """drains until cond() holds; exits naming what after that long"""
    end = time.time() + seconds
    while not cond():
        if time.time() > end:
            os.kill(pid, 9)
            sys.exit("%s: not after %d s\n%s" % (what, seconds, out.decode(errors="replace")[-500:]))
        drain(0.05)
def got():
    try:
        return open(t + "/got").read().split()
    except FileNotFoundError:
        return []
wait_for(30, lambda: os.path.exists(t + "/ready"), "the application did not start")
drain(0.3)
os.write(fd, b"\x03")  # Ctrl-C
wait_for(10, lambda: "INT" in got(), "Ctrl-C did not reach the application")
drain(0.5)             # room for a second INT (from nunatak), which must not come
os.kill(pid, 15)       # then kill(2): forwarded
deadline = time.time() + 15
while True:
    ended, status = os.waitpid(pid, os.WNOHANG)
    if ended:
        break
    if time.time() > deadline:
        os.kill(pid, 9)
        sys.exit("nunatak did not end: " + out.decode(errors="replace")[-500:])
    drain(0.05)
code = os.waitstatus_to_exitcode(status)
if code != 3 or got() != ["INT", "TERM"]:
    sys.exit("exit %d, the application got %s (INT once from the terminal, TERM expected)\n%s"
             % (code, got(), out.decode(errors="replace")[-500:]))
print("Ctrl-C on a terminal: INT once, then TERM; exit", code)
PY
