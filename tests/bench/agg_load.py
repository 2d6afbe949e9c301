"""agg_load — load for a nunatak-aggregator over TCP (+CURVE), counting Acks.

  agg_load.py ingest ENDPOINT --runs-dir DIR [--seconds S] [--window W] [shape]
      one pretend Agent streams Batches of one Run as fast as the
      Aggregator acknowledges them (W Batches in flight) for S seconds;
      prints Batches, SampleCounts and samples stored per second
  agg_load.py latency ENDPOINT --runs-dir DIR --agents N [--seconds S] [shape]
      N pretend Agents (one DEALER each, own node name and incarnation)
      each send one Batch per second, spread evenly over the second; prints
      the send-to-Ack latency p50/p99/max and the Batches not acked
  shape: --loci L --stacks K --sample-counts C --samples-each E --depth D
  CURVE: --key SECRET_FILE (its .pub beside it) --server-key AGGREGATOR_PUB

The Run is created with START (owner root, no symbolizer) and finalized
at the end (not timed). Output: one "name: value" line per figure, then a
JSON line, so a script can keep either. Exit 1 when no Batch was acked.
"""
import argparse
import json
import os
import secrets
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import nunatak_wire as w  # noqa: E402
import zmq  # noqa: E402


def start_run(ctx, a, name, node="bench-node", key=None):
    """START a Run from node on a new DEALER (key: its CURVE secret key file,
    default --key): (socket, run_id)."""
    s = w.dealer(ctx, a.endpoint, key or a.key, a.server_key)
    run_id = secrets.token_hex(16)
    start = {"run": {"name": name, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     "command": ["agg_load", name], "node": node, "job_id": None,
                     "effective_configuration": {}},
             "runs_dir": a.runs_dir, "owner": {"uid": os.getuid(), "gid": os.getgid()},
             "symbolizer": "", "frequency": 997, "mpi_events": False}
    # an Aggregator still storing the backlog of the previous figure answers late
    r = w.request(s, w.control(w.START, run_id, start, node), 60)
    if r is None or r[0] != "ack":
        sys.exit("START refused or unanswered: %s" % (r,))
    return s, run_id


def finalize(s, run_id, budget_s=120):
    fin = {"exit_code": 0, "end": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "symbolizer_budget_ms": 0,
           "interrupted": False, "nodes_wait_ms": 0}
    r = w.request(s, w.control(w.FINALIZE, run_id, fin, "bench-node"), budget_s)
    return r is not None and r[0] == "ack"


def shape_of(a):
    return w.BatchShape(n_loci=a.loci, n_stacks=a.stacks, depth=a.depth,
                        n_samples=a.sample_counts, samples_each=a.samples_each)


def ingest(a):
    ctx = zmq.Context()
    shape = shape_of(a)
    s, run_id = start_run(ctx, a, "ingest")
    node, inc = "bench-node", secrets.randbits(63) | 1
    loci = shape.loci_bytes(node)
    size = len(w.batch(run_id, node, 0, inc, shape, loci))
    seq = acked = errors = 0
    inflight = set()
    t0 = time.monotonic()
    end = t0 + a.seconds
    while True:
        now = time.monotonic()
        while now < end and len(inflight) < a.window:
            s.send(w.batch(run_id, node, seq, inc, shape, loci,
                           counters={"samples_sent": (seq + 1) * shape.samples_per_batch(),
                                     "batches_sent": seq + 1}))
            inflight.add(seq)
            seq += 1
        if not inflight:
            break
        if not s.poll(10000, zmq.POLLIN):
            break
        kind, d = w.decode(s.recv())
        if kind == "ack" and d["seq"] in inflight:
            inflight.discard(d["seq"])
            acked += 1
        elif kind == "error":
            errors += 1
            inflight.discard(d["seq"])
    secs = time.monotonic() - t0
    fin = finalize(s, run_id)
    s.close()
    ctx.term()
    res = {"batches_acked": acked, "errors": errors, "seconds": round(secs, 2), "batch_bytes": size,
           "sample_counts_per_batch": shape.n_samples, "samples_per_batch": shape.samples_per_batch(),
           "batches_per_s": round(acked / secs, 1),
           "sample_counts_per_s": round(acked * shape.n_samples / secs),
           "samples_per_s": round(acked * shape.samples_per_batch() / secs),
           "mb_per_s": round(acked * size / secs / 1e6, 1), "finalized": fin}
    for k, v in res.items():
        print("%s: %s" % (k, v))
    print(json.dumps(res))
    return 0 if acked else 1


