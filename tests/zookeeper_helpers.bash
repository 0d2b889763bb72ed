# zookeeper_helpers.bash - ZooKeeper 3.8 servers for tests/zookeeper.bats:
# Debian's zookeeper package run as a plain JVM (no service), in the test
# file's temp dir, on free ports, stopped by PID in teardown_file; and
# kazoo (python3-kazoo), the other client that takes the same locks.

ZK_DIR=${BATS_FILE_TMPDIR:-/nonexistent}/zk
ZK_CP=/usr/share/java/zookeeper.jar	# its manifest names its dependencies
# small and quick to start: these servers hold a few hundred nodes
ZK_JAVA_OPTS=(-Xms32m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
	-Dzookeeper.admin.enableServer=false)

# zk_4lw PORT WORD: a four-letter word's answer (srvr, cons, ...)
zk_4lw() {
	timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && echo "$2" >&3 && cat <&3' \
		_ "$1" "$2" 2>/dev/null
}
zk_serving() { zk_4lw "$1" srvr | grep -Eq '^Mode: (standalone|leader|follower)'; }

# _zk_conf NAME PORT [LINES...]: NAME's zoo.cfg
_zk_conf() {
	local d=$ZK_DIR/$1 port=$2 l; shift 2
	mkdir -p "$d/data"
	{
		echo "tickTime=500"
		echo "dataDir=$d/data"
		echo "clientPort=$port"
		echo "clientPortAddress=127.0.0.1"
		echo "admin.enableServer=false"
		echo "maxClientCnxns=0"
		echo "minSessionTimeout=1000"
		echo "maxSessionTimeout=60000"
		echo "4lw.commands.whitelist=srvr,cons,ruok"
		for l; do echo "$l"; done
	} >"$d/zoo.cfg"
	echo "$port" >"$d/port"
}

# _zk_run NAME MAINCLASS: starts NAME's JVM (3>&-: bats waits for no server)
_zk_run() {	# not a job of the test's shell, which would say "Killed"
	local d=$ZK_DIR/$1
	( java "${ZK_JAVA_OPTS[@]}" -cp "$ZK_CP" "$2" "$d/zoo.cfg" \
		>>"$d/log" 2>&1 </dev/null 3>&- &
	  echo $! >"$d/pid" )
}

# start_zk NAME: a standalone server on a free port (in $ZK_DIR/NAME/port)
start_zk() {
	local name=$1 try port
	for try in 1 2 3; do
		port=$(free_port)
		_zk_conf "$name" "$port"
		_zk_run "$name" org.apache.zookeeper.server.ZooKeeperServerMain
		wait_until 30 zk_serving "$port" && return 0
		kill "$(<"$ZK_DIR/$name/pid")" 2>/dev/null
	done
	echo "zookeeper $name did not start: $(tail -n 20 "$ZK_DIR/$name/log")" >&2
	return 1
}

# restart_zk NAME: the same server again (same port, same data)
restart_zk() {
	local d=$ZK_DIR/$1
	_zk_run "$1" org.apache.zookeeper.server.ZooKeeperServerMain
	wait_until 30 zk_serving "$(<"$d/port")" ||
		fail "zookeeper $1 did not start again: $(tail -n 20 "$d/log")"
}

# start_ensemble NAME: three servers of one ensemble, NAME1..NAME3
start_ensemble() {
	local i ports=() peers=() lines=()
	for i in 1 2 3; do
		ports+=("$(free_port)")
		peers+=("server.$i=127.0.0.1:$(free_port):$(free_port)")
	done
	for i in 1 2 3; do
		_zk_conf "$1$i" "${ports[i - 1]}" initLimit=10 syncLimit=5 "${peers[@]}"
		echo "$i" >"$ZK_DIR/$1$i/data/myid"
		_zk_run "$1$i" org.apache.zookeeper.server.quorum.QuorumPeerMain
	done
	for i in 1 2 3; do
		wait_until 60 zk_serving "${ports[i - 1]}" || {
			echo "ensemble member $1$i did not start: $(tail -n 20 "$ZK_DIR/$1$i/log")" >&2
			return 1
		}
	done
}

