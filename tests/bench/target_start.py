"""target_start — how long nunatakd takes to start a Target: the time from
a run-start request on its control socket (for a process of ours that is
already running) to its reply (START acknowledged by the Aggregator, the
process followed, sampling enabled), then run-end. N times; prints the
median and the maximum in ms.

  target_start.py SOCKET RUNS_DIR [N]
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import time


def rpc(s, obj, timeout_s=30):
    s.settimeout(timeout_s)
    s.send(json.dumps(obj).encode())
    return json.loads(s.recv(1 << 20))


def main(argv):
    path, runs_dir = argv[0], argv[1]
    n = int(argv[2]) if len(argv) > 2 else 10
    times = []
    for k in range(n):
        child = subprocess.Popen(["sleep", "30"])
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(path)
        req = {"request": "run-start",
               "run": {"name": "start%d" % k, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "command": ["sleep", "30"], "launcher": None, "target": None, "world_size": None,
                       "exit_code": None, "node": "", "job_id": None, "effective_configuration": {}},
               "runs_dir": runs_dir, "frequency": 997, "mpi_events": False, "symbolizer": "",
               "target_exe": None, "token": os.urandom(16).hex(), "pid": child.pid}
        t = time.monotonic()
        r = rpc(s, req)
        times.append((time.monotonic() - t) * 1000)
        if not r.get("ok"):
            print("run-start refused: %s" % r, file=sys.stderr)
            child.kill()
            return 1
        child.kill()
        child.wait()
        rpc(s, {"request": "run-end", "run_id": r["run_id"], "exit_code": 0, "linger_ms": 0,
                "symbolizer_budget_ms": 0}, 60)
        s.close()
    print("target_start_ms_median: %.1f (max %.1f, %d Targets)" % (statistics.median(times), max(times), n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
