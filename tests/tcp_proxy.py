#!/usr/bin/python3
"""tcp_proxy.py LISTEN_PORT TARGET_PORT: a TCP proxy on 127.0.0.1 for tests.

Each connection to LISTEN_PORT is passed through to 127.0.0.1:TARGET_PORT
(closed at once when the target refuses). A test stops the proxy with
SIGSTOP to make a black hole: the kernel still accepts connections (the
listen backlog), and then nothing is said either way."""
import socket
import sys
import threading


def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    lp, tp = int(sys.argv[1]), int(sys.argv[2])
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", lp))
    s.listen(50)
    while True:
        c, _ = s.accept()
        try:
            u = socket.create_connection(("127.0.0.1", tp))
        except OSError:
            c.close()
            continue
        threading.Thread(target=pump, args=(u, c), daemon=True).start()
        threading.Thread(target=pump, args=(c, u), daemon=True).start()


if __name__ == "__main__":
    main()
