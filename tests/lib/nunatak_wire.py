"""nunatak_wire — the nunatak wire protocol (userspace/wire/nunatak.proto,
protocol 1.2) spoken from Python, for the service tests and benchmarks.

A test must be able to say what a real peer says, and also what no real
peer would (truncated, malformed, newer-major Envelopes), so the protobuf
encoding is written out here by hand (proto2, a few messages) rather than
generated: only pyzmq (Debian python3-zmq) is needed, and the byte strings
a test sends are exactly the ones it built.

As a program (used by tests/lib/service.sh):
  nunatak_wire.py status ENDPOINT [--key SECRET_FILE --server-key PUB_FILE]
      prints the Aggregator's STATUS (Ack.json) and exits 0; 1 on Error,
      2 when no reply came within --timeout seconds (default 5)
  nunatak_wire.py keygen DIR NAME
      writes DIR/NAME.key (Z85 secret, 0600) and DIR/NAME.pub (0644)
"""
import json
import os
import sys
import time

PROTOCOL_MAJOR = 1
PROTOCOL_MINOR = 3

# Envelope body fields
HELLO, BATCH, ACK, CONTROL, ERROR = 10, 11, 12, 13, 14
# Control.Action
START, FINALIZE, OPEN, CLOSE, STATUS = 1, 2, 3, 4, 5


def varint(v):
    if v < 0:
        v += 1 << 64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def f_varint(num, v):
    return varint(num << 3) + varint(int(v))


def f_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return varint(num << 3 | 2) + varint(len(b)) + b


def envelope(body_field, body, major=PROTOCOL_MAJOR, minor=PROTOCOL_MINOR):
    return f_varint(1, major) + f_varint(2, minor) + f_bytes(body_field, body)


def control(action, run_id="", js=None, node=None):
    b = f_varint(1, action) + f_bytes(2, run_id)
    if js is not None:
        b += f_bytes(3, js if isinstance(js, str) else json.dumps(js))
    if node is not None:
        b += f_bytes(4, node)
    return envelope(CONTROL, b)


def hello(node, incarnation, version="test", machine=None, status=None):
    b = f_bytes(1, version) + f_bytes(2, node)
    if machine is not None:
        b += f_bytes(3, json.dumps(machine))
    b += f_varint(4, incarnation)
    if status is not None:
        b += f_bytes(5, json.dumps(status))
    return envelope(HELLO, b)


