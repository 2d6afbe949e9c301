"""control_client — one request on nunatakd's control socket, as the
calling user: SOCK_SEQPACKET, one JSON object per message (the protocol of
userspace/control/, design7 "Control socket protocol").

  control_client.py SOCKET JSON [--hold S]
      sends JSON, prints the reply (one JSON object) and exits 0; 2 when no
      reply came within 10 s. --hold S keeps the connection open S seconds
      after the reply (the daemon ends a Run whose connection closes).
"""
import json
import socket
import sys
import time


def request(path, obj, timeout_s=10.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(timeout_s)
    s.connect(path)
    s.send(json.dumps(obj).encode())
    return s, json.loads(s.recv(1 << 20))


def main(argv):
    hold = 0.0
    if "--hold" in argv:
        k = argv.index("--hold")
        hold = float(argv[k + 1])
        del argv[k:k + 2]
    try:
        s, reply = request(argv[0], json.loads(argv[1]))
    except socket.timeout:
        print("no reply from %s within 10 s" % argv[0], file=sys.stderr)
        return 2
    except OSError as e:
        print("control socket %s: %s" % (argv[0], e), file=sys.stderr)
        return 2
    print(json.dumps(reply))
    sys.stdout.flush()
    time.sleep(hold)
    s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
