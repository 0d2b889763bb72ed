#!/usr/bin/env python3
"""relay.py: a TCP relay that adds latency, for benchmarks on one machine.

    relay.py [--connect-rtt] LISTEN_HOST:PORT TARGET_HOST:PORT DELAY_MS

Every chunk read on one side is written to the other DELAY_MS/2 later, in
each direction, so one request/reply round trip costs DELAY_MS more.  Order
within a direction is kept; EOF is passed on (half-close) after the same
delay.  Prints "ready" on stdout once listening; SIGTERM or SIGINT closes
the listener and every connection and exits 0.

The kernel completes a TCP handshake before accept(), so a new connection
costs no round trip here, where a real network charges one.  --connect-rtt
charges it: nothing from the client reaches the target before one DELAY_MS
has passed since the connection was accepted, as if connect() had taken that
long.

Python's event loop sleeps in whole milliseconds (rounded up), so a chunk
may arrive up to about 1 ms late, never early.  Standard library only.
"""

import argparse
import asyncio
import signal
import sys

CHUNK = 65536
QUEUE_CHUNKS = 256  # per direction; a full queue stops reading (backpressure)


def hostport(s):
	"""'host:port', '[v6]:port' -> (host, port)."""
	host, sep, port = s.rpartition(":")
	if not sep or not host or not port.isdigit() or int(port) > 65535:
		raise argparse.ArgumentTypeError(f"bad address '{s}' (want HOST:PORT)")
	if host.startswith("[") and host.endswith("]"):
		host = host[1:-1]
	return host, int(port)


def delay_ms(s):
	try:
		v = float(s)
	except ValueError:
		v = -1.0
	if not 0 <= v < 3600e3:
		raise argparse.ArgumentTypeError(f"bad DELAY_MS '{s}'")
	return v


async def pump(reader, writer, half_s, floor):
	"""Copy reader to writer, each chunk half_s after it was read (and not
	before floor, a loop.time()); EOF is passed on the same way."""
	loop = asyncio.get_running_loop()
	q = asyncio.Queue(QUEUE_CHUNKS)

	async def read_side():
		while True:
			try:
				data = await reader.read(CHUNK)
			except (ConnectionError, OSError):
				data = b""
			await q.put((max(loop.time(), floor) + half_s, data))
			if not data:
				return

	async def write_side():
		while True:
			due, data = await q.get()
			wait = due - loop.time()
			if wait > 0:
				await asyncio.sleep(wait)
			if not data:
				if writer.can_write_eof() and not writer.is_closing():
					writer.write_eof()
				return
			writer.write(data)
			await writer.drain()

	r = asyncio.ensure_future(read_side())
	try:
		await write_side()
	finally:
		r.cancel()


class Relay:
	def __init__(self, target, delay_s, connect_rtt):
		self.target = target
		self.half_s = delay_s / 2
		self.connect_s = delay_s if connect_rtt else 0.0
		self.conns = set()

	async def handle(self, creader, cwriter):
		task = asyncio.current_task()
		self.conns.add(task)
		t0 = asyncio.get_running_loop().time()
		swriter = None
		tasks = []
		try:
			sreader, swriter = await asyncio.open_connection(*self.target)
			# Client to server waits for the emulated handshake, server
			# to client for half of it (a greeting leaves once the
			# server has accepted).
			up = pump(creader, swriter, self.half_s, t0 + self.connect_s)
			down = pump(sreader, cwriter, self.half_s,
				    t0 + self.connect_s / 2)
			tasks += [asyncio.ensure_future(up), asyncio.ensure_future(down)]
			# Both directions end on EOF; an error on one (a reset)
			# ends the other too, or it could wait for ever.
			done, pending = await asyncio.wait(
				tasks, return_when=asyncio.FIRST_EXCEPTION)
			for t in pending:
				t.cancel()
			await asyncio.gather(*pending, return_exceptions=True)
			for t in done:
				e = t.exception()
				if e and not isinstance(e, (ConnectionError, OSError)):
					raise e
		except (ConnectionError, OSError) as e:
			if swriter is None:
				print(f"relay.py: {self.target[0]}:{self.target[1]}: "
				      f"{e.strerror or e}", file=sys.stderr)
		except asyncio.CancelledError:
			pass	# shutting down; a cancelled handler would be logged
		finally:
			for t in tasks:
				t.cancel()
			await asyncio.gather(*tasks, return_exceptions=True)
			for w in (cwriter, swriter):
				if w is not None:
					w.close()
			self.conns.discard(task)


async def main():
	ap = argparse.ArgumentParser(
		description="TCP relay adding DELAY_MS to every round trip")
	ap.add_argument("--connect-rtt", action="store_true",
			help="charge one DELAY_MS for each new connection")
	ap.add_argument("listen", type=hostport, metavar="LISTEN_HOST:PORT")
	ap.add_argument("target", type=hostport, metavar="TARGET_HOST:PORT")
	ap.add_argument("delay", type=delay_ms, metavar="DELAY_MS")
	args = ap.parse_args()

	relay = Relay(args.target, args.delay / 1000, args.connect_rtt)
	loop = asyncio.get_running_loop()
	stop = asyncio.Event()
	for sig in (signal.SIGTERM, signal.SIGINT):
		loop.add_signal_handler(sig, stop.set)
	try:
		server = await asyncio.start_server(relay.handle, *args.listen,
						    reuse_address=True,
						    backlog=1024)
	except OSError as e:
		print(f"relay.py: listen {args.listen[0]}:{args.listen[1]}: "
		      f"{e.strerror or e}", file=sys.stderr)
		return 71
	print("ready", flush=True)
	await stop.wait()
	server.close()
	for t in list(relay.conns):
		t.cancel()
	await asyncio.gather(*relay.conns, return_exceptions=True)
	await server.wait_closed()
	return 0


if __name__ == "__main__":
	sys.exit(asyncio.run(main()))