class BatchShape:
    """A realistic Batch of one node for one drain interval: n_loci threads,
    n_stacks distinct stacks of depth frames over n_modules modules, and
    n_samples SampleCounts (locus, stack) each of samples_each samples."""

    def __init__(self, n_modules=8, n_loci=16, n_stacks=256, depth=12, n_samples=512,
                 samples_each=4, period_ns=1003009):
        self.n_samples, self.samples_each = n_samples, samples_each
        mods = b"".join(
            f_bytes(4, f_bytes(1, "%040x" % (0xB1D0 + i)) + f_bytes(2, "/usr/lib/libm%d.so" % i)
                    + f_bytes(3, "libm%d.so" % i) + f_varint(4, 1))
            for i in range(n_modules))
        self.loci = []
        for i in range(n_loci):
            self.loci.append((1000 + i // 4, 1000 + i, "app", "/opt/app/bin/app", i // 4))
        stacks = b""
        for s in range(n_stacks):
            frames = b"".join(f_bytes(1, f_varint(1, (s + d) % n_modules)
                                      + f_varint(2, 0x1000 + 0x40 * ((s * 7 + d * 13) % 4096)))
                              for d in range(depth))
            stacks += f_bytes(6, frames + f_varint(2, 0))
        samples = b""
        for k in range(n_samples):
            samples += f_bytes(7, f_varint(1, k % n_loci) + f_varint(2, k % n_stacks)
                               + f_bytes(3, "cpu-clock") + f_varint(4, samples_each)
                               + f_varint(5, samples_each * period_ns) + f_varint(6, 0))
        self.body_tail = mods, stacks, samples

    def loci_bytes(self, node):
        return b"".join(
            f_bytes(5, f_bytes(1, node) + f_varint(2, tg) + f_varint(3, tid) + f_bytes(4, comm)
                    + f_bytes(5, exe) + f_varint(6, rank) + f_varint(7, 4))
            for tg, tid, comm, exe, rank in self.loci)

    def samples_per_batch(self):
        return self.n_samples * self.samples_each


def batch(run_id, node, seq, incarnation, shape=None, loci=None, counters=None, last=False,
          samples_sent=None):
    """One Batch; shape None: an empty one (counters only). loci: the
    pre-encoded Locus fields of shape for node (shape.loci_bytes(node))."""
    b = f_bytes(1, run_id) + f_bytes(2, node) + f_varint(3, seq)
    if shape is not None:
        mods, stacks, samples = shape.body_tail
        b += mods + (loci if loci is not None else shape.loci_bytes(node)) + stacks + samples
    for name, value in (counters or {}).items():
        b += f_bytes(9, f_bytes(1, name) + f_varint(2, value))
    if last:
        b += f_varint(14, 1)
    b += f_varint(15, incarnation)
    return envelope(BATCH, b)


def parse_fields(data):
    """Top-level fields of a protobuf message: {num: [int | bytes, ...]};
    raises ValueError on bytes that are not a message."""
    out, i, n = {}, 0, len(data)

    def rd():
        nonlocal i
        v = shift = 0
        while True:
            if i >= n:
                raise ValueError("truncated varint")
            c = data[i]
            i += 1
            v |= (c & 0x7F) << shift
            shift += 7
            if not c & 0x80:
                return v

    while i < n:
        key = rd()
        num, wt = key >> 3, key & 7
        if wt == 0:
            val = rd()
        elif wt == 2:
            ln = rd()
            if i + ln > n:
                raise ValueError("truncated field")
            val, i = bytes(data[i:i + ln]), i + ln
        elif wt == 1:
            val, i = data[i:i + 8], i + 8
        elif wt == 5:
            val, i = data[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.setdefault(num, []).append(val)
    return out


def _one(fields, num, default=None, text=False):
    v = fields.get(num, [default])[-1]
    if text and isinstance(v, bytes):
        return v.decode(errors="replace")
    return v


def decode(data):
    """(kind, dict) of an Envelope: kind 'ack', 'error', 'control', 'hello',
    'batch' or 'other'."""
    env = parse_fields(data)
    d = {"major": _one(env, 1), "minor": _one(env, 2)}
    if ACK in env:
        f = parse_fields(env[ACK][-1])
        d.update(run_id=_one(f, 1, b"", True), node=_one(f, 2, b"", True), seq=_one(f, 3, 0),
                 incarnation=_one(f, 4, 0), json=_one(f, 5, None, True))
        return "ack", d
    if ERROR in env:
        f = parse_fields(env[ERROR][-1])
        d.update(message=_one(f, 1, b"", True), code=_one(f, 2), seq=_one(f, 3),
                 incarnation=_one(f, 4))
        return "error", d
    if CONTROL in env:
        f = parse_fields(env[CONTROL][-1])
        d.update(action=_one(f, 1), run_id=_one(f, 2, b"", True), json=_one(f, 3, None, True),
                 node=_one(f, 4, None, True))
        return "control", d
    return "other", d


def read_key(path):
    """The Z85 key of a key file as userspace/wire/curve.h writes them: the
    one line that is neither blank nor a '#' comment."""
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                return line.split()[0].encode()
    raise ValueError("no key in %s" % path)


def dealer(ctx, endpoint, key=None, server_key=None, identity=None):
    """A DEALER connected to endpoint; CURVE when key (a secret key file,
    its .pub beside it) and server_key (the Aggregator's .pub) are given."""
    import zmq
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    if identity:
        s.setsockopt(zmq.IDENTITY, identity)
    if key:
        pub = key[:-4] + ".pub" if key.endswith(".key") else key + ".pub"
        s.curve_secretkey = read_key(key)
        s.curve_publickey = read_key(pub)
        s.curve_serverkey = read_key(server_key)
    s.connect(endpoint)
    return s


def request(sock, msg, timeout_s=5.0, want=("ack", "error")):
    """Sends msg and returns the first reply of a kind in want, decoded;
    None when none came within timeout_s (OPEN/CLOSE sent to a pretend
    Agent are skipped)."""
    import zmq
    sock.send(msg)
    end = time.monotonic() + timeout_s
    while True:
        left = end - time.monotonic()
        if left <= 0 or not sock.poll(int(left * 1000), zmq.POLLIN):
            return None
        kind, d = decode(sock.recv())
        if kind in want:
            return kind, d


def keygen(directory, name):
    import zmq
    pub, sec = zmq.curve_keypair()
    old = os.umask(0o077)
    try:
        fd = os.open(os.path.join(directory, name + ".key"),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.write(fd, sec + b"\n")
        os.close(fd)
        fd = os.open(os.path.join(directory, name + ".pub"),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        os.write(fd, pub + b"\n")
        os.fchmod(fd, 0o644)
        os.close(fd)
    finally:
        os.umask(old)


def main(argv):
    import argparse
    import zmq
    p = argparse.ArgumentParser(prog="nunatak_wire.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("status")
    st.add_argument("endpoint")
    st.add_argument("--key")
    st.add_argument("--server-key")
    st.add_argument("--timeout", type=float, default=5.0)
    kg = sub.add_parser("keygen")
    kg.add_argument("dir")
    kg.add_argument("name")
    a = p.parse_args(argv)
    if a.cmd == "keygen":
        keygen(a.dir, a.name)
        return 0
    ctx = zmq.Context()
    s = dealer(ctx, a.endpoint, a.key, a.server_key)
    r = request(s, control(STATUS, "", "{}"), a.timeout)
    s.close()
    ctx.term()
    if r is None:
        print("no reply from %s within %g s" % (a.endpoint, a.timeout), file=sys.stderr)
        return 2
    kind, d = r
    if kind == "error":
        print("Error: %s (code %s)" % (d["message"], d["code"]), file=sys.stderr)
        return 1
    print(d["json"] or "{}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
