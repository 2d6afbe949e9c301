# `nunatak export --format pprof|speedscope|chrome-trace` (and folded) on
# real Runs, each read back by a real decoder: a Run of the hotspots
# workload → pprof gunzipped and decoded by `protoc --decode
# perftools.profiles.Profile` against Debian's profile.proto: Σ sample
# counts == the pivot's Σ sample_count, heavy_kernel a function, the
# workload's build-id (readelf -n) the build_id of a Mapping; folded: Σ
# counts == the pivot's; speedscope parsed by Python's json: heavy_kernel a
# frame, Σ weights == the pivot's; its chrome-trace says why it has no
# Event. A 2-rank Open MPI Run with --mpi-events → chrome-trace parsed: as
# many "X" events as the pivot's events, all MPI_*, on pids 0 and 1 named
# "rank 0" and "rank 1"; its speedscope has a profile per rank and its
# pprof rank labels 0 and 1.
. "$TESTS_LIB/common.sh"
need_root_bpf
PROTO_DIR=/usr/share/gocode/src/github.com/google/pprof/proto
command -v protoc >/dev/null || skip "protoc missing (Debian protobuf-compiler)"
[ -r "$PROTO_DIR/profile.proto" ] || skip "no $PROTO_DIR/profile.proto (Debian golang-github-google-pprof-dev)"

cd "$T"
"$NUNATAK" run -o runs --name single -- "$WORKLOADS/hotspots" 2 >out.txt 2>err.txt ||
	fail "run: exit $?: $(cat err.txt)"
run=$(run_dir_of err.txt)
[ -f "$run/pivot.sqlite" ] || fail "no Run in: $(cat err.txt)"
total=$(sql "$run" "select sum(sample_count) from samples where counter = 'cpu-clock'")
[ "${total:-0}" -gt 0 ] || fail "the Run holds no cpu-clock sample"
build_id=$(readelf -n "$WORKLOADS/hotspots" | sed -n 's/.*Build ID: *//p')
[ -n "$build_id" ] || fail "the workload has no build-id"

# pprof: gzip, then protobuf as profile.proto says
"$NUNATAK" export "$run" --format pprof -o single.pb.gz 2>pprof.err || fail "export pprof: $(cat pprof.err)"
[ "$(stat -c %a single.pb.gz)" = 600 ] || fail "single.pb.gz is not 0600"
grep -q "pprof profile: $total cpu-clock samples" pprof.err || fail "pprof: not said: $(cat pprof.err)"
gzip -dc single.pb.gz >single.pb || fail "pprof output is not gzip"
protoc --decode perftools.profiles.Profile -I "$PROTO_DIR" profile.proto <single.pb >single.txt 2>decode.err ||
	fail "protoc cannot decode it: $(cat decode.err)"
python3 - single.txt "$total" "$build_id" <<'PY' || fail "pprof (see above)"
import re, sys
text, total, build_id = open(sys.argv[1]).read(), int(sys.argv[2]), sys.argv[3]
strings = [eval(s) for s in re.findall(r'^string_table: (".*")$', text, re.M)]
samples = re.findall(r'^sample \{\n(.*?)^\}', text, re.M | re.S)
counts = [int(re.findall(r'^  value: (-?\d+)$', s, re.M)[0]) for s in samples]
mappings = re.findall(r'^mapping \{\n(.*?)^\}', text, re.M | re.S)
ids = [strings[int(m.group(1))] for b in mappings for m in [re.search(r'^  build_id: (\d+)$', b, re.M)] if m]
types = re.findall(r'^sample_type \{\n  type: (\d+)\n  unit: (\d+)\n\}', text, re.M)
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)
check(strings and strings[0] == "", "string_table[0] is empty")
types = [(strings[int(a)], strings[int(b)]) for a, b in types]
check(types == [("samples", "count"), ("cpu", "nanoseconds")], f"sample types {types}")
check(sum(counts) == total, f"{len(samples)} samples, Σ counts {sum(counts)} == pivot {total}")
check("heavy_kernel" in strings, "heavy_kernel is a function name")
check(build_id in ids, f"the workload's build-id {build_id} in the mappings {ids}")
first = re.search(r'^  filename: (\d+)$', mappings[0], re.M) if mappings else None
check(first and strings[int(first.group(1))].endswith("/hotspots"), "the workload is mapping[0]")
sys.exit(0 if ok else 1)
PY

