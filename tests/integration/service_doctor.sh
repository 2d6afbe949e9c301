# `nunatak doctor` asks a running node service as `nunatak status` does: a
# nunatakd of the test (its own Aggregator, on a private socket) answers,
# so nunatakd and aggregator are ok; once it is stopped they are missing,
# and doctor still exits 0.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init local
svc_nunatakd_local

svc_in_node 0 "$NUNATAK" doctor --json >"$T/up.json" 2>"$T/up.err" || fail "doctor exited $?: $(cat "$T/up.err")"
st() { json "$T/$1.json" "[c for c in d['checks'] if c['name'] == '$2'][0]['status']"; }
[ "$(st up nunatakd)" = ok ] || fail "nunatakd runs, doctor says $(st up nunatakd): $(cat "$T/up.json")"
[ "$(st up aggregator)" = ok ] || fail "its Aggregator: $(st up aggregator)"

svc_nunatakd_kill 0
svc_in_node 0 "$NUNATAK" doctor --json >"$T/down.json" 2>"$T/down.err" || fail "doctor exited $? with no daemon"
[ "$(st down nunatakd)" = missing ] || fail "no daemon, doctor says $(st down nunatakd)"
echo "service_doctor: ok"
