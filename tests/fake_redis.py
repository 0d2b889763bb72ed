#!/usr/bin/python3
"""fake_redis.py - a Redis server that is not quite there, for the tests.

    fake_redis.py UPSTREAM [--state FILE] [--drop FILE] [--hide-setresp]
                  [--log FILE]

Listens on a free port of 127.0.0.1, prints "ready PORT" on stdout, and
relays each command of each client to UPSTREAM (a real redis-server's unix
socket path, or HOST:PORT) on a connection of its own, one command at a
time, and the reply back. Real Redis cannot be held in some states (LOADING
lasts as long as the data set takes to load) nor made older than it is;
this one can:

  --state FILE     while FILE exists, every command but AUTH, SELECT and
                   QUIT gets FILE's first line as an error reply instead
                   ("LOADING Redis is loading the dataset in memory"), as
                   real Redis answers while loading; remove FILE and the
                   commands reach UPSTREAM again.
  --drop FILE      while FILE exists, every command but AUTH, SELECT,
                   CLUSTER (dlock's handshake) and QUIT reaches UPSTREAM, runs there, and the client's
                   connection is closed instead of the reply: a connection
                   lost after the server ran the command.
  --hide-setresp   renames redis.setresp in the scripts of EVAL, so that
                   they run as on a Redis older than 6.0, which lacks it.
  --log FILE       appends a line for each command to FILE: its name
                   (upper case), with EVAL and EVALSHA the number of keys,
                   then "->" and the first line of the reply
                   ("EVALSHA 8 -> -LOADING Redis is loading ...").

It ends on SIGTERM. Only RESP2 multibulk requests are understood (what
hiredis and redis-cli send).
"""
import os
import signal
import socket
import sys
import threading

EXEMPT = {b"AUTH", b"SELECT", b"CLUSTER", b"QUIT"}


def read_request(f):
    """One multibulk request as a list of bytes, or None at EOF."""
    line = f.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        raise ValueError("not a multibulk request: %r" % line[:40])
    args = []
    for _ in range(int(line[1:])):
        head = f.readline()
        if not head.startswith(b"$"):
            raise ValueError("not a bulk string: %r" % head[:40])
        n = int(head[1:])
        data = f.read(n + 2)
        if len(data) != n + 2:
            return None
        args.append(data[:n])
    return args


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def read_reply(f):
    """One whole reply, as the bytes that carry it."""
    line = f.readline()
    if not line:
        raise EOFError("upstream closed")
    kind = line[:1]
    if kind in (b"+", b"-", b":"):
        return line
    if kind == b"$":
        n = int(line[1:])
        return line if n < 0 else line + f.read(n + 2)
    if kind == b"*":
        n = int(line[1:])
        return line + b"".join(read_reply(f) for _ in range(max(n, 0)))
    raise ValueError("unknown reply type %r" % line[:40])


class Relay:
    def __init__(self, upstream, state, hide_setresp, log, drop=None):
        self.upstream = upstream
        self.state = state
        self.drop = drop
        self.hide_setresp = hide_setresp
        self.log = log
        self.log_lock = threading.Lock()

    def connect_upstream(self):
        if os.path.isabs(self.upstream):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(self.upstream)
        else:
            host, port = self.upstream.rsplit(":", 1)
            s = socket.create_connection((host, int(port)))
        return s

    def state_error(self):
        if not self.state:
            return None
        try:
            with open(self.state, "rb") as f:
                line = f.readline().strip()
        except FileNotFoundError:
            return None
        return b"-" + (line or b"ERR fake_redis: empty state file") + b"\r\n"

    def note(self, args, reply):
        if not self.log:
            return
        line = args[0].upper()
        if line in (b"EVAL", b"EVALSHA") and len(args) > 2:
            line += b" " + args[2]
        line += b" -> " + reply.split(b"\r\n", 1)[0] + b"\n"
        with self.log_lock, open(self.log, "ab") as lf:
            lf.write(line)

    def serve(self, client):
        up = upf = None
        cf = client.makefile("rb")
        try:
            while True:
                args = read_request(cf)
                if not args:
                    return
                name = args[0].upper()
                reply = None if name in EXEMPT else self.state_error()
                if reply is None:
                    if self.hide_setresp and name == b"EVAL" and len(args) > 1:
                        args[1] = args[1].replace(b"redis.setresp",
                                                  b"redis.no_setresp")
                    if up is None:
                        up = self.connect_upstream()
                        upf = up.makefile("rb")
                    up.sendall(encode(args))
                    reply = read_reply(upf)
                    if (self.drop and name not in EXEMPT and
                            os.path.exists(self.drop)):
                        self.note(args, b"(dropped)")
                        return
                self.note(args, reply)
                client.sendall(reply)
        except (OSError, ValueError, EOFError) as e:
            print("fake_redis: %s" % e, file=sys.stderr, flush=True)
        finally:
            for s in (cf, upf, up, client):
                if s is not None:
                    s.close()


def main():
    argv = sys.argv[1:]
    if not argv or argv[0].startswith("-"):
        sys.exit(__doc__)
    upstream, state, hide, log, drop = argv[0], None, False, None, None
    rest = iter(argv[1:])
    for a in rest:
        if a == "--state":
            state = next(rest)
        elif a == "--drop":
            drop = next(rest)
        elif a == "--hide-setresp":
            hide = True
        elif a == "--log":
            log = next(rest)
        else:
            sys.exit("fake_redis.py: unknown option %s" % a)
    relay = Relay(upstream, state, hide, log, drop)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    print("ready %d" % srv.getsockname()[1], flush=True)
    while True:
        c, _ = srv.accept()
        threading.Thread(target=relay.serve, args=(c,), daemon=True).start()


if __name__ == "__main__":
    main()
