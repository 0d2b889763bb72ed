#!/usr/bin/python3
"""tcp_proxy.py LISTEN_PORT TARGET_PORT [DELAY_MS]: a TCP proxy on 127.0.0.1
for tests.

Each connection to LISTEN_PORT is passed through to 127.0.0.1:TARGET_PORT
(closed at once when the target refuses). DELAY_MS: what the target says
reaches the client that much later (each chunk DELAY_MS after it came,
whatever came before), so that a client's round trips can be counted by
the clock. A test stops the proxy with
SIGSTOP to make a black hole: the kernel still accepts connections (the
listen backlog), and then nothing is said either way."""
import queue
import socket
import sys
import threading
import time


def shut(*socks):
    """Both ways closed: the other side's pump sees the end too."""
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


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
        shut(a, b)


def delayed_pump(a, b, delay):
    """pump(), each chunk sent delay seconds after it came."""
    q = queue.Queue()

    def read():
        try:
            while True:
                d = a.recv(65536)
                q.put((time.monotonic(), d))
                if not d:
                    break
        except OSError:
            q.put((time.monotonic(), b""))

    threading.Thread(target=read, daemon=True).start()
    try:
        while True:
            t, d = q.get()
            time.sleep(max(0.0, t + delay - time.monotonic()))
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        shut(a, b)


def main():
    lp, tp = int(sys.argv[1]), int(sys.argv[2])
    delay = int(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0
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
        if delay:
            threading.Thread(target=delayed_pump, args=(u, c, delay),
                             daemon=True).start()
        else:
            threading.Thread(target=pump, args=(u, c), daemon=True).start()
        threading.Thread(target=pump, args=(c, u), daemon=True).start()


if __name__ == "__main__":
    main()
