#!/usr/bin/env python3
"""servercost.py (W6): the Redis server time one lock cycle costs.

One `dlock K true` against redis-py's Lock (SET NX PX, then its
compare-and-delete script), acquire plus release, as the server counts it:
INFO commandstats after CONFIG RESETSTAT, the usec of the commands the
client sent (a script's own calls are inside its EVALSHA's time, and
counted again under their own names: those are shown apart, as where the
time goes).  Two ways, interleaved round by round, the order rotating:

  process  a new process per cycle, as a shell script runs it: ROUNDS x
           CYCLES `dlock -S unix:SOCK w6 true`, and as many
           `python3 -c 'with redis.Redis(...).lock(...): call(true)'`.
           The server sleeps between cycles, so its caches are cold: on a
           small shared VM this costs more than the work itself.
  warm     one client, back to back: dlock's own EVALSHAs replayed (the
           acquire and release dlock sent, captured by MONITOR from one
           `dlock K true`, a new token each cycle) against the floor, a
           hand-written pair of scripts that makes the same durable writes
           (holder info, fence, an event each way in the history, the
           compare-and-delete) and refreshes the same TTLs, and against
           redis-py's Lock.acquire() + release() on one connection: what a
           busy server pays per cycle. The target: dlock <= 1.2x the floor.

Then, with PROFILE=1 (the default), where dlock's time goes: the acquire
and the release script each timed alone (the other half of the cycle done
by plain commands, not counted), warm, the script as dlock sends it and
modified copies, one change each (a part stripped, or done another way),
plus a "lean" prototype of both that keeps every feature; each variant's
body is derived from the body dlock sent, so a change that no longer
applies is shown as n/a.  The tree's scripts are not touched.

Environment: DLOCK (default ./build/dlock), ROUNDS (9), CYCLES (100 per
round and tool, process way), WARM_CYCLES (2000), PROFILE (1; 0 skips it),
PROFILE_ROUNDS (7), PROFILE_CYCLES (400), CSV (a file to append the results
to, as the other benchmarks do: see README.md), MAX_SECONDS (0; else fewer
rounds when more would take longer: 70 % of it for the comparison, the
rest for the profile).  Needs redis-py (Debian's
python3-redis: re-runs itself with /usr/bin/python3 if this python3 lacks
it).  Starts its own redis-server on a unix socket in a temp dir (--save
'', no AOF) and stops it, whatever happens.
"""

import csv
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

try:
	import redis
except ImportError:
	if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
		os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
	sys.exit("servercost.py: no redis-py (apt-get install python3-redis)")


def env_int(name, default):
	v = os.environ.get(name, str(default))
	if not v.isdigit():
		sys.exit(f"servercost.py: bad {name} '{v}'")
	return int(v)


DLOCK = os.path.realpath(os.environ.get("DLOCK", "./build/dlock"))
ROUNDS = env_int("ROUNDS", 9)
CYCLES = env_int("CYCLES", 100)
WARM_CYCLES = env_int("WARM_CYCLES", 2000)
PROFILE = env_int("PROFILE", 1)
PROFILE_ROUNDS = env_int("PROFILE_ROUNDS", 7)
PROFILE_CYCLES = env_int("PROFILE_CYCLES", 400)
MAX_SECONDS = env_int("MAX_SECONDS", 0)
CSV = os.environ.get("CSV", "")
for k in ("DLOCK_SERVERS", "DLOCK_PASSWORD", "DLOCK_PREFIX", "DLOCK_KEY",
	  "DLOCK_TOKEN", "DLOCK_FENCE"):
	os.environ.pop(k, None)


def die(msg):
	sys.exit(f"servercost.py: {msg}")


def note(msg):
	print(f"servercost.py: {msg}", file=sys.stderr, flush=True)


if not os.access(DLOCK, os.X_OK):
	die(f"no dlock binary at '{DLOCK}' (set DLOCK=path)")
for c in ("redis-server", "redis-cli"):
	if not shutil.which(c):
		die(f"{c} not found")

# --- the server -----------------------------------------------------------
T = tempfile.mkdtemp(prefix="dlock-servercost.")
SOCK = os.path.join(T, "redis.sock")
server = None
monitor = None


def cleanup():
	for p in (monitor, server):
		if p and p.poll() is None:
			p.terminate()
			try:
				p.wait(5)
			except subprocess.TimeoutExpired:
				p.kill()
				p.wait()
	shutil.rmtree(T, ignore_errors=True)


def on_signal(signum, _frame):
	sys.exit(128 + signum)


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)

