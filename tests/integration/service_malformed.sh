# Messages no real Agent sends, to nunatak-aggregator over TCP+CURVE from
# an allowed key: bytes that are no Envelope, a truncated Batch, an
# oversized one, a newer protocol major, a Batch of an unknown Run, an
# unknown Control action, a START that is not JSON → each gets an Error
# reply, the malformed/truncated/oversized/newer-major ones are counted
# (STATUS counters.refused, +1 each), and the aggregator keeps serving
# (STATUS, and a real START/Batch/same Batch/FINALIZE afterwards: the
# duplicate counted and stored once).
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/service.sh"
svc_init aggregator-only
svc_aggregator_start
cd "$T"
svc_py - "$SVC_AGG_ENDPOINT" "$SVC/etc/keys/tester.key" "$SVC/etc/keys/aggregator.pub" "$SVC/runs" "$TESTS_LIB" <<'PY' || fail "see above"
import json, os, secrets, sys, time
endpoint, key, server_key, runs_dir, lib = sys.argv[1:6]
sys.path.insert(0, lib)
import nunatak_wire as w
import zmq
ctx = zmq.Context()
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok = ok and bool(cond)
def status():
    s = w.dealer(ctx, endpoint, key, server_key)
    r = w.request(s, w.control(w.STATUS, "", "{}"), 5)
    s.close()
    return json.loads(r[1]["json"]) if r and r[0] == "ack" else None

st0 = status()
check(st0 is not None, "STATUS answers before")
refused0 = st0["counters"]["refused"] if st0 else 0
run_id = secrets.token_hex(16)
good = w.batch(run_id, "nodeX", 0, 77, w.BatchShape(n_loci=2, n_stacks=4, n_samples=8))
cases = [
    ("not an Envelope", b"\xff\xfe garbage \x00\x01", None, True),
    ("empty frame", b"", None, True),
    ("truncated Batch", good[: len(good) // 2], None, True),
    ("oversized Batch (65 MiB)", w.envelope(w.BATCH, w.f_bytes(1, run_id) + w.f_bytes(2, "nodeX") + w.f_varint(3, 1)
                                   + w.f_bytes(4, w.f_bytes(1, "x") + w.f_bytes(2, "p" * (65 << 20)) + w.f_bytes(3, "x") + w.f_varint(4, 0))
                                   + w.f_varint(15, 77)), None, True),
    ("newer major (2.0)", w.envelope(w.CONTROL, w.f_varint(1, w.STATUS) + w.f_bytes(2, ""), major=2, minor=0), "2", True),
    ("Batch of an unknown Run", good, None, False),
    ("unknown Control action", w.envelope(w.CONTROL, w.f_varint(1, 99) + w.f_bytes(2, run_id)), None, False),
    ("START that is not JSON", w.control(w.START, run_id, "{not json"), None, False),
    ("Envelope without a body", w.f_varint(1, 1) + w.f_varint(2, 2), None, True),
]
counted = 0
for name, msg, must, must_count in cases:
    before = status()
    s = w.dealer(ctx, endpoint, key, server_key)
    t = time.monotonic()
    r = w.request(s, msg, 10)
    s.close()
    if r is None:
        check(False, f"{name}: no reply within 10 s")
        continue
    kind, d = r
    check(kind == "error", f"{name}: {kind} {d.get('message')!r} code {d.get('code')} ({time.monotonic() - t:.2f} s)")
    if must and kind == "error":
        check(must in d["message"] and "1" in d["message"], f"{name}: the Error names both versions")
    after = status()
    check(after is not None, f"{name}: still serving")
    if before and after:
        delta = after["counters"]["refused"] - before["counters"]["refused"]
        counted += delta > 0
        if must_count:
            check(delta == 1, f"{name}: counted as refused (+{delta})")
        else:
            print(f"     {name}: refused +{delta}, received +{after['counters']['received'] - before['counters']['received']}")
st1 = status()
refused1 = st1["counters"]["refused"] if st1 else 0
print(f"refused {refused0} -> {refused1}: {counted} of {len(cases)} cases counted")
print("counters:", st1 and st1["counters"])

# a real Run still works afterwards
s = w.dealer(ctx, endpoint, key, server_key)
start = {"run": {"name": "after", "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": ["x"],
                 "node": "nodeX", "job_id": None, "effective_configuration": {}},
         "runs_dir": runs_dir, "owner": {"uid": 0, "gid": 0}, "symbolizer": "", "frequency": 997, "mpi_events": False}
r = w.request(s, w.control(w.START, run_id, start, "nodeX"), 10)
check(r and r[0] == "ack", f"START after the bad messages: {r}")
r = w.request(s, good, 10)
check(r and r[0] == "ack" and r[1]["seq"] == 0 and r[1]["incarnation"] == 77, f"Batch acked: {r}")
r = w.request(s, good, 10)
check(r and r[0] == "ack", f"the same Batch again acked (a duplicate, stored once): {r}")
last = w.batch(run_id, "nodeX", 1, 77, None, counters={"samples_sent": 32, "batches_sent": 1}, last=True)
r = w.request(s, last, 10)
check(r and r[0] == "ack", f"last Batch acked: {r}")
fin = {"exit_code": 0, "end": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "symbolizer_budget_ms": 0, "interrupted": False, "nodes_wait_ms": 0}
r = w.request(s, w.control(w.FINALIZE, run_id, fin, "nodeX"), 60)
check(r and r[0] == "ack", f"FINALIZE acked: {r}")
st2 = status()
check(st2 and st2["counters"]["duplicates"] >= 1, f"the duplicate counted: {st2 and st2['counters']}")
s.close()
ctx.term()
sys.exit(0 if ok else 1)
PY
kill -0 "$SVC_AGG_PID" || fail "the aggregator died"
run=$(find "$SVC/runs" -mindepth 1 -maxdepth 1 -type d | head -1)
[ -n "$run" ] || fail "no Run for the real START"
[ "$(sql "$run" 'select sum(sample_count) from samples')" = 32 ] || fail "the duplicate was stored twice: $(sql "$run" 'select sum(sample_count) from samples')"
echo "every bad message refused with an Error and counted; the aggregator kept serving"
