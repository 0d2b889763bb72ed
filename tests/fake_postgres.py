#!/usr/bin/python3
"""fake_postgres.py - a PostgreSQL server of another version, for the tests.

    fake_postgres.py VERSION LOG

Listens on a free port of 127.0.0.1, prints "ready PORT" on stdout, and
to each client says what a PostgreSQL server of VERSION ("13.11") says
at the start of a session (no TLS, no password asked, its parameters,
its backend key, ready), as only one of that version could: the suite
has PostgreSQL 15 alone. Whatever the client sends after that (a query)
is appended to LOG, one line a message (its type and its text), and
answered with an error. Ends on SIGTERM.
"""
import socket
import struct
import sys
import threading


def message(kind, body):
    return kind + struct.pack("!I", len(body) + 4) + body


def recv_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def session(conn, version, log):
    try:
        while True:  # SSLRequest and GSSENCRequest are declined
            length, code = struct.unpack("!II", recv_exact(conn, 8))
            rest = recv_exact(conn, length - 8)
            if code in (80877103, 80877104):
                conn.sendall(b"N")
                continue
            break
        out = message(b"R", struct.pack("!I", 0))
        for name, value in (("server_version", version),
                            ("server_encoding", "UTF8"),
                            ("client_encoding", "UTF8"),
                            ("DateStyle", "ISO, MDY"),
                            ("integer_datetimes", "on"),
                            ("standard_conforming_strings", "on")):
            out += message(b"S", name.encode() + b"\0" + value.encode() + b"\0")
        out += message(b"K", struct.pack("!II", 4242, 1))
        out += message(b"Z", b"I")
        conn.sendall(out)
        while True:
            kind = recv_exact(conn, 1)
            (length,) = struct.unpack("!I", recv_exact(conn, 4))
            body = recv_exact(conn, length - 4)
            if kind == b"X":
                break
            with open(log, "a") as f:
                f.write("%s %r\n" % (kind.decode(), body[:200]))
            if kind in (b"Q", b"S"):
                conn.sendall(message(b"E", b"SERROR\0C0A000\0Mfake server\0\0")
                             + message(b"Z", b"I"))
    except (EOFError, OSError):
        pass
    finally:
        conn.close()


def main():
    version, log = sys.argv[1], sys.argv[2]
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    print("ready %d" % listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=session, args=(conn, version, log), daemon=True).start()


if __name__ == "__main__":
    main()