try:
	server = subprocess.Popen(
		["redis-server", "--port", "0", "--unixsocket", SOCK, "--dir", T,
		 "--save", "", "--appendonly", "no"],
		stdout=open(os.path.join(T, "redis.log"), "w"), stderr=subprocess.STDOUT)
	r = redis.Redis(unix_socket_path=SOCK)
	for _ in range(100):
		try:
			r.ping()
			break
		except (redis.ConnectionError, FileNotFoundError):
			time.sleep(0.05)
	else:
		die("redis-server did not start")
	REDIS_VERSION = r.info("server")["redis_version"]
except BaseException:
	cleanup()
	raise


def stats():
	"""INFO commandstats -> {command: (calls, usec)}"""
	out = {}
	for k, v in r.info("commandstats").items():
		out[k.removeprefix("cmdstat_")] = (v["calls"], v["usec"])
	return out


# --- what dlock sends -------------------------------------------------------
def unrepr(s):
	"""A MONITOR line's quoted arguments (sdscatrepr) -> [bytes]"""
	args, i = [], 0
	esc = {"n": b"\n", "r": b"\r", "t": b"\t", "a": b"\a", "b": b"\b",
	       "\\": b"\\", '"': b'"'}
	while i < len(s):
		if s[i] != '"':
			i += 1
			continue
		i += 1
		b = bytearray()
		while s[i] != '"':
			if s[i] == "\\":
				if s[i + 1] == "x":
					b.append(int(s[i + 2:i + 4], 16))
					i += 4
				else:
					b += esc[s[i + 1]]
					i += 2
			else:
				b += s[i].encode("latin-1")
				i += 1
		args.append(bytes(b))
		i += 1
	return args


def capture():
	"""One `dlock K true` on an empty script cache, watched by MONITOR:
	[(command, args)] it sent, calls made by scripts left out."""
	global monitor
	r.script_flush()
	monitor = subprocess.Popen(["redis-cli", "-s", SOCK, "monitor"],
				   stdout=subprocess.PIPE)
	monitor.stdout.readline()	# OK
	subprocess.run([DLOCK, "-S", "unix:" + SOCK, "w6cap", "true"], check=True,
		       stdin=subprocess.DEVNULL)
	r.ping()	# the last line MONITOR shows: all before it is in
	lines = []
	for raw in monitor.stdout:
		line = raw.decode("latin-1").rstrip("\n")
		m = re.match(r'^[\d.]+ \[\d+ ([^\]]+)\] (.*)$', line)
		if not m:
			continue
		a = unrepr(m.group(2))
		if a[0].upper() == b"PING" and m.group(1) != "lua":
			break
		if m.group(1) != "lua":
			lines.append(a)
	monitor.terminate()
	monitor.wait()
	monitor = None
	return lines


sent = capture()
evalshas = [a for a in sent if a[0].upper() == b"EVALSHA"]
evals = [a for a in sent if a[0].upper() == b"EVAL"]
if len(evalshas) != 2 or len(evals) != 2:
	die("expected dlock K true to send 2 EVALSHA (acquire, release), each "
	    f"followed by EVAL on an empty cache; it sent {[a[0] for a in sent]}")
DLOCK_TOP = sorted({a[0].decode().lower() for a in sent if a[0].upper() != b"EVAL"})


class Script:
	"""One of dlock's scripts as sent: body, KEYS, ARGV (token at ARGV[1])"""

	def __init__(self, sha_call, eval_call):
		n = int(sha_call[2])
		self.body = eval_call[1].decode("latin-1")
		self.keys = [k.decode("latin-1") for k in sha_call[3:3 + n]]
		self.argv = list(sha_call[3 + n:])
		self.token = self.argv[0]

	def args(self, token):
		return [token if a == self.token else a for a in self.argv]

	def key(self, suffix):
		for k in self.keys:
			if k.endswith(suffix):
				return k
		return None


ACQ = Script(evalshas[0], evals[0])
REL = Script(evalshas[1], evals[1])
ACQ.name, REL.name = "acquire", "release"
LOCK_KEY = ACQ.keys[0]
OWNER_KEY = ACQ.key(":owner")
if REL.keys[0] != LOCK_KEY:
	die("acquire and release name different locks?")


def new_token():
	return os.urandom(16).hex().encode()


# --- process way ----------------------------------------------------------
PYLOCK = """import subprocess, sys, redis
r = redis.Redis(unix_socket_path=sys.argv[1])
with r.lock("dlock:w6-py", timeout=30):
    rc = subprocess.call(sys.argv[2:])
sys.exit(rc)"""
PY = sys.executable
PY_TOP = ["set", "evalsha", "eval", "script|load"]
TRUE = shutil.which("true")
TOOLS = {
	"dlock": ([DLOCK, "-S", "unix:" + SOCK, "w6", TRUE], DLOCK_TOP),
	"redis-py": ([PY, "-c", PYLOCK, SOCK, TRUE], PY_TOP),
}


