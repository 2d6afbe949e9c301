# Processes that outlive the application (double fork, setsid) stay
# observed until they exit or until --linger S after it ended; what is
# cut short is named (processes-outlived); the exit code is the
# application's.
. "${TESTS_LIB:?run through tests/run.sh or make test}/common.sh"
need_root_bpf

cd "$T"
left=""
trap '[ -n "$left" ] && kill $left 2>/dev/null; rm -rf "$T"' EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }
degradations() { json "$1/manifest.json" '" ".join(x["name"] for x in d["degradations"])'; }
# lingered MESSAGE: the seconds the Run says the outliving processes were
# observed after the application ended ("outlived the application by 1.0
# s"), measured by nunatak: its own start and finalize, longer on a loaded
# machine, are not in it
lingered() { echo "$1" | sed -n 's/.* outlived the application by \([0-9.]*\) s .*/\1/p'; }
# within X LOW HIGH: LOW <= X < HIGH
within() { python3 -c 'import sys; x,l,h=map(float,sys.argv[1:4]); sys.exit(0 if l<=x<h else 1)' "$1" "$2" "$3"; }

# 1. a grandchild burns ~1.8 s of CPU after its parent, the application,
# exited at once: it is sampled to its end, nothing is said cut short
t0=$(now_ms)
timeout 30 "$NUNATAK" run -o runs -- sh -c "( setsid $WORKLOADS/hotspots 2 >/dev/null & ); exit 7" \
	2>burn.err
rc=$?
ms=$(($(now_ms) - t0))
[ "$rc" = 7 ] || fail "double fork: exit $rc, not the application's 7: $(tail -3 burn.err)"
run=$(run_dir_of burn.err)
samples=$(sql "$run" "SELECT coalesce(sum(m.sample_count), 0) FROM measurements m JOIN loci l ON l.id = m.locus
	WHERE l.comm = 'hotspots' AND m.counter = 'cpu-clock' AND m.hotspot IS NOT NULL")
[ "$samples" -ge 500 ] || fail "double fork: $samples samples of the grandchild (~1800 expected on an idle machine)"
degradations "$run" | grep -q processes-outlived && fail "double fork: processes-outlived though it exited"
[ "$ms" -ge 1500 ] || fail "double fork: nunatak ended after $ms ms, before the grandchild"
echo "double fork: $samples samples of the grandchild after its parent's exit, exit $rc, $ms ms"

# 2. a grandchild that sleeps 60 s, --linger 1: cut short after ~1 s
t0=$(now_ms)
timeout 30 "$NUNATAK" run -o runs --linger 1 -- sh -c "( setsid sleep 60 >/dev/null 2>&1 & ); exit 5" \
	2>sleep.err
rc=$?
ms=$(($(now_ms) - t0))
run=$(run_dir_of sleep.err)
message=$(json "$run/manifest.json" '[x["message"] for x in d["degradations"] if x["name"]=="processes-outlived"]')
left=$(echo "$message" | grep -o "[0-9]* ([a-z]*)" | cut -d" " -f1)
[ "$rc" = 5 ] || fail "--linger 1: exit $rc, not the application's 5"
echo "$message" | grep -q "1 process" || fail "--linger 1: processes-outlived missing or wrong: $message"
[ -n "$left" ] && kill -0 "$left" 2>/dev/null || fail "--linger 1: the sleeper is not named by its pid: $message"
[ "$ms" -ge 900 ] || fail "--linger 1: nunatak took $ms ms"
by=$(lingered "$message")
[ -n "$by" ] && within "$by" 0.9 5 || fail "--linger 1: the sleeper observed $by s after the application ended, not ~1 s"
echo "--linger 1: exit $rc after $ms ms; $message"

# 3. --linger 0: nunatak does not wait at all, and still says so
t0=$(now_ms)
timeout 30 "$NUNATAK" run -o runs --linger 0 -- sh -c "( setsid sleep 60 >/dev/null 2>&1 & ); exit 0" \
	2>zero.err
rc=$?
ms=$(($(now_ms) - t0))
run=$(run_dir_of zero.err)
pid=$(json "$run/manifest.json" '[x["message"] for x in d["degradations"] if x["name"]=="processes-outlived"]' |
	grep -o "[0-9]* ([a-z]*)" | cut -d" " -f1)
left="$left $pid"
[ "$rc" = 0 ] || fail "--linger 0: exit $rc"
[ -n "$pid" ] || fail "--linger 0: no processes-outlived naming the sleeper"
message=$(json "$run/manifest.json" '[x["message"] for x in d["degradations"] if x["name"]=="processes-outlived"]')
by=$(lingered "$message")
[ -n "$by" ] && within "$by" 0 1 || fail "--linger 0: nunatak waited $by s after the application ended: $message"
echo "--linger 0: exit $rc after $ms ms, observed $by s after the application ended"

# 4. --linger 30, then SIGINT after the application ended: the wait stops
# at once, and the Run says why the sleeper was cut short
"$NUNATAK" run -o runs --linger 30 -- sh -c "echo \$\$ >app.pid; ( setsid sleep 60 >/dev/null 2>&1 & ); exit 2" \
	2>int.err &
np=$!
# the application ended: nunatak reaped it (a zombie still answers kill -0)
app_reaped() { [ -s app.pid ] && ! kill -0 "$(cat app.pid)" 2>/dev/null; }
wait_for 30 app_reaped || fail "--linger 30: the application did not end: $(tail -3 int.err)"
kill -0 "$np" 2>/dev/null || fail "--linger 30: nunatak ended before its bound: $(tail -3 int.err)"
t0=$(now_ms)
kill -INT "$np"
for _ in $(seq 100); do kill -0 "$np" 2>/dev/null || break; sleep 0.05; done
kill -0 "$np" 2>/dev/null && { kill -KILL "$np"; fail "--linger 30: SIGINT did not end the wait"; }
wait "$np"
rc=$?
ms=$(($(now_ms) - t0))
run=$(run_dir_of int.err)
message=$(json "$run/manifest.json" '[x["message"] for x in d["degradations"] if x["name"]=="processes-outlived"]')
left="$left $(echo "$message" | grep -o "[0-9]* ([a-z]*)" | cut -d" " -f1)"
[ "$rc" = 2 ] || fail "--linger 30 + SIGINT: exit $rc, not the application's 2"
echo "$message" | grep -q "nunatak was interrupted" || fail "--linger 30 + SIGINT: $message"
echo "--linger 30 + SIGINT: exit $rc $ms ms after the signal; $message"
