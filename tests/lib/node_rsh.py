"""node_rsh — what sshd is to a launcher, for the "nodes" of the service
tests: a server in a node's network namespace that starts commands for
clients, so that a rank on that node is NOT a descendant of the launcher
(as with ssh to a real node: the Agent of the origin node must not follow
it; the node's own Agent adopts it by its Run token).

  node_rsh.py serve SOCKET          serve forever (started before the Run)
  node_rsh.py exec SOCKET CMD...    run CMD there with this process' stdin,
                                    stdout and stderr (passed as descriptors),
                                    PATH, LANG and HOME only; exit with
                                    its exit code (128+N for a signal N)

Only root may connect (SO_PEERCRED), the socket is 0600: it runs commands
as root. A client that goes away (its launcher killed) gets its command
sent SIGTERM, then SIGKILL 5 s later.
"""
import array
import json
import os
import signal
import socket
import struct
import sys
import threading


def serve(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    old = os.umask(0o177)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.umask(old)
    srv.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def handle(conn):
    pid = None
    try:
        uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
        if uid != 0:
            return
        msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        req = json.loads(msg)
        if len(fds) != 3:
            return
        pid = os.fork()
        if pid == 0:
            try:
                for i, fd in enumerate(fds):
                    os.dup2(fd, i)
                os.setsid()
                os.chdir(req.get("cwd") or "/")
                os.execvpe(req["argv"][0], req["argv"], req["env"])
            except BaseException as e:  # noqa: B902 - the child reports and exits
                os.write(2, ("node_rsh: %s: %s\n" % (req["argv"][0], e)).encode())
            os._exit(127)
        for fd in fds:
            os.close(fd)
        child = {"pid": pid, "lock": threading.Lock(), "reaped": False}
        threading.Thread(target=watch_client, args=(conn, child), daemon=True).start()
        # waited for without reaping, so that a kill from watch_client
        # never reaches a reused pid
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        with child["lock"]:
            child["reaped"] = True
            _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        conn.sendall(json.dumps({"exit": code if code >= 0 else 128 - code}).encode())
        conn.shutdown(socket.SHUT_RDWR)
    except (OSError, ValueError, KeyError):
        pass
    finally:
        conn.close()


def watch_client(conn, child):
    # the client closing its end before the command ended: the launcher
    # was stopped, so is what it started
    try:
        while conn.recv(1):
            pass
    except OSError:
        pass
    signal_child(child, signal.SIGTERM)
    threading.Timer(5, signal_child, args=(child, signal.SIGKILL)).start()


def signal_child(child, sig):
    with child["lock"]:
        if not child["reaped"]:
            try:
                os.killpg(child["pid"], sig)
            except ProcessLookupError:
                pass


def client(path, argv):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    # what sshd gives a command: not the client's environment (a launcher
    # forwards the application's environment itself, as hydra does)
    env = {k: os.environ[k] for k in ("PATH", "LANG", "HOME") if k in os.environ}
    req = {"argv": argv, "env": env, "cwd": os.getcwd()}
    socket.send_fds(s, [json.dumps(req).encode()], [0, 1, 2])
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
        if data.endswith(b"}"):
            break
    try:
        return int(json.loads(data)["exit"])
    except (ValueError, KeyError):
        print("node_rsh: no exit status from %s" % path, file=sys.stderr)
        return 255


def main(argv):
    if len(argv) >= 2 and argv[0] == "serve":
        serve(argv[1])
        return 0
    if len(argv) >= 3 and argv[0] == "exec":
        return client(argv[1], argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