def tally(before, top, cycles):
	"""(top-level usec per cycle, {inner command: usec per cycle})"""
	after = stats()
	d = {k: v[1] - before.get(k, (0, 0))[1] for k, v in after.items()}

	def sent(k):	# "client|setname" is what "client" sent
		return k in top or k.split("|")[0] in top
	top_us = sum(v for k, v in d.items() if sent(k)) / cycles
	inner = {k: v / cycles for k, v in d.items()
		 if not sent(k) and not k.startswith(("config", "info"))}
	return top_us, inner


def process_batch(tool):
	cmd, top = TOOLS[tool]
	r.config_resetstat()
	before = stats()
	fails = 0
	for _ in range(CYCLES):
		if subprocess.run(cmd, stdin=subprocess.DEVNULL,
				  stdout=subprocess.DEVNULL).returncode != 0:
			fails += 1
	top_us, inner = tally(before, top, CYCLES)
	return top_us, inner, fails


# --- warm way ---------------------------------------------------------------
def warm_dlock(n, acq_sha, rel_sha):
	for _ in range(n):
		tok = new_token()
		r.execute_command("EVALSHA", acq_sha, len(ACQ.keys), *ACQ.keys, *ACQ.args(tok))
		r.execute_command("EVALSHA", rel_sha, len(REL.keys), *REL.keys, *REL.args(tok))


def warm_redispy(n):
	for _ in range(n):
		lk = r.lock("dlock:w6-py", timeout=30)
		if not lk.acquire(blocking=False):
			die("redis-py could not take a free lock")
		lk.release()


# The floor: what dlock's cycle must write, in the fewest calls, by hand.
# Acquire: SET NX PX; the fence (INCR, and its day); the holder info in a
# hash (and its lease); an "acquired" event in a stream trimmed by whole
# nodes (and its week). Release: compare-and-delete, the holder info's
# HDEL, a "released" event (and its week). Every TTL dlock keeps is kept
# (the refreshes are most of the difference to the floor without them).
FLOOR_ACQUIRE = """if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0}
end
local f = redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], 86400000)
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3] .. '\\t' .. f)
redis.call('PEXPIRE', KEYS[3], ARGV[2])
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[4], '*', 'event', 'acquired',
  'token', ARGV[1], 'holder', ARGV[3], 'fence', f)
redis.call('PEXPIRE', KEYS[4], 604800000)
return {1, f}
"""
FLOOR_RELEASE = """if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', 'event', 'released',
  'token', ARGV[1], 'holder', ARGV[3], 'fence', ARGV[4], 'exit', '0',
  'held_ms', '1')
redis.call('PEXPIRE', KEYS[3], 604800000)
return 1
"""
FLOOR_KEYS = ["dlock:w6-floor", "{dlock:w6-floor}:fence", "{dlock:w6-floor}:owner",
	      "{dlock:w6-floor}:history"]


def warm_floor(n, shas):
	acq, rel = shas
	info = ACQ.argv[3]
	for _ in range(n):
		tok = new_token()
		f = r.execute_command("EVALSHA", acq, 4, *FLOOR_KEYS, tok, 30000, info, 100)[1]
		r.execute_command("EVALSHA", rel, 3, FLOOR_KEYS[0], FLOOR_KEYS[2],
				  FLOOR_KEYS[3], tok, 100, info, f)


def warm_batch(tool, n, acq_sha=None, rel_sha=None, floor_shas=None):
	r.config_resetstat()
	before = stats()
	if tool == "dlock":
		warm_dlock(n, acq_sha, rel_sha)
		top = ["evalsha"]
	elif tool == "floor":
		warm_floor(n, floor_shas)
		top = ["evalsha"]
	else:
		warm_redispy(n)
		top = PY_TOP
	return tally(before, top, n)


# --- profile: each script alone, and modified copies ------------------------
def call_script(ref, script, tok):
	"""one call of a loaded variant: ref is ("evalsha", sha) or ("fcall", name)"""
	kind, name = ref
	r.execute_command(kind.upper(), name, len(script.keys), *script.keys,
			  *script.args(tok))


def used(ref, before):
	return stats().get(ref[0], (0, 0))[1] - before.get(ref[0], (0, 0))[1]


def acquire_alone(ref, n):
	"""n acquires; each lock freed by plain commands, not counted"""
	r.config_resetstat()
	before = stats()
	p = r.pipeline(transaction=False)
	for _ in range(n):
		tok = new_token()
		call_script(ref, ACQ, tok)
		p.delete(LOCK_KEY)
		if OWNER_KEY:
			p.hdel(OWNER_KEY, tok)
		p.execute()
	return used(ref, before) / n