def latency(a):
    ctx = zmq.Context()
    shape = shape_of(a)
    agents = []
    # an Aggregator binds a node name to one CURVE key and takes a Run's
    # Batches from its own nodes only: every pretend Agent has its own key
    # (--sim-keys DIR/simNNNN.key, each allowed) and its own Run
    for k in range(a.agents):
        node = "sim%04d" % k
        sock, run_id = start_run(ctx, a, "latency%d" % a.agents, node,
                                 os.path.join(a.sim_keys, node + ".key"))
        agents.append({"node": node, "inc": secrets.randbits(63) | 1, "seq": 0, "run_id": run_id,
                       "loci": shape.loci_bytes(node), "sent": {}, "sock": sock})
    poller = zmq.Poller()
    by_sock = {}
    for ag in agents:
        poller.register(ag["sock"], zmq.POLLIN)
        by_sock[ag["sock"]] = ag
    time.sleep(min(5.0, 0.5 + a.agents / 500))  # CURVE handshakes
    lat, errors = [], 0
    t0 = time.monotonic()
    # agent k sends at t0 + k/N + j: one Batch per second each, spread evenly
    sched = [(t0 + k / a.agents, k) for k in range(a.agents)]
    nxt = 0
    end = t0 + a.seconds
    while True:
        now = time.monotonic()
        while now < end:
            when, k = sched[nxt]
            if when > now:
                break
            ag = agents[k]
            ag["sock"].send(w.batch(ag["run_id"], ag["node"], ag["seq"], ag["inc"], shape,
                                    ag["loci"]))
            ag["sent"][ag["seq"]] = time.monotonic()
            ag["seq"] += 1
            sched[nxt] = (when + 1.0, k)
            nxt = (nxt + 1) % a.agents
        pending = sum(len(ag["sent"]) for ag in agents)
        if now >= end and (not pending or now > end + 10):
            break
        timeout = max(0, min(sched[nxt][0] - now, 0.05)) if now < end else 0.2
        for sock, _ in poller.poll(int(timeout * 1000) + 1):
            while sock.poll(0, zmq.POLLIN):
                kind, d = w.decode(sock.recv())
                ag = by_sock[sock]
                if kind == "ack" and d["seq"] in ag["sent"]:
                    lat.append(time.monotonic() - ag["sent"].pop(d["seq"]))
                elif kind == "error":
                    errors += 1
                    ag["sent"].pop(d["seq"], None)
    lost = sum(len(ag["sent"]) for ag in agents)
    # one Run per pretend Agent: left open (finalizing 1000 Runs is not
    # what is measured); the Aggregator is stopped with its state dir
    for ag in agents:
        ag["sock"].close()
    fin = "not asked (one Run per Agent)"
    ctx.term()
    lat.sort()

    def pct(p):
        return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 2) if lat else None
    res = {"agents": a.agents, "batches_acked": len(lat), "not_acked": lost, "errors": errors,
           "p50_ms": pct(0.50), "p99_ms": pct(0.99), "max_ms": pct(1.0),
           "sample_counts_per_batch": shape.n_samples, "finalized": fin}
    for k, v in res.items():
        print("%s: %s" % (k, v))
    print(json.dumps(res))
    return 0 if lat else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("ingest", "latency"))
    p.add_argument("endpoint")
    p.add_argument("--runs-dir", required=True)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--window", type=int, default=8)
    p.add_argument("--agents", type=int, default=100)
    p.add_argument("--loci", type=int, default=64)
    p.add_argument("--stacks", type=int, default=1024)
    p.add_argument("--sample-counts", type=int, default=3200)
    p.add_argument("--samples-each", type=int, default=20)
    p.add_argument("--depth", type=int, default=12)
    p.add_argument("--key")
    p.add_argument("--server-key")
    p.add_argument("--sim-keys", help="latency: DIR of simNNNN.key, one per pretend Agent")
    a = p.parse_args()
    return ingest(a) if a.mode == "ingest" else latency(a)


if __name__ == "__main__":
    sys.exit(main())