stop_zk_all() {
	local f
	for f in "$ZK_DIR"/*/pid; do
		[[ -e $f ]] && kill -CONT "$(<"$f")" 2>/dev/null
		[[ -e $f ]] && kill -KILL "$(<"$f")" 2>/dev/null
	done
	true
}

zk_port() { cat "$ZK_DIR/$1/port"; }
zk_pid() { cat "$ZK_DIR/$1/pid"; }
zk_url() { echo "zk://127.0.0.1:$(zk_port "$1")"; }
zk_hosts() { echo "127.0.0.1:$(zk_port "$1")"; }

# ---- kazoo ----------------------------------------------------------------

# kz HOSTS CMD ARGS...: one call of kazoo's (tests/zookeeper.bats reads
# the output): children PATH (sorted by sequence), get PATH (the data),
# czxid PATH, exists PATH (exit 1 if not), delete PATH, mkdir PATH,
# ephemeral PATH DATA SECONDS (an ephemeral sequential node held that
# long), setacl PATH USER:PASSWORD (digest: that user alone), setacls
# PATH ENTRY... (ENTRY: USER:PASSWORD:PERMS, or world:PERMS; PERMS of
# rwcda), acl PATH (one "scheme:id perms" line per entry, as an identity
# without ADMIN sees it), sessions (how many the server has, from cons)
kz() {
	"$PYTHON" - "$@" <<'EOF'
import re, sys, time
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.security import make_acl, make_digest_acl
hosts, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
zk = KazooClient(hosts=hosts, timeout=5)
zk.start(timeout=5)
try:
    if cmd == "children":
        kids = zk.get_children(args[0])
        seq = lambda k: int(re.search(r"(-?\d+)$", k).group(1)) if re.search(r"\d$", k) else 0
        for k in sorted(kids, key=seq):
            print(k)
    elif cmd == "get":
        print(zk.get(args[0])[0].decode("utf-8", "replace"))
    elif cmd == "czxid":
        print(zk.get(args[0])[1].czxid)
    elif cmd == "exists":
        sys.exit(0 if zk.exists(args[0]) else 1)
    elif cmd == "delete":
        zk.delete(args[0], recursive=len(args) > 1)
    elif cmd == "mkdir":
        zk.ensure_path(args[0])
    elif cmd == "ephemeral":
        p = zk.create(args[0], args[1].encode(), ephemeral=True, sequence=True)
        print(p, flush=True)
        time.sleep(float(args[2]))
    elif cmd == "setacl":
        user, pw = args[1].split(":", 1)
        zk.ensure_path(args[0])
        zk.set_acls(args[0], [make_digest_acl(user, pw, all=True)])
    elif cmd == "setacls":
        acls = []
        for e in args[1:]:
            parts = e.split(":")
            perms = parts[-1]
            flags = dict(read="r" in perms, write="w" in perms, create="c" in perms,
                         delete="d" in perms, admin="a" in perms)
            if parts[0] == "world":
                acls.append(make_acl("world", "anyone", **flags))
            else:
                acls.append(make_digest_acl(parts[0], parts[1], **flags))
        zk.ensure_path(args[0])
        zk.set_acls(args[0], acls)
    elif cmd == "acl":
        for a in zk.get_acls(args[0])[0]:
            print("%s:%s %s" % (a.id.scheme, a.id.id, "".join(
                c for c, p in zip("rwcda", (1, 2, 4, 8, 16)) if a.perms & p)))
    else:
        sys.exit("kz: unknown command " + cmd)
except NoNodeError:
    sys.exit(3)
finally:
    zk.stop()
EOF
}

# kz_lock ID HOSTS KIND PATH: kazoo holds KIND (lock, write, read) on PATH
# in the background until $T/ID.release exists; $T/ID.ready once it holds.
kz_lock() {
	local id=$1; shift
	"$PYTHON" - "$T/$id" "$@" >"$T/$id.out" 2>&1 3>&- <<'EOF' &
import os, sys, time
from kazoo.client import KazooClient
p, hosts, kind, path = sys.argv[1:5]
zk = KazooClient(hosts=hosts, timeout=5)
zk.start(timeout=5)
lock = {"lock": zk.Lock, "write": zk.WriteLock, "read": zk.ReadLock}[kind](path, "kazoo " + kind)
lock.acquire(timeout=30)
open(p + ".ready", "w").close()
for _ in range(1200):
    if os.path.exists(p + ".release"):
        break
    time.sleep(0.05)
lock.release()
zk.stop()
EOF
	echo $! >"$T/$id.kpid"
	track $!
}

# kz_try HOSTS KIND PATH SECONDS: kazoo tries to take it; prints
# "acquired" or "timeout"
kz_try() {
	"$PYTHON" - "$@" <<'EOF'
import sys
from kazoo.client import KazooClient
hosts, kind, path, wait = sys.argv[1:5]
zk = KazooClient(hosts=hosts, timeout=5)
zk.start(timeout=5)
from kazoo.exceptions import LockTimeout
lock = {"lock": zk.Lock, "write": zk.WriteLock, "read": zk.ReadLock}[kind](path, "kazoo " + kind)
try:
    got = lock.acquire(blocking=float(wait) > 0, timeout=float(wait) or None)
except LockTimeout:
    got = False
print("acquired" if got else "timeout")
if got:
    lock.release()
zk.stop()
EOF
}

# zk_unimplemented PORTFILE: a server that speaks ZooKeeper's protocol far
# enough to open sessions (pings, auth and the session's close answered)
# and answers every other request ZUNIMPLEMENTED (-6): what a server older
# than dlock needs says (3.4 answers create2 so, in its
# UnimplementedRequestProcessor). 3.4 then closes the connection; this one
# does not, so that the answer never races the close (a reset can lose it,
# and the client library, closed while it reconnects, leaks). No lock is
# ever taken there. Its port in PORTFILE once it listens; stopped with the
# test's other processes.
zk_unimplemented() {
	"$PYTHON" - "$1" >/dev/null 2>&1 3>&- <<'PY' &
import os, socket, struct, sys, threading
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(16)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])

def read(c, n):
    b = b""
    while len(b) < n:
        more = c.recv(n - len(b))
        if not more:
            raise EOFError
        b += more
    return b

def frame(c):
    n, = struct.unpack(">i", read(c, 4))
    return read(c, n)

def serve(c):
    try:
        # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, ...
        _, _, timeout, _ = struct.unpack(">iqiq", frame(c)[:24])
        # ConnectResponse: protocolVersion, timeOut, sessionId, passwd, readOnly
        body = struct.pack(">iiqi", 0, timeout, 0x5a5a, 16) + bytes(16) + b"\0"
        c.sendall(struct.pack(">i", len(body)) + body)
        while True:
            xid, op = struct.unpack(">ii", frame(c)[:8])
            # ping, auth, closeSession; else unimplemented
            err = 0 if xid in (-2, -4) or op == -11 else -6
            c.sendall(struct.pack(">iiqi", 16, xid, 0, err))
            if op == -11:
                break
    except Exception:
        pass
    c.close()

while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
PY
	track $!
	wait_until 10 test -s "$1" || fail "the stand-in server did not start"
}