def release_alone(ref, n):
	"""n releases; each lock taken by plain commands, as the acquire
	script leaves it (the lock, the holder's info), not counted"""
	info = ACQ.argv[3] + b"\t1"
	r.config_resetstat()
	before = stats()
	p = r.pipeline(transaction=False)
	for _ in range(n):
		tok = new_token()
		p.set(LOCK_KEY, tok, px=30000)
		if OWNER_KEY:
			p.hset(OWNER_KEY, tok, info)
			p.pexpire(OWNER_KEY, 30000)
		p.execute()
		call_script(ref, REL, tok)
	return used(ref, before) / n


def sub(*pairs):
	"""a variant: replace each old text by new, once; None if one is gone"""
	def f(body):
		for old, new in pairs:
			if old not in body:
				return None
			body = body.replace(old, new, 1)
		return body
	return f


def whole(text):
	return lambda _body: text


def as_function(make):
	"""the same body as a Redis 7 function, called by FCALL"""
	def f(body):
		return ("fcall", make(body))
	return f


def prepend(text):
	return lambda body: text + body


# The exclusive fast path with nothing but what a free lock needs, in front
# of the unchanged script (which still serves every other case): no closures
# made, waiters' entries removed only by a caller that was refused before
# (a new ARGV[11], '1' then; the prototype runs as a first try), the history
# trimmed by whole stream nodes (MAXLEN ~: at least N events kept, not
# exactly N).  Holder info, fence (and its day), history (and its week)
# stay as they are.
LEAN_ACQUIRE = """if ARGV[5] == 'x' and ARGV[6] == '' and
    redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local n = redis.call('INCR', KEYS[2])
  if n == 1 then
    local t = redis.call('TIME')
    redis.call('SET', KEYS[2], t[1] .. string.rep('0', 6 - #t[2]) .. t[2])
    n = redis.call('INCR', KEYS[2])
  end
  redis.call('PEXPIRE', KEYS[2], 86400000)
  local f = string.format('%d', n)
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[4] .. '\\t' .. f)
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  if ARGV[11] == '1' then
    redis.call('ZREM', KEYS[6], ARGV[1])
    redis.call('ZREM', KEYS[9], ARGV[1])
  end
  if ARGV[10] ~= '0' then
    redis.call('XADD', KEYS[10], 'MAXLEN', '~', ARGV[10], '*', 'event', 'acquired',
      'token', ARGV[1], 'holder', ARGV[4], 'fence', f)
    redis.call('PEXPIRE', KEYS[10], 604800000)
  end
  return {1, n}
end
"""
# The release of an exclusive holder whose job ended: a string holding our
# token can have no --limit slot (slots are for sorted-set locks), so no
# HGET of the slots, no TYPE (a GET of a sorted set is an error: pcall, and
# the full script handles it), TIME only when someone waits (wake() wants
# it for writers).  Waiters woken, holder info removed, history written as
# before.
LEAN_RELEASE = """if ARGV[3] == 'job' then
  local v = redis.pcall('GET', KEYS[1])
  if v == ARGV[1] then
    redis.call('DEL', KEYS[1])
    redis.call('HDEL', KEYS[2], ARGV[1])
    if redis.call('ZCARD', KEYS[7]) > 0 then
      local t = redis.call('TIME')
      local now = t[1] * 1000 + math.floor(t[2] / 1000)
      local head = redis.call('ZRANGEBYSCORE', KEYS[8], '(' .. now, '+inf', 'LIMIT', 0, 1)
      if #head == 0 then head = redis.call('ZRANGE', KEYS[5], 0, 0) end
      local list = KEYS[6]
      if #head > 0 then list = list .. ':' .. head[1] end
      redis.call('LPUSH', list, '1')
      redis.call('LTRIM', list, 0, 0)
      redis.call('PEXPIRE', list, 2000)
    end
    if ARGV[2] ~= '0' then
      redis.call('XADD', KEYS[9], 'MAXLEN', '~', ARGV[2], '*', 'event', 'released',
        'token', ARGV[1], 'holder', ARGV[7], 'fence', ARGV[6], 'exit', ARGV[4],
        'held_ms', ARGV[5])
      redis.call('PEXPIRE', KEYS[9], 604800000)
    end
    return 1
  end
end
"""


def edit(text, *pairs):
	"""text with each old replaced by new (these are ours: must apply)"""
	for old, new in pairs:
		assert old in text, old
		text = text.replace(old, new, 1)
	return text


# Further steps, each keeping the feature in another form (see README.md):
LEAN_HOLDER = ("  redis.call('HSET', KEYS[3], ARGV[1], ARGV[4] .. '\\t' .. f)\n"
	       "  redis.call('PEXPIRE', KEYS[3], ARGV[2])\n", "")