# folded
"$NUNATAK" export "$run" -f folded >single.folded 2>/dev/null || fail "export folded"
[ "$(python3 "$TESTS_LIB/folded_check.py" single.folded sum)" = "$total" ] ||
	fail "folded counts do not add up to $total"

# speedscope
"$NUNATAK" export "$run" -f speedscope -o single.speedscope.json 2>ss.err || fail "export speedscope: $(cat ss.err)"
python3 - single.speedscope.json "$total" <<'PY' || fail "speedscope (see above)"
import json, sys
d, total = json.load(open(sys.argv[1])), int(sys.argv[2])
names = [f["name"] for f in d["shared"]["frames"]]
weights = sum(sum(p["weights"]) for p in d["profiles"])
n = len(names)
ok = d["$schema"] == "https://www.speedscope.app/file-format-schema.json" and "heavy_kernel" in names \
    and weights == total and all(0 <= i < n for p in d["profiles"] for s in p["samples"] for i in s)
print(f"speedscope: {len(d['profiles'])} profiles, {n} frames, Σ weights {weights} (pivot {total})")
sys.exit(0 if ok else 1)
PY
"$NUNATAK" export "$run" -f chrome-trace -o single.trace.json 2>/dev/null || fail "export chrome-trace"
[ "$(json single.trace.json '[e["name"] for e in d["traceEvents"] if e["ph"] == "i"]')" = "['no MPI Event']" ] ||
	fail "the chrome trace of a Run without Events does not say so"

# a 2-rank Open MPI Run with --mpi-events
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
app="$WORKLOADS/mpi/pattern.openmpi"
command -v mpirun.openmpi >/dev/null || skip "Open MPI is not installed"
[ -x "$app" ] || fail "workload $app not built"
"$NUNATAK" run -o runs --name mpi --mpi-events -- mpirun.openmpi --oversubscribe -n 2 "$app" 600 100 1000 100 4096 \
	>mpi.out 2>mpi.err || fail "MPI run: exit $?: $(cat mpi.err)"
mrun=$(run_dir_of mpi.err)
events=$(sql "$mrun" "select count(*) from events")
[ "${events:-0}" -gt 0 ] || fail "the MPI Run holds no Event"
"$NUNATAK" export "$mrun" -f chrome-trace -o mpi.trace.json 2>trace.err || fail "export chrome-trace: $(cat trace.err)"
"$NUNATAK" export "$mrun" -f speedscope -o mpi.speedscope.json 2>/dev/null || fail "export speedscope (MPI)"
"$NUNATAK" export "$mrun" -f pprof -o mpi.pb.gz 2>/dev/null || fail "export pprof (MPI)"
gzip -dc mpi.pb.gz | protoc --decode perftools.profiles.Profile -I "$PROTO_DIR" profile.proto >mpi.txt ||
	fail "protoc cannot decode the MPI profile"
python3 - mpi.trace.json mpi.speedscope.json mpi.txt "$events" <<'PY' || fail "MPI exports (see above)"
import json, re, sys
t, ss, text, events = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), open(sys.argv[3]).read(), int(sys.argv[4])
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)
x = [e for e in t["traceEvents"] if e["ph"] == "X"]
check(len(x) == events, f"{len(x)} X events == pivot's {events}")
check(all(e["name"].startswith("MPI_") for e in x), f"names {sorted(set(e['name'] for e in x))}")
check({e["pid"] for e in x} == {0, 1}, f"X events on pids {sorted({e['pid'] for e in x})}")
check(all(e["ts"] >= 0 and e["dur"] >= 0 for e in x), "ts and dur not negative")
procs = {e["pid"]: e["args"]["name"] for e in t["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
check(procs.get(0) == "rank 0" and procs.get(1) == "rank 1", f"processes {procs}")
names = [p["name"] for p in ss["profiles"]]
check(names[:2] == ["rank 0", "rank 1"], f"speedscope profiles {names}")
strings = [eval(s) for s in re.findall(r'^string_table: (".*")$', text, re.M)]
rank = strings.index("rank") if "rank" in strings else -1
labels = {strings[int(i)] for i in re.findall(r'^  label \{\n    key: %d\n    str: (\d+)\n  \}' % rank, text, re.M)}
check(labels == {"0", "1"}, f"pprof rank labels {sorted(labels)}")
sys.exit(0 if ok else 1)
PY
echo "export: pprof/folded/speedscope Σ $total samples; chrome-trace $events MPI Events"
