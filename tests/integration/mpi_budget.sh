# The MPI probes' cost budget (issue 21, item 2): a workload whose every
# MPI call probed would cost more than the default 2 % budget, but not a
# pure ping-pong (100 us of compute between MPI_Allreduce calls, 2 ranks
# of Open MPI, a fixed count it prints), run by default and with
# --mpi-exact. The default Run's Allreduce sites are estimated, with their
# errors; its counts agree with the program's own count and with the exact
# Run's within 3 standard errors, its MPI time with the program's own
# (MPI_Wtime around each call, less the probed calls' traps its brackets
# hold) within 3 standard errors and 5 %; the standard errors are at most 15 % of the value; its probes
# cost each rank at most 3 % of its time. The exact Run's sites are
# measured, not estimated, and say so.
. "$TESTS_LIB/common.sh"
need_root_bpf
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
command -v mpiexec.openmpi >/dev/null || skip "openmpi is not installed"
app="$WORKLOADS/mpi/budget.openmpi"
[ -x "$app" ] || fail "workload $app not built"
cd "$T"
iterations=10000

for mode in default exact; do
	opt=()
	[ $mode = exact ] && opt=(--mpi-exact)
	"$NUNATAK" run "${opt[@]}" -o runs -- mpirun.openmpi --oversubscribe -n 2 "$app" \
		$iterations 100 >$mode.out 2>$mode.err || fail "$mode: exit $?: $(cat $mode.err)"
	run=$(run_dir_of $mode.err)
	[ -n "$run" ] || fail "$mode: no Run: $(cat $mode.err)"
	sql "$run" "select p.rank, c.calls, c.total_ns, coalesce(c.estimate, ''),
		coalesce(c.calls_error, ''), coalesce(c.total_ns_error, ''),
		coalesce(m.probed_calls, ''), coalesce(m.probe_cost_ns, ''),
		coalesce(m.probe_budget, ''), coalesce(m.probing, '')
		from mpi_calls c join loci p on p.id = c.locus
		join mpi_processes m on m.locus = c.locus
		where c.function = 'MPI_Allreduce' order by p.rank" >$mode.sites ||
		fail "$mode: reading the pivot"
done

python3 - "$T" $iterations <<'PY' || fail "budgeted Run against the exact one (see above)"
import re, sys
t, iterations = sys.argv[1], int(sys.argv[2])
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)

def sites(mode):
    rows = [l.rstrip("\n").split("|") for l in open(f"{t}/{mode}.sites")]
    return [dict(calls=int(r[1]), total_ns=int(r[2]), estimate=r[3],
                 calls_error=float(r[4]) if r[4] else None,
                 total_ns_error=float(r[5]) if r[5] else None,
                 probed=int(r[6]) if r[6] else None,
                 cost_ns=int(r[7]) if r[7] else None,
                 budget=float(r[8]) if r[8] else None, probing=r[9]) for r in rows]

def own(mode):
    out = {}
    for line in open(f"{t}/{mode}.out"):
        kv = dict(x.split("=") for x in line.split())
        out[int(kv["rank"])] = kv
    return [out[r] for r in sorted(out)]

d, e = sites("default"), sites("exact")
od, oe = own("default"), own("exact")
check(len(d) == 2 and len(e) == 2, f"one Allreduce site per rank: {len(d)} default, {len(e)} exact")
# the cost of one probed call: the node's calibration once the Run carries it
for name, rows in (("default", d), ("exact", e)):
    for s, o in zip(rows, own(name)):
        if s["cost_ns"] is None:
            s["cost_ns"] = 15000
        s["share"] = s["probed"] * s["cost_ns"] / (float(o["wall_s"]) * 1e9) if s["probed"] else None

for i, (s, x, o) in enumerate(zip(d, e, od)):
    check(s["estimate"] != "", f"rank {i}: default Run's site estimated: {s['estimate']!r}")
    check("sampled windows" in s["estimate"] and "budget 2 %" in s["estimate"],
          f"rank {i}: the estimate says how and why")
    check(s["budget"] == 0.02, f"rank {i}: budget {s['budget']}")
    ce, te = s["calls_error"], s["total_ns_error"]
    check(ce is not None and 0 < ce <= 0.15 * s["calls"],
          f"rank {i}: calls {s['calls']} ± {ce} (σ ≤ 15 %)")
    check(te is not None and 0 < te <= 0.15 * s["total_ns"],
          f"rank {i}: MPI time {s['total_ns']/1e9:.3f} ± {(te or 0)/1e9:.3f} s (σ ≤ 15 %)")
    if ce:
        check(abs(s["calls"] - iterations) <= 3 * ce,
              f"rank {i}: calls {s['calls']} within 3σ of the program's {iterations}")
        check(abs(s["calls"] - x["calls"]) <= 3 * ce,
              f"rank {i}: calls {s['calls']} within 3σ of the exact Run's {x['calls']}")
    # the program's brackets hold every probed call's traps, the probes' do not
    own_ns = float(o["mpi_s"]) * 1e9 - (s["probed"] or 0) * s["cost_ns"]
    if te:
        check(abs(s["total_ns"] - own_ns) <= 3 * te + 0.05 * own_ns,
              f"rank {i}: MPI time {s['total_ns']/1e9:.3f} s within 3σ + 5 % of the program's "
              f"{own_ns/1e9:.3f} s (its {float(o['mpi_s']):.3f} s less the traps inside)")
    check(s["share"] is not None and s["share"] <= 0.03,
          f"rank {i}: the probes cost {100*(s['share'] or 0):.2f} % of the rank's time (≤ 3 %)")
    # the exact Run: measured, every call
    check(x["estimate"] == "" and x["calls_error"] is None, f"rank {i}: exact Run's site measured")
    check(x["calls"] == iterations, f"rank {i}: exact Run counts {x['calls']} calls")
    check(x["budget"] is None and "every call" in x["probing"] and "--mpi-exact" in x["probing"],
          f"rank {i}: exact Run's probing {x['probing']!r}, budget {x['budget']}")
    # what every call would have cost, measured by the default Run when it switched (the
    # exact Run's own share depends on how loaded the machine was then: information)
    m = re.search(r"every call would have cost ([0-9.]+) %", s["estimate"])
    check(m and float(m.group(1)) > 2, f"rank {i}: over the budget when probed on every call "
          f"({m.group(1) if m else '?'} %; the exact Run's probes cost "
          f"{100*(x['share'] or 0):.2f} % of its time)")
sys.exit(0 if ok else 1)
PY