LEAN_ACQ_LIST = (
	"    redis.call('XADD', KEYS[10], 'MAXLEN', '~', ARGV[10], '*', 'event', 'acquired',\n"
	"      'token', ARGV[1], 'holder', ARGV[4], 'fence', f)\n"
	"    redis.call('PEXPIRE', KEYS[10], 604800000)\n",
	"    local h = KEYS[10] .. ':list'\n"
	"    redis.call('LPUSH', h, 'acquired\\t' .. ARGV[1] .. '\\t' .. ARGV[4] .. '\\t' .. f)\n"
	"    redis.call('LTRIM', h, 0, tonumber(ARGV[10]) - 1)\n"
	"    redis.call('PEXPIRE', h, 604800000)\n")
LEAN_ACQ_NOHIST = (
	"  if ARGV[10] ~= '0' then\n", "  if false then\n")
LEAN_REL_HDEL = ("    redis.call('HDEL', KEYS[2], ARGV[1])\n", "")
LEAN_REL_LIST = (
	"      redis.call('XADD', KEYS[9], 'MAXLEN', '~', ARGV[2], '*', 'event', 'released',\n"
	"        'token', ARGV[1], 'holder', ARGV[7], 'fence', ARGV[6], 'exit', ARGV[4],\n"
	"        'held_ms', ARGV[5])\n"
	"      redis.call('PEXPIRE', KEYS[9], 604800000)\n",
	"      local h = KEYS[9] .. ':list'\n"
	"      redis.call('LPUSH', h, table.concat({'released', ARGV[1], ARGV[7], ARGV[6],\n"
	"        ARGV[4], ARGV[5]}, '\\t'))\n"
	"      redis.call('LTRIM', h, 0, tonumber(ARGV[2]) - 1)\n"
	"      redis.call('PEXPIRE', h, 604800000)\n")
LEAN_REL_NOMK = (
	"      redis.call('XADD', KEYS[9], 'MAXLEN', '~', ARGV[2], '*', 'event', 'released',\n",
	"      redis.call('XADD', KEYS[9], 'NOMKSTREAM', 'MAXLEN', '~', ARGV[2], '*', 'event', 'released',\n")
LEAN_REL_NOMK_PEXPIRE = ("      redis.call('PEXPIRE', KEYS[9], 604800000)\n", "")

CAD = """local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
    return 0
end
redis.call('del', KEYS[1])
return 1
"""
TIME_LINES = ("local t = redis.call('TIME')\n"
	      "local now = t[1] * 1000 + math.floor(t[2] / 1000)\n")

