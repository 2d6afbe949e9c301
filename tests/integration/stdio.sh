# stdin, stdout and stderr of the application are untouched: byte-identical
# to a bare run.
. "$TESTS_LIB/common.sh"
need_root_bpf

cd "$T"
head -c 300000 /dev/urandom >input.bin
"$WORKLOADS/hotspots" 0.2 >bare.out
"$NUNATAK" run -- "$WORKLOADS/hotspots" 0.2 >run.out 2>/dev/null
cmp bare.out run.out || fail "stdout differs from a bare run"

cat input.bin | "$NUNATAK" run -- cat >cat.out 2>/dev/null
cmp input.bin cat.out || fail "stdin → stdout through the application is not byte-identical"

"$NUNATAK" run -- sh -c 'echo to-stderr >&2; echo to-stdout' >o.txt 2>e.txt
[ "$(cat o.txt)" = to-stdout ] || fail "stdout polluted: $(cat o.txt)"
# Degradations announced before the launch (no PMU on a VM) come first;
# nothing else of nunatak's may precede the application's own stderr
first=$(grep -v -e '^nunatak: degradation ' -e '^ *remedy: ' e.txt | head -1)
[ "$first" = to-stderr ] || fail "application's stderr is not first on stderr: $(head -3 e.txt)"
