# What holds for a whole Run is said once, and imbalance only where Loci
# share work (analysis/diagnostic.h): a single-process Run prints no
# per-Hotspot "unavailable" line, no imbalance, and (without hardware
# counters) "no roofline placement" once; a `make -j2` over generated C
# files (cc1, as, sh, make: processes of different programs, no ranks) gets
# no "imbalance" class and says why once per reason. The JSON says "not
# applicable" as a reason with the value's key absent.
. "$TESTS_LIB/common.sh"
need_root_bpf
command -v gcc >/dev/null || skip "gcc is not installed"
command -v make >/dev/null || skip "make is not installed"
cd "$T"

# check_summary ERR JSON: the rules every Run keeps, whatever its Loci
check_summary() {
	python3 - "$1" "$2" <<'PY' || fail "summary of $1 (see above)"
import json, re, sys
text = open(sys.argv[1]).read()
d = json.load(open(sys.argv[2]))
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)

block = text.split("\ndiagnostic of the hotspot", 1)
check(len(block) == 2, "a diagnostic block")
block = block[1].split("\n\n", 1)[0] if len(block) == 2 else ""
check("imbalance unavailable" not in block, "no 'imbalance unavailable' line")
check("placement unavailable" not in block, "no per-Hotspot 'placement unavailable' line")
run = d["diagnostic_run"]
degraded = any(g["name"] == "hardware-counters-unavailable" for g in d["degradations"])
if degraded:
    check(run["no_placement"], f"no_placement said: {run['no_placement']}")
    n = block.count("no roofline placement in this Run")
    check(n == 1, f"'no roofline placement' said once ({n})")
    check("roofline placements" not in text, "not said again under 'does not say'")
reasons = {}
for h in d["hotspots"]:
    g = h["diagnostic"]
    if not g:
        continue
    why = g["imbalance_not_applicable"]
    if why:
        check("imbalance" not in g, f"{h['name']}: no imbalance key when not applicable")
        check(g["imbalance_over"] is None, f"{h['name']}: imbalance over nothing")
        check(g["classification"] != "imbalance", f"{h['name']}: no imbalance class")
        reasons[why] = reasons.get(why, 0) + 1
    else:
        check(g["imbalance_over"] in ("ranks", "threads"), f"{h['name']}: imbalance over {g['imbalance_over']}")
for why in reasons:
    n = len(re.findall(r"^  imbalance not applicable.*: " + re.escape(why) + "$", block, re.M))
    shown = sum(1 for h in d["hotspots"][:10] if h["diagnostic"] and h["diagnostic"]["imbalance_not_applicable"] == why)
    check(n == (1 if shown else 0), f"'{why}' said {n} time(s)")
print("reasons:", reasons)
sys.exit(0 if ok else 1)
PY
}

# 1. one process, one thread
"$NUNATAK" run -- "$WORKLOADS/hotspots" 1 >/dev/null 2>one.txt || fail "exit $?: $(cat one.txt)"
run=$(run_dir_of one.txt)
"$NUNATAK" summary --json "$run" >one.json 2>/dev/null || fail "summary --json $run"
check_summary one.txt one.json
grep -q '^  heavy_kernel: share [0-9.]*%, [0-9.]* s$' one.txt ||
	fail "heavy_kernel's line is not its share and seconds: $(grep heavy_kernel: one.txt)"
grep -qx '  imbalance not applicable: one thread of one process ran it' one.txt ||
	fail "single-process Run: why there is no imbalance is not said once: $(cat one.txt)"

# 2. make -j2 over generated C files: processes of different programs
mkdir mk
for f in a b c d; do
	python3 - "$f" >"mk/$f.c" <<'PY'
import sys
f = sys.argv[1]
for i in range(1500):
    print(f"double {f}_{i}(double x) {{ for (int k = 0; k < {i % 7 + 2}; k++) x = x * 1.0001 + {i}.5 / (x + k + 1.0); return x; }}")
PY
done
printf 'all: a.o b.o c.o d.o\n%%.o: %%.c\n\tgcc -O2 -c $< -o $@\n' >mk/Makefile
"$NUNATAK" run -- make -j2 -C mk >/dev/null 2>make.txt || fail "exit $?: $(cat make.txt)"
run=$(run_dir_of make.txt)
[ -f mk/d.o ] || fail "make did not build"
"$NUNATAK" summary --json "$run" >make.json 2>/dev/null || fail "summary --json $run"
check_summary make.txt make.json
python3 - make.json <<'PY' || fail "make -j2: imbalance across processes of different programs"
import json, sys
d = json.load(open(sys.argv[1]))
above = [h for h in d["hotspots"] if h["diagnostic"]]
print(len(above), "Hotspots above the floor;", [(h["name"], h["diagnostic"]["classification"]) for h in above[:10]])
assert above, "no Hotspot above the floor"
assert not any(h["diagnostic"]["classification"] == "imbalance" for h in above), "an imbalance class"
assert d["diagnostic_run"]["imbalance_over"] == "threads", d["diagnostic_run"]
PY
if awk '/^   share   samples/{t=1; next} t && /^$/{exit} t' make.txt | grep -q ' imbalance '; then
	fail "the class column says imbalance: $(cat make.txt)"
fi
grep -q '^  imbalance not applicable' make.txt || fail "make -j2: why there is no imbalance is not said"
echo "single process and make -j2: ok"

# 3. one MPI rank: no balance to measure (not a measurement of 1.00)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if ! command -v mpirun.openmpi >/dev/null; then
	echo "SKIPPED part: one MPI rank: Open MPI is not installed"
	exit 0
fi
[ -x "$WORKLOADS/mpi/pattern.openmpi" ] || fail "workload $WORKLOADS/mpi/pattern.openmpi not built"
"$NUNATAK" run -- mpirun.openmpi -n 1 "$WORKLOADS/mpi/pattern.openmpi" 300 20 100 1 8 \
	>/dev/null 2>mpi1.txt || fail "exit $?: $(cat mpi1.txt)"
run=$(run_dir_of mpi1.txt)
"$NUNATAK" summary --json "$run" >mpi1.json 2>/dev/null || fail "summary --json $run"
grep -q '^ranks: 1 rank, balance not applicable (the Run has one rank), MPI share of time [0-9.]*%$' \
	mpi1.txt || fail "one rank: the balance is not said not applicable: $(grep -A3 '^ranks' mpi1.txt)"
python3 - mpi1.json <<'PY' || fail "one rank: balance JSON"
import json, sys
d = json.load(open(sys.argv[1]))
b = d["balance"]
print(b)
assert b["ranks"] == 1, b
assert b["imbalance_not_applicable"] == "the Run has one rank", b
for k in ("imbalance", "efficiency", "busiest_factor"):
    assert k not in b, f"{k} present: {b}"
assert b["busiest_rank"] is None, b
assert b["mpi_share"] is not None and 0 < b["mpi_share"] < 1, b
assert all("imbalance" not in r for r in d["ranks"]), d["ranks"]
PY
echo "one MPI rank: ok"