ACQ_VARIANTS = [
	("as dlock sends it", lambda b: b),
	("floor: return {1, 0}", whole("return {1, 0}\n")),
	("floor: SET NX PX only", whole(
		"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, 0} end\n"
		"return {0}\n")),
	("- Redis 6 check (redis.setresp)", sub((
		"if not redis.setresp then\n"
		"  return redis.error_reply('DLOCKVERSION Redis 6.0 or later is needed')\n"
		"end\n", ""))),
	("- ZREM x2 (waiters, writers)", sub((
		"  redis.call('ZREM', KEYS[6], ARGV[1])\n"
		"  redis.call('ZREM', KEYS[9], ARGV[1])\n"
		"  record(", "  record("))),
	("- fence PEXPIRE", sub(("  redis.call('PEXPIRE', KEYS[2], 86400000)\n", ""))),
	("- holder info HSET+PEXPIRE", sub((
		"  redis.call('HSET', KEYS[3], ARGV[1], ARGV[4] .. '\\t' .. digits(n))\n"
		"  redis.call('PEXPIRE', KEYS[3], ARGV[2])\n", ""))),
	("- history PEXPIRE", sub(("  redis.call('PEXPIRE', KEYS[10], 604800000)\n", ""))),
	("- history (XADD+PEXPIRE)", sub(("if ARGV[10] == '0' then return end", "do return end"))),
	("XADD MAXLEN ~ (not exact)", sub(("'MAXLEN', ARGV[10], '*'", "'MAXLEN', '~', ARGV[10], '*'"))),
	("fast path first (no closures)", prepend(LEAN_ACQUIRE.replace(
		"'MAXLEN', '~', ARGV[10]", "'MAXLEN', ARGV[10]").replace(
		"if ARGV[11] == '1' then", "if true then"))),
	("lean: fast path, ZREM if refused, MAXLEN ~", prepend(LEAN_ACQUIRE)),
	("as sent, as a FUNCTION (FCALL)", as_function(lambda b: b)),
	("lean, as a FUNCTION (FCALL)", as_function(prepend(LEAN_ACQUIRE))),
	("lean - holder info writes (P2)", prepend(edit(LEAN_ACQUIRE, LEAN_HOLDER))),
	("lean, history a capped list (P3)", prepend(edit(LEAN_ACQUIRE, LEAN_ACQ_LIST))),
	("lean - history event (P4, P6)", prepend(edit(LEAN_ACQUIRE, LEAN_ACQ_NOHIST))),
	# What a call costs: the floor, and the floor with 8 more calls.
	("cost of a call: floor + 8 x GET", whole(
		"for i = 1, 8 do redis.call('GET', KEYS[2]) end\nreturn {1, 0}\n")),
	("cost of a call: floor + 8 x PEXPIRE", whole(
		"for i = 1, 8 do redis.call('PEXPIRE', KEYS[2], 86400000) end\nreturn {1, 0}\n")),
	("cost of a call: floor + 8 x ZREM (absent)", whole(
		"for i = 1, 8 do redis.call('ZREM', KEYS[6], ARGV[1]) end\nreturn {1, 0}\n")),
	("size: return at the top of the sent body", lambda b: "do return {1, 0} end\n" + b),
]
REL_VARIANTS = [
	("as dlock sends it", lambda b: b),
	("floor: return 1", whole("return 1\n")),
	("floor: redis-py's compare-and-delete", whole(CAD)),
	("- TIME", sub((TIME_LINES, "local now = 0\n"))),
	("- slots HGET", sub(("local slot = redis.call('HGET', KEYS[4], token)\n",
			      "local slot = nil\n"))),
	("- TYPE", sub(("local kind = redis.call('TYPE', KEYS[1]).ok\n",
			"local kind = 'string'\n"))),
	("- wake (ZCARD waiters)", sub((
		"if ours then wake(KEYS[5], KEYS[6], KEYS[7], KEYS[8], now) end\n", ""))),
	("- holder info HDEL", sub(("redis.call('HDEL', KEYS[2], token)\n", ""))),
	("- history PEXPIRE", sub(("  redis.call('PEXPIRE', KEYS[9], 604800000)\n", ""))),
	("- history (XADD+PEXPIRE)", sub(("if ARGV[2] == '0' then\n", "if true then\n"))),
	("XADD MAXLEN ~ (not exact)", sub(("'MAXLEN', ARGV[2], '*'", "'MAXLEN', '~', ARGV[2], '*'"))),
	("fast path first, MAXLEN exact", prepend(LEAN_RELEASE.replace(
		"'MAXLEN', '~', ARGV[2]", "'MAXLEN', ARGV[2]"))),
	("lean: fast path, MAXLEN ~", prepend(LEAN_RELEASE)),
	("as sent, as a FUNCTION (FCALL)", as_function(lambda b: b)),
	("lean, as a FUNCTION (FCALL)", as_function(prepend(LEAN_RELEASE))),
	("lean - holder info HDEL (P2)", prepend(edit(LEAN_RELEASE, LEAN_REL_HDEL))),
	("lean, history a capped list (P3)", prepend(edit(LEAN_RELEASE, LEAN_REL_LIST))),
	("lean, XADD NOMKSTREAM, no PEXPIRE", prepend(edit(LEAN_RELEASE, LEAN_REL_NOMK,
								LEAN_REL_NOMK_PEXPIRE))),
	("lean - HDEL, NOMKSTREAM, no PEXPIRE (P5)", prepend(edit(
		LEAN_RELEASE, LEAN_REL_HDEL, LEAN_REL_NOMK, LEAN_REL_NOMK_PEXPIRE))),
	("lean - history event (P6: --history 0)", prepend(edit(LEAN_RELEASE, (
		"    if ARGV[2] ~= '0' then\n", "    if false then\n")))),
]
# What a whole cycle would cost: (name, acquire variant, release variant)
PROPOSALS = [
	("as sent", "as dlock sends it", "as dlock sends it"),
	("P1 lean fast paths", "lean: fast path, ZREM if refused, MAXLEN ~",
	 "lean: fast path, MAXLEN ~"),
	("P2 P1 + holder info only in the history", "lean - holder info writes (P2)",
	 "lean - holder info HDEL (P2)"),
	("P3 P1 + history a capped list", "lean, history a capped list (P3)",
	 "lean, history a capped list (P3)"),
	("P4 P1 + one history event a cycle", "lean - history event (P4, P6)",
	 "lean: fast path, MAXLEN ~"),
	("P5 P2 + release XADD NOMKSTREAM, no PEXPIRE", "lean - holder info writes (P2)",
	 "lean - HDEL, NOMKSTREAM, no PEXPIRE (P5)"),
	("P6 P1 with --history 0 (no history)", "lean - history event (P4, P6)",
	 "lean - history event (P6: --history 0)"),
	("floors: SET NX PX script + compare-and-delete", "floor: SET NX PX only",
	 "floor: redis-py's compare-and-delete"),
]


def variant_bodies(script, variants):
	"""[(name, body or None)]; a function's body is ("fcall", text)"""
	return [(name, make(script.body)) for name, make in variants]


def load(body):
	"""Loads one variant into an empty script cache and function library
	(a new Lua VM each: earlier variants' garbage and code are not its
	cost): ("evalsha", sha) or ("fcall", name), or None (no FUNCTION)."""
	r.script_flush()
	try:
		r.function_flush()
	except redis.ResponseError:	# before Redis 7
		pass
	if not isinstance(body, tuple):
		return ("evalsha", r.script_load(body))
	try:
		r.function_load("#!lua name=w6\n"
				"redis.register_function('w6', function(KEYS, ARGV)\n"
				f"{body[1]}\nend)\n")
	except redis.ResponseError:
		return None
	return ("fcall", "w6")


# --- the runs ---------------------------------------------------------------
def med(v):
	return statistics.median(v) if v else float("nan")


def csv_row(*fields):
	if CSV:
		with open(CSV, "a", newline="") as f:
			csv.writer(f, lineterminator="\n").writerow(fields)


try:
	note(f"redis {REDIS_VERSION}; dlock sends {', '.join(DLOCK_TOP)}; "
	     f"acquire {len(ACQ.body)} bytes, {len(ACQ.keys)} KEYS; "
	     f"release {len(REL.body)} bytes, {len(REL.keys)} KEYS")
	for cmd, _ in TOOLS.values():	# check, and warm the script cache
		if subprocess.run(cmd, stdin=subprocess.DEVNULL).returncode != 0:
			die(f"'{' '.join(cmd)}' failed")
	if r.exists(LOCK_KEY, "dlock:w6", "dlock:w6-py"):
		die("a lock key is still there after its holder exited")
	acq_sha = r.script_load(ACQ.body)
	rel_sha = r.script_load(REL.body)
	floor_shas = (r.script_load(FLOOR_ACQUIRE), r.script_load(FLOOR_RELEASE))

	note(f"{ROUNDS} rounds x 2 tools x {CYCLES} processes, and x 3 x {WARM_CYCLES} "
	     f"warm cycles, interleaved ...")
	t_start = time.monotonic()
	res = {}	# (way, tool) -> [per-round values]; way: process, warm
	inner = {}	# (way, tool) -> {command: [per-round usec per cycle]}
	ratios = {"process": [], "warm": []}
	floor_ratios = []	# warm: dlock / the floor, round by round
	fails = {"dlock": 0, "redis-py": 0}
	names = ["dlock", "redis-py"]
	warm_names = ["dlock", "floor", "redis-py"]

	def over_budget(start, done, share):
		"""one more round, as long as the average, would end past share
		of MAX_SECONDS since t_start"""
		if not MAX_SECONDS or not done:
			return False
		now = time.monotonic()
		return now - t_start + (now - start) / done > share * MAX_SECONDS

	for rnd in range(ROUNDS):
		if over_budget(t_start, rnd, 0.7):
			note(f"MAX_SECONDS ({MAX_SECONDS}) near: {rnd} rounds, not {ROUNDS}")
			ROUNDS = rnd
			break
		got = {}
		for k in range(2):
			tool = names[(rnd + k) % 2]
			top, inn, f = process_batch(tool)
			fails[tool] += f
			got[("process", tool)] = top
			res.setdefault(("process", tool), []).append(top)
			for c, v in inn.items():
				inner.setdefault(("process", tool), {}).setdefault(c, []).append(v)
		for k in range(3):
			tool = warm_names[(rnd + k) % 3]
			top, inn = warm_batch(tool, WARM_CYCLES, acq_sha, rel_sha, floor_shas)
			got[("warm", tool)] = top
			res.setdefault(("warm", tool), []).append(top)
			for c, v in inn.items():
				inner.setdefault(("warm", tool), {}).setdefault(c, []).append(v)
		for way in ratios:
			ratios[way].append(got[(way, "dlock")] / got[(way, "redis-py")])
		floor_ratios.append(got[("warm", "dlock")] / got[("warm", "floor")])
	elapsed = time.monotonic() - t_start

	print()
	print(f"dlock server cost per lock cycle (W6): redis {REDIS_VERSION}, unix socket, "
	      f"{ROUNDS} interleaved rounds in {elapsed:.0f}s; {os.cpu_count()} CPUs")
	print("usec of server time per acquire+release cycle (INFO commandstats; "
	      "the commands each client sent, scripts' own calls inside them)")
	print(f"{'way':8} {'tool':9} {'cycles':>7} {'median':>8} {'min':>8} {'max':>8} "
	      f"{'x redis-py':>10} {'x floor':>8}   inner calls, usec/cycle")
	for way, cycles in (("process", CYCLES), ("warm", WARM_CYCLES)):
		for tool in names if way == "process" else warm_names:
			v = res[(way, tool)]
			x = f"{med(ratios[way]):10.2f}" if tool == "dlock" else f"{'':10}"
			x += f" {med(floor_ratios):8.2f}" if tool == "dlock" and way == "warm" \
				else f" {'':8}"
			inn = inner.get((way, tool), {})
			calls = " ".join(f"{c} {med(vs):.1f}" for c, vs in
					 sorted(inn.items(), key=lambda kv: -med(kv[1])) if med(vs) > 0)
			print(f"{way:8} {tool:9} {cycles * len(v):7d} {med(v):8.1f} {min(v):8.1f} "
			      f"{max(v):8.1f} {x}   {calls}")
			csv_row("W6", f"{way}: server usec per cycle",
				"floor (same writes)" if tool == "floor" else tool, "server time",
				"us", cycles * len(v), f"{med(v):.2f}", f"{min(v):.2f}", f"{max(v):.2f}")
		csv_row("W6", f"{way}: server usec per cycle", "dlock", "x redis-py (interleaved)",
			"ratio", len(ratios[way]), f"{med(ratios[way]):.2f}",
			f"{min(ratios[way]):.2f}", f"{max(ratios[way]):.2f}")
	csv_row("W6", "warm: server usec per cycle", "dlock", "x floor (interleaved)",
		"ratio", len(floor_ratios), f"{med(floor_ratios):.2f}",
		f"{min(floor_ratios):.2f}", f"{max(floor_ratios):.2f}")
	print("x redis-py, x floor: median over rounds of dlock / that tool in the same round")
	print(f"W6: dlock's warm cycle is {med(floor_ratios):.2f}x the floor "
	      f"(target <= 1.2; rounds {min(floor_ratios):.2f}..{max(floor_ratios):.2f})")
	if any(fails.values()):
		print("FAILED cycles:", fails)

	if PROFILE:
		acqs = variant_bodies(ACQ, ACQ_VARIANTS)
		rels = variant_bodies(REL, REL_VARIANTS)
		note(f"profile: {len(acqs)} acquire and {len(rels)} release variants x "
		     f"{PROFILE_ROUNDS} rounds x {PROFILE_CYCLES} calls, interleaved ...")
		prof = {}
		broken = set()
		p_start = time.monotonic()
		for rnd in range(PROFILE_ROUNDS):
			if over_budget(p_start, rnd, 1.0):
				note(f"MAX_SECONDS ({MAX_SECONDS}) near: {rnd} profile rounds, "
				     f"not {PROFILE_ROUNDS}")
				PROFILE_ROUNDS = rnd
				break
			for what, vs, fn in (("acquire", acqs, acquire_alone),
					     ("release", rels, release_alone)):
				for k in range(len(vs)):
					name, body = vs[(rnd + k) % len(vs)]
					ref = load(body) if body is not None else None
					if not ref or (what, name) in broken:
						continue
					# a variant written for another shape of the
					# script (its KEYS, its ARGV) fails: n/a
					try:
						v = fn(ref, PROFILE_CYCLES)
					except redis.ResponseError as e:
						broken.add((what, name))
						r.delete(LOCK_KEY)
						note(f"profile: {what} '{name}' does not apply: {e}")
						continue
					prof.setdefault((what, name), []).append(v)
		for (what, name), v in prof.items():
			csv_row("W6 profile", what, name, "usec per call", "us",
				len(v) * PROFILE_CYCLES, f"{med(v):.2f}", f"{min(v):.2f}",
				f"{max(v):.2f}")
		print()
		print(f"where the time goes: each script alone, warm, usec per call (median "
		      f"of {PROFILE_ROUNDS} rounds x {PROFILE_CYCLES} calls, min..max); "
		      "modified copies of the body dlock sent")
		for what, vs in (("acquire", acqs), ("release", rels)):
			base = prof.get((what, vs[0][0]), [])
			print(f"{what:44} {'median':>7} {'min':>7} {'max':>7} {'-sent med':>9} {'min':>6}")
			for name, _ in vs:
				if (what, name) not in prof:
					print(f"  {name:42} {'n/a (change no longer applies)':>31}")
					continue
				v = prof[(what, name)]
				print(f"  {name:42} {med(v):7.1f} {min(v):7.1f} {max(v):7.1f} "
				      f"{med(v) - med(base):+9.1f} {min(v) - min(base):+6.1f}")
		py = med(res[("warm", "redis-py")])
		print()
		print(f"a whole cycle, acquire + release medians above, against redis-py's warm "
		      f"cycle ({py:.1f} usec):")
		for name, a, rl in PROPOSALS:
			if ("acquire", a) not in prof or ("release", rl) not in prof:
				print(f"  {name:46} n/a")
				continue
			c = med(prof[("acquire", a)]) + med(prof[("release", rl)])
			print(f"  {name:46} {c:6.1f} usec  {c / py:5.2f}x redis-py")
			csv_row("W6 profile", "cycle", name, "usec per cycle", "us", "",
				f"{c:.2f}", "", "")
			csv_row("W6 profile", "cycle", name, "x redis-py warm", "ratio", "",
				f"{c / py:.2f}", "", "")
finally:
	cleanup()
