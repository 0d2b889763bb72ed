#!/bin/bash
# fleet.sh: a fleet at one instant (issue 30), on each engine's default
# server limits, with the clients starved.
#
# N processes (SIZES, default "200 1000") are released at one instant
# against one server per engine (ENGINES: redis postgres mysql zookeeper
# etcd; or pgbouncer: PostgreSQL behind PgBouncer in session mode, POOL
# server connections; or etcdctl: etcd with its own `etcdctl lock` in
# dlock's place, -w only, the store's own client as a yardstick), each server on its DEFAULT limits (Redis maxclients 10000 and a
# listen backlog of 511, PostgreSQL max_connections 100, MariaDB 151,
# ZooKeeper 60 connections per address, etcd's own), started here on free
# ports in a temp dir and pinned to CPU SERVER_CPU (1), while every client
# is pinned to CPU CLIENT_CPU (0): the clients are starved, as a busy CI
# runner's or a NAT'd fleet's are. Every client comes from 127.0.0.1.
#
# Modes (MODES, default "n w"):
#   n   `dlock -n -t TTL --min-hold MIN_HOLD K job` on every host: expect one
#       run and every other host exit 1, never 69. The job takes JOB s.
#   w   a holder takes K; N waiters `dlock -t TTL -w WAIT K section` are
#       released at one instant behind it; once they have settled (their
#       count queued in the server steady for STABLE s, then SETTLE s), the
#       server's CPU and requests are counted over IDLE s; then the holder
#       lets go and each waiter must run its section once, one at a time,
#       within DEADLINE s.
#
# Reports per engine, size and mode: runs (and overlaps: must be 0), the
# exit-status histogram, wall time, the spread (the last host's start after
# the instant), the server's peak connections (established TCP sockets on
# its port, sampled every 0.2 s), listen-queue overflows (the kernel's
# counter, all of this host: other work counts too), the server's CPU; for
# w the idle server's CPU (% of a core, and per waiter) and requests per
# idle waiter per second, the drain (go to the last waiter's exit) and the
# handoffs (a section's start less the release before it). The load
# average is printed beside each row: compare rows of one run.
#
# Release at one instant: every host is a small C program (compiled here)
# blocked on a shared flock(2) of $T/gate that this script holds
# exclusively; once /proc/locks shows all N blocked, the script unlocks and
# the kernel wakes them all. Each records "status start_us end_us" when its
# dlock exits.
#
# Environment: DLOCK (./build/dlock), ENGINES, SIZES, MODES, CLIENT_CPU,
# SERVER_CPU, TTL (60), MIN_HOLD (60), JOB (5), WAIT (600; "forever": no
# -w), STABLE (3), SETTLE (3), IDLE (25: a keepalive period of -t 60 and more), DEADLINE (300), EXTRA (more dlock
# options for every host, e.g. "--node-timeout 10"), ZK_CONF (a zoo.cfg
# line, e.g. "maxClientCnxns=10", for a small case of the same),
# PG_SETTINGS (PostgreSQL server options, e.g. "-c max_connections=300"),
# URL_EXTRA (query parameters added to the server URL, e.g.
# "dlock_wait=poll" on postgres, pgbouncer or mysql: waiters that hold no
# connection; they queue nowhere in the server, so -w's count settles
# STABLE s after the instant), POOL (90),
# CSV. As root (mariadbd
# and PostgreSQL run as their own users). Everything it starts is stopped
# by PID (process groups for the hosts), whatever happens.
set -euo pipefail
export LC_ALL=C
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE
unset DLOCK_KEYS DLOCK_JOB BASH_ENV ENV

DLOCK=${DLOCK:-./build/dlock}
ENGINES=${ENGINES:-redis postgres mysql zookeeper etcd}
SIZES=${SIZES:-200 1000}
MODES=${MODES:-n w}
CLIENT_CPU=${CLIENT_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
TTL=${TTL:-60}
MIN_HOLD=${MIN_HOLD:-60}
JOB=${JOB:-5}
WAIT=${WAIT:-600}
STABLE=${STABLE:-3}
SETTLE=${SETTLE:-3}
IDLE=${IDLE:-25}
DEADLINE=${DEADLINE:-300}
EXTRA=${EXTRA:-}
PG_SETTINGS=${PG_SETTINGS:-}	# more server options for PostgreSQL ("-c max_connections=300")
URL_EXTRA=${URL_EXTRA:-}	# more URL parameters ("dlock_wait=poll")

die() { echo "fleet.sh: $*" >&2; exit 1; }
note() { echo "fleet.sh: $*" >&2; }
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")
((EUID == 0)) || die "run as root: mariadbd and PostgreSQL run as their own users"
for c in cc taskset ss python3 flock; do
	command -v "$c" >/dev/null || die "$c not found"
done
((${#EXTRA} == 0)) || read -ra EXTRA_ARGS <<<"$EXTRA"
EXTRA_ARGS=("${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}")
BASH_BIN=$(type -P bash)
HZ=$(getconf CLK_TCK)
# Redis's default maxclients (10000) needs 10032 descriptors; the hosts'
# connections need theirs on this side.
if (($(ulimit -n) < 20000)); then
	ulimit -n 20000 2>/dev/null || note "ulimit -n stays $(ulimit -n): Redis lowers maxclients"
fi

T=$(mktemp -d /tmp/dlock-fleet.XXXXXX)	# the postgres and mysql users reach it
chmod 755 "$T"
GROUPS_=()	# process groups: hosts, holders, samplers
SERVER=''	# the server's PID (the postmaster for PostgreSQL)
BOUNCER=''	# PgBouncer's, in front of it (ENGINES=pgbouncer)
STOP_SERVER=''	# how to stop it
cleanup() {
	local p n
	for p in "${GROUPS_[@]}"; do kill -- "-$p" 2>/dev/null || true; done
	for ((n = 0; n < 40; n++)); do
		local alive=0
		for p in "${GROUPS_[@]}"; do kill -0 -- "-$p" 2>/dev/null && alive=1; done
		((alive)) || break
		sleep 0.05
	done
	for p in "${GROUPS_[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
	GROUPS_=()
	stop_server
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

. "$(dirname "$0")/lib.sh"	# wait_until, free_ports, csv_*
now_us() { echo "${EPOCHREALTIME/./}"; }
load() { cut -d ' ' -f 1 /proc/loadavg; }

# --- the gate: one per host ------------------------------------------------
cat >"$T/gate.c" <<'EOF'
/* gate GATE OUT CMD...: blocks on a shared flock of GATE (held exclusive by
 * fleet.sh until the instant), then runs CMD and appends "status start_us
 * end_us pid" to OUT in one write. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
extern char **environ;
static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}
int main(int argc, char **argv)
{
	int fd = open(argv[1], O_RDONLY), out, st, code, len;
	long long start, end;
	char line[128];
	pid_t pid;

	if (argc < 4 || fd < 0 || flock(fd, LOCK_SH) < 0)
		return 111;
	close(fd);
	start = now_us();
	if (posix_spawn(&pid, argv[3], NULL, NULL, argv + 3, environ) != 0)
		code = 127;
	else if (waitpid(pid, &st, 0) < 0)
		code = 111;
	else
		code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	end = now_us();
	out = open(argv[2], O_WRONLY | O_APPEND | O_CREAT, 0644);
	len = snprintf(line, sizeof line, "%d %lld %lld %d\n", code, start, end, (int)pid);
	if (out < 0 || write(out, line, (size_t)len) != len)
		return 111;
	return 0;
}
EOF
cc -O2 -o "$T/gate" "$T/gate.c" || die "cannot compile the gate"
GATE_FILE=$T/gate.lock
: >"$GATE_FILE"
GATE_INO=$(stat -c %i "$GATE_FILE")
blocked_at_gate() { grep -c -- "-> FLOCK .*:$GATE_INO " /proc/locks || true; }

# The job of -n (a run: "a" and "r" lines) and the waiters' section.
# shellcheck disable=SC2016
JOB_SH='echo a ${EPOCHREALTIME/./} $$ >>"$0"; sleep "$1"; echo r ${EPOCHREALTIME/./} $$ >>"$0"'
# shellcheck disable=SC2016
SECTION_SH='echo a ${EPOCHREALTIME/./} $$ >>"$0"; echo r ${EPOCHREALTIME/./} $$ >>"$0"'
# shellcheck disable=SC2016
HOLDER_SH='echo a ${EPOCHREALTIME/./} $$ >>"$0"; : >"$0.ready"
	while [ ! -e "$0.go" ]; do sleep 0.05; done
	echo r ${EPOCHREALTIME/./} $$ >>"$0"'

# fourlw PORT WORD: a ZooKeeper four-letter word from 127.0.0.2, so that
# the hosts' per-address limit (all of them from 127.0.0.1) does not refuse it
fourlw() {
	python3 - "$1" "$2" <<'EOF' 2>/dev/null
import socket, sys
s = socket.socket()
s.settimeout(3)
s.bind(("127.0.0.2", 0))
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.argv[2].encode())
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode(errors="replace"))
EOF
}

# --- the servers ---------------------------------------------------------------
# start_ENGINE sets URL, PORT, SERVER, STOP_SERVER, VERSION; stats_ENGINE
# prints "requests rejected" (cumulative: requests the server served,
# connections it turned away for want of room); queued_ENGINE KEY prints
# how many wait in the server for KEY.
stop_server() {
	[[ -n $STOP_SERVER ]] || return 0
	eval "$STOP_SERVER" || true
	STOP_SERVER='' SERVER='' BOUNCER=''
}
stop_pid() {	# stop_pid PID: SIGTERM, SIGKILL after 10 s
	local n
	kill "$1" 2>/dev/null || return 0
	for ((n = 0; n < 100; n++)); do
		[[ $(ps -o stat= -p "$1" 2>/dev/null) == Z* ]] && break
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

start_redis() {
	read -r PORT < <(free_ports 1)
	taskset -c "$SERVER_CPU" redis-server --port "$PORT" --bind 127.0.0.1 --dir "$T" \
		--save '' --appendonly no >"$T/redis.log" 2>&1 </dev/null &
	SERVER=$!
	STOP_SERVER="stop_pid $SERVER"
	wait_until 10 redis-cli -p "$PORT" ping || die "redis-server did not start: $(tail -n 3 "$T/redis.log")"
	URL=redis://127.0.0.1:$PORT
	VERSION="Redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), maxclients $(redis-cli -p "$PORT" CONFIG GET maxclients | sed -n 2p)"
}
stats_redis() {	# top-level calls only: not the commands scripts run
	{ redis-cli -p "$PORT" INFO commandstats; redis-cli -p "$PORT" INFO stats; } | tr -d '\r' |
		awk -F'[_:=,]' '
		$1 == "cmdstat" && $2 ~ /^(evalsha|eval|blpop|brpop|hello|auth|select|ping|client|script|info)$/ { c += $4 }
		$1 == "rejected" { r = $3 }
		END { print c + 0, r + 0 }'
}
queued_redis() { redis-cli -p "$PORT" CLIENT LIST | grep -c ' cmd=blpop ' || true; }

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
start_postgres() {
	[[ -x $PGBIN/initdb ]] || die "no PostgreSQL server"
	read -r PORT < <(free_ports 1)
	PGPORT=$PORT
	mkdir -p "$T/pg" && chown postgres "$T/pg"
	runuser -u postgres -- "$PGBIN/initdb" -A trust -U postgres -D "$T/pg/data" >"$T/pg/initdb.log" 2>&1 ||
		die "initdb failed: $(tail -n 3 "$T/pg/initdb.log")"
	taskset -c "$SERVER_CPU" runuser -u postgres -- "$PGBIN/pg_ctl" -D "$T/pg/data" -w -t 30 \
		-o "-k $T/pg -p $PORT -c listen_addresses=127.0.0.1 $PG_SETTINGS" -l "$T/pg/log" start >/dev/null ||
		die "PostgreSQL did not start: $(tail -n 3 "$T/pg/log")"
	SERVER=$(head -n 1 "$T/pg/data/postmaster.pid")
	STOP_SERVER="runuser -u postgres -- '$PGBIN/pg_ctl' -D '$T/pg/data' -m immediate stop >/dev/null 2>&1"
	# the hosts as an ordinary role: the superuser's reserved slots stay
	# for this script's questions
	# (the fence table made once, as the superuser, as an administrator
	# would for a fleet: the role may not create it in schema public)
	"$DLOCK" -S "postgres://postgres@127.0.0.1:$PORT/postgres" -n fleet-setup true ||
		die "dlock could not make its fence table"
	pgq "CREATE ROLE fleet LOGIN" >/dev/null
	pgq "GRANT SELECT, INSERT, UPDATE ON public.dlock_fences TO fleet" >/dev/null
	URL="postgres://fleet@127.0.0.1:$PORT/postgres"
	VERSION="PostgreSQL $(pgq 'SHOW server_version'), max_connections $(pgq 'SHOW max_connections')"
}
stats_postgres() {
	local x
	x=$(pgq "SELECT sum(xact_commit + xact_rollback) + sum(coalesce(sessions, 0)) FROM pg_stat_database" || echo 0)
	echo "${x:-0} $(grep -cE 'too many clients|connection slots are reserved' "$T/pg/log" || true)"
}
queued_postgres() { pgq "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"; }

# PostgreSQL on its defaults behind a PgBouncer in session mode (declared
# to dlock: ?dlock_pooling=session), the waiting room the man page's *Many
# waiters* advises: its clients wait in the pooler, without a backend
# each, for one of POOL (90) server connections, which it hands on as a
# client leaves (no backend's start and end per host). max_client_conn
# above the hosts, query_wait_timeout 0 (a waiter of -w 600 is not
# dropped after 120 s). The server's CPU counts the pooler's.
POOL=${POOL:-90}
start_pgbouncer() {
	command -v pgbouncer >/dev/null || die "pgbouncer is not installed"
	start_postgres
	local bport pgport=$PORT
	read -r bport < <(free_ports 1)
	cat >"$T/pg/pgbouncer.ini" <<-EOF
	[databases]
	postgres = host=$T/pg port=$pgport
	[pgbouncer]
	listen_addr = 127.0.0.1
	listen_port = $bport
	unix_socket_dir =
	auth_type = trust
	auth_file = $T/pg/users.txt
	pool_mode = session
	default_pool_size = $POOL
	max_client_conn = 5000
	query_wait_timeout = 0
	listen_backlog = 4096
	pidfile = $T/pg/pgbouncer.pid
	logfile = $T/pg/pgbouncer.log
	EOF
	echo '"fleet" ""' >"$T/pg/users.txt"
	chown postgres "$T/pg/pgbouncer.ini" "$T/pg/users.txt"
	# runuser's PAM session sets the soft limit of open files back to 1024
	# (accept() failed: Too many open files, at about 1,000 clients)
	# shellcheck disable=SC2016
	taskset -c "$SERVER_CPU" runuser -u postgres -- "$BASH_BIN" -c \
		'ulimit -n "$1" && exec pgbouncer -d "$2"' _ "$(ulimit -n)" "$T/pg/pgbouncer.ini" ||
		die "pgbouncer did not start: $(tail -n 3 "$T/pg/pgbouncer.log")"
	wait_until 10 test -s "$T/pg/pgbouncer.pid" || die "pgbouncer did not start"
	BOUNCER=$(<"$T/pg/pgbouncer.pid")
	STOP_SERVER="kill $BOUNCER 2>/dev/null; $STOP_SERVER"
	URL="postgres://fleet@127.0.0.1:$bport/postgres?dlock_pooling=session"
	PORT=$bport
	VERSION="$VERSION, behind PgBouncer $(pgbouncer --version | head -n 1 | awk '{ print $2 }') (session pooling, pool $POOL)"
}
pgq() { psql -h "$T/pg" -p "$PGPORT" -U postgres -Atq -X -c "$1" postgres; }
stats_pgbouncer() { stats_postgres; }
queued_pgbouncer() { queued_postgres; }

start_mysql() {
	read -r PORT XPORT < <(free_ports 2)
	mkdir -p "$T/my"
	# this script asks on the extra port (its own thread, one connection
	# beyond max_connections), which the hosts' storm cannot fill
	cat >"$T/my/init.sql" <<-'EOF'
	CREATE DATABASE IF NOT EXISTS dlock;
	CREATE USER IF NOT EXISTS 'fleet'@'%' IDENTIFIED BY 'secret';
	GRANT ALL ON dlock.* TO 'fleet'@'%';
	CREATE USER IF NOT EXISTS 'mon'@'127.0.0.1' IDENTIFIED BY 'mon';
	GRANT PROCESS ON *.* TO 'mon'@'127.0.0.1';
	EOF
	cat >"$T/my/my.cnf" <<-EOF
	[mariadbd]
	datadir=$T/my/data
	socket=$T/my/sock
	pid-file=$T/my/mariadbd.pid
	port=$PORT
	extra-port=$XPORT
	bind-address=127.0.0.1
	skip-log-bin
	skip-name-resolve
	init-file=$T/my/init.sql
	log-error=$T/my/err.log
	EOF
	chown -R mysql:mysql "$T/my"
	mariadb-install-db --defaults-file="$T/my/my.cnf" --user=mysql \
		--auth-root-authentication-method=socket --skip-test-db >"$T/my/install.log" 2>&1 ||
		die "mariadb-install-db failed: $(tail -n 3 "$T/my/install.log")"
	taskset -c "$SERVER_CPU" mariadbd --defaults-file="$T/my/my.cnf" --user=mysql \
		>"$T/my/out.log" 2>&1 </dev/null &
	SERVER=$!
	STOP_SERVER="stop_pid $SERVER"
	wait_until 60 mariadb -S "$T/my/sock" -uroot -e 'SELECT 1' ||
		die "mariadbd did not start: $(tail -n 3 "$T/my/err.log")"
	URL="mysql://fleet:secret@127.0.0.1:$PORT/dlock"
	VERSION="MariaDB $(myq 'SELECT VERSION()'), max_connections $(myq 'SELECT @@max_connections')"
}
myq() { mariadb -h 127.0.0.1 -P "$XPORT" -umon -pmon -N -B -e "$1"; }
stats_mysql() {
	myq "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Connections', 'Connection_errors_max_connections')" |
		awk '$1 == "Questions" || $1 == "Connections" { q += $2 }
		     $1 == "Connection_errors_max_connections" { r = $2 }
		     END { print q + 0, r + 0 }'
}
queued_mysql() { myq "SELECT count(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'"; }

start_zookeeper() {
	[[ -e /usr/share/java/zookeeper.jar ]] || die "no ZooKeeper (apt-get install zookeeper)"
	read -r PORT < <(free_ports 1)
	mkdir -p "$T/zk/data"
	# tickTime as in ZooKeeper's own sample zoo.cfg; no maxClientCnxns
	# line: its default, 60 connections per client address
	cat >"$T/zk/zoo.cfg" <<-EOF
	tickTime=2000
	dataDir=$T/zk/data
	clientPort=$PORT
	clientPortAddress=127.0.0.1
	admin.enableServer=false
	4lw.commands.whitelist=srvr,mntr,cons,dump
	${ZK_CONF:-}
	EOF
	taskset -c "$SERVER_CPU" java -Xms64m -Xmx512m -cp /usr/share/java/zookeeper.jar \
		org.apache.zookeeper.server.ZooKeeperServerMain "$T/zk/zoo.cfg" >"$T/zk/log" 2>&1 </dev/null &
	SERVER=$!
	STOP_SERVER="stop_pid $SERVER"
	wait_until 60 eval 'fourlw $PORT srvr | grep -q "^Mode: standalone"' ||
		die "ZooKeeper did not start: $(tail -n 5 "$T/zk/log")"
	URL=zk://127.0.0.1:$PORT
	VERSION="ZooKeeper $(fourlw "$PORT" srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p'), maxClientCnxns 60 (default)"
}
stats_zookeeper() {
	echo "$(fourlw "$PORT" mntr | awk '$1 == "zk_packets_received" { print $2 }') $(grep -c 'Too many connections' "$T/zk/log" || true)"
}
queued_zookeeper() {	# contenders' ephemeral nodes under the lock's path, less the holder's
	fourlw "$PORT" dump | grep -c "/dlock:$1/" | awk '{ print ($1 > 0) ? $1 - 1 : 0 }'
}

start_etcd() {
	local pport try
	for try in 1 2 3; do	# another process may take a free port first
		read -r PORT pport < <(free_ports 2)
		rm -rf "$T/etcd"
		taskset -c "$SERVER_CPU" etcd --name fleet --data-dir "$T/etcd" \
			--listen-client-urls "http://127.0.0.1:$PORT" --advertise-client-urls "http://127.0.0.1:$PORT" \
			--listen-peer-urls "http://127.0.0.1:$pport" \
			--initial-advertise-peer-urls "http://127.0.0.1:$pport" \
			--initial-cluster "fleet=http://127.0.0.1:$pport" \
			--log-level error >"$T/etcd.log" 2>&1 </dev/null &
		SERVER=$!
		STOP_SERVER="stop_pid $SERVER"
		wait_until 30 env ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$PORT" endpoint health && break
		kill -0 "$SERVER" 2>/dev/null && die "etcd did not start: $(tail -n 3 "$T/etcd.log")"
		STOP_SERVER=''
	done
	[[ -n $STOP_SERVER ]] || die "etcd did not start: $(tail -n 3 "$T/etcd.log")"
	URL=etcd://127.0.0.1:$PORT
	VERSION="etcd $(etcd --version | sed -n 's/^etcd Version: //p')"
}
stats_etcd() {	# gRPC messages received (the gateway's calls, the streams' messages); HTTP 429/503 are not counted
	curl -s "http://127.0.0.1:$PORT/metrics" |
		awk '/^grpc_server_msg_received_total/ { n += $2 } END { printf "%d 0\n", n }'
}
queued_etcd() {	# watchers: a waiter is queued once it watches the key ahead
	curl -s "http://127.0.0.1:$PORT/metrics" |
		awk '/^etcd_debugging_mvcc_watcher_total/ { v = $2 } END { print v + 0 }'
}
# etcdctl: etcd's own `etcdctl lock` as the waiters and the holder (-w
# only): the store's own client, its yardstick for the drain
start_etcdctl() { start_etcd; VERSION+=", waiters and holder: $(etcdctl version | head -n 1)"; }
stats_etcdctl() { stats_etcd; }
queued_etcdctl() { queued_etcd; }

# --- what the server costs -----------------------------------------------------
cpu_ticks() {	# the server's CPU ticks: it, its reaped children, its live children
	local kid
	{
		cat "/proc/$SERVER/stat"
		[[ -z $BOUNCER ]] || cat "/proc/$BOUNCER/stat"
		for kid in $(pgrep -P "$SERVER"); do cat "/proc/$kid/stat"; done
	} 2>/dev/null | awk -v p="$SERVER" -v b="$BOUNCER" '{
		pid = $1; sub(/^[^)]*\) /, ""); split($0, f, " ")
		n += f[12] + f[13]
		if (pid == p || pid == b) n += f[14] + f[15]
	} END { print n + 0 }'
}
overflows() { awk '/^TcpExt:/ { if (!seen) { seen = 1; split($0, h); next } for (i = 2; i <= NF; i++) if (h[i] == "ListenOverflows") print $i }' /proc/net/netstat; }
SAMPLER=''
start_sampler() {	# peak established connections to PORT, every 0.2 s, into $T/peak
	: >"$T/peak"
	setsid "$BASH_BIN" -c 'while [ ! -e "$2.stop" ]; do
		ss -Htn state established "( sport = :$1 )" | wc -l >>"$2"; sleep 0.2
	done' _ "$PORT" "$T/peak" </dev/null &
	SAMPLER=$!
	GROUPS_+=("$SAMPLER")
}
stop_sampler() {
	: >"$T/peak.stop"
	wait "$SAMPLER" 2>/dev/null || true
	rm -f "$T/peak.stop"
	sort -n "$T/peak" | tail -n 1
}

# --- one scenario ------------------------------------------------------------
# release_hosts N OUT ERR ARGS...: N gates pinned to CLIENT_CPU, each to run
# ARGS once the gate opens; returns once all N are blocked at the gate.
LAUNCHER=''
release_hosts() {
	local n=$1 out=$2 errf=$3 t0; shift 3
	exec 8>"$GATE_FILE"
	flock -x 8
	: >"$out"
	setsid taskset -c "$CLIENT_CPU" "$BASH_BIN" -c '
		n=$1 gate=$2 lock=$3 out=$4; shift 4
		for ((i = 0; i < n; i++)); do "$gate" "$lock" "$out" "$@" & done
		wait' _ "$n" "$T/gate" "$GATE_FILE" "$out" "$@" >/dev/null 2>"$errf" </dev/null &
	LAUNCHER=$!
	GROUPS_+=("$LAUNCHER")
	t0=$SECONDS
	until (($(blocked_at_gate) >= n)); do
		((SECONDS - t0 < 120)) || die "only $(blocked_at_gate) of $n hosts at the gate after 120 s"
		sleep 0.2
	done
	RELEASE_US=$(now_us)
	flock -u 8
	exec 8>&-
}
finished() { wc -l <"$1"; }
all_done() { (($(finished "$1") >= $2)); }	# all_done OUT N

histogram() {	# "status x count" pairs of OUT
	awk '{ print $1 }' "$1" | sort -n | uniq -c | awk '{ printf "%s%s:%s", s, $2, $1; s = " " }'
}
overlaps() {	# LOG: a's while another holds, r's by another than the holder
	awk '$1 == "a" { if (h != "") bad++; h = $3; n++ }
	     $1 == "r" { if (h != $3) bad++; h = "" }
	     END { printf "%d %d\n", n, bad + 0 }' "$1"
}
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }
errors_top() {	# the commonest stderr lines of the hosts, the lock's name left out
	[[ -s $1 ]] || return 0
	sed -E 's/^dlock: [^:]*: //' "$1" | sort | uniq -c | sort -rn | head -n 3 |
		sed 's/^/        /' >&2
}

ROWS=()
row() { ROWS+=("$1"); echo "$1"; }

scenario_n() {	# ENGINE N
	local eng=$1 n=$2 key="fleet-n$2-$RANDOM" dir=$T/s.$1.n.$2
	local c0 c1 o0 o1 st0 st1 rej0 rej1 peak last_loser last spread runs bad hist l0
	mkdir -p "$dir"
	: >"$dir/runs"
	read -r st0 rej0 < <(stats_"$eng")
	c0=$(cpu_ticks) o0=$(overflows) l0=$(load)
	start_sampler
	release_hosts "$n" "$dir/out" "$dir/err" "$DLOCK" -S "$URL" "${EXTRA_ARGS[@]}" -n \
		-t "$TTL" --min-hold "$MIN_HOLD" "$key" "$BASH_BIN" -c "$JOB_SH" "$dir/runs" "$JOB"
	wait_until $((MIN_HOLD + DEADLINE)) all_done "$dir/out" "$n" ||
		note "$eng -n $n: only $(finished "$dir/out") of $n hosts done"
	peak=$(stop_sampler)
	c1=$(cpu_ticks) o1=$(overflows)
	read -r st1 rej1 < <(stats_"$eng")
	read -r runs bad < <(overlaps "$dir/runs")
	hist=$(histogram "$dir/out")
	last_loser=$(awk '$1 != 0 && $3 > m { m = $3 } END { print m + 0 }' "$dir/out")
	last=$(awk '$3 > m { m = $3 } END { print m + 0 }' "$dir/out")
	spread=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$dir/out")
	((last_loser > 0)) || last_loser=$RELEASE_US
	row "$(printf '| %s | -n | %d | %d%s | %s | %s s | %s s (%s s) | %s | %s | %.1f s | %d (%d) | %s |' \
		"$eng" "$n" "$runs" "$( ((bad == 0)) || echo " ($bad overlaps)")" "$hist" \
		"$(secs "$RELEASE_US" "$spread")" "$(secs "$RELEASE_US" "$last_loser")" \
		"$(secs "$RELEASE_US" "$last")" "$peak" "$((o1 - o0))" \
		"$(awk -v t=$((c1 - c0)) -v hz="$HZ" 'BEGIN { print t / hz }')" "$((st1 - st0))" \
		"$((rej1 - rej0))" "$l0-$(load)")"
	errors_top "$dir/err"
	csv_row fleet "$eng, $n hosts -n" dlock runs count 1 "$runs" "$runs" "$runs"
	local c69
	c69=$(awk '$1 == 69 { n++ } END { print n + 0 }' "$dir/out")
	csv_row fleet "$eng, $n hosts -n" dlock "exit 69" count 1 "$c69" "$c69" "$c69"
}

scenario_w() {	# ENGINE N
	local eng=$1 n=$2 key="fleet-w$2-$RANDOM" dir=$T/s.$1.w.$2 wargs=()
	local c0 c1 o0 o1 q q0 qprev t_stable t_rel moved s_us e_us st0 st1 rej0 rej1 cpu_idle req_idle
	local go_us peak p0 ipeak runs bad hist drain l0 holder
	mkdir -p "$dir"
	[[ $WAIT == forever ]] || wargs=(-w "$WAIT")
	: >"$dir/log"
	l0=$(load)
	start_sampler
	o0=$(overflows)
	# the holder and the waiters: dlock, or etcd's own etcdctl lock
	local holder_cmd=("$DLOCK" -S "$URL" -t "$TTL" "$key")
	local waiter_cmd=("$DLOCK" -S "$URL" "${EXTRA_ARGS[@]}" -t "$TTL" "${wargs[@]}" "$key")
	if [[ $eng == etcdctl ]]; then
		holder_cmd=("$(command -v etcdctl)" --endpoints="127.0.0.1:$PORT" lock --ttl "$TTL" "$key" --)
		waiter_cmd=("${holder_cmd[@]}")
	fi
	setsid "${holder_cmd[@]}" "$BASH_BIN" -c "$HOLDER_SH" "$dir/log" \
		>/dev/null 2>"$dir/holder.err" </dev/null &
	holder=$!
	GROUPS_+=("$holder")
	wait_until 30 test -e "$dir/log.ready" || die "$eng: the holder did not start: $(cat "$dir/holder.err")"
	q0=$(queued_"$eng" "$key" 2>/dev/null || echo 0)
	release_hosts "$n" "$dir/out" "$dir/err" "${waiter_cmd[@]}" \
		"$BASH_BIN" -c "$SECTION_SH" "$dir/log"
	# settled: the count queued in the server steady for STABLE s once it
	# has moved from the holder's alone (q0). A thousand hosts starting on
	# one CPU leave it there for seconds, and an idle window begun then
	# counted their arrival as the idle cost; nor is a full count enough
	# (etcd's watchers count a watch its waiter gave up on until the
	# server sees it closed)
	qprev=$q0 t_stable=$SECONDS t_rel=$SECONDS moved=0
	[[ $URL != *dlock_wait=poll* ]] || moved=1	# nobody queues in the server
	while :; do
		q=$(queued_"$eng" "$key" 2>/dev/null || echo "$qprev")
		if [[ $q != "$qprev" ]]; then qprev=$q t_stable=$SECONDS moved=1; fi
		((moved && SECONDS - t_stable >= STABLE)) && break
		((SECONDS - t_rel < 300)) || break
		sleep 0.5
	done
	sleep "$SETTLE"
	read -r st0 rej0 < <(stats_"$eng")
	c0=$(cpu_ticks) s_us=$(now_us) p0=$(wc -l <"$T/peak")
	[[ -z ${DEBUG:-} ]] || note "idle window: $st0 requests, $rej0 rejected so far"
	[[ -z ${DEBUG:-} || $eng != etcd ]] || curl -s "http://127.0.0.1:$PORT/metrics" | grep '^grpc_server_msg_received_total' >"$T/m0"
	sleep "$IDLE"
	c1=$(cpu_ticks) e_us=$(now_us)
	# the idle window's own peak (the waiters' arrival has the run's)
	ipeak=$(sed -n "$((p0 + 1)),\$p" "$T/peak" | sort -n | tail -n 1)
	read -r st1 rej1 < <(stats_"$eng")
	[[ -z ${DEBUG:-} ]] || note "idle window: $st1 requests, $rej1 rejected so far"
	[[ -z ${DEBUG:-} || $eng != etcd ]] || { curl -s "http://127.0.0.1:$PORT/metrics" | grep '^grpc_server_msg_received_total' >"$T/m1"; diff "$T/m0" "$T/m1" >&2 || true; }
	q=$(queued_"$eng" "$key" 2>/dev/null || echo "?")
	cpu_idle=$(awk -v t=$((c1 - c0)) -v hz="$HZ" -v s="$s_us" -v e="$e_us" \
		'BEGIN { printf "%.1f", 100 * t / hz / ((e - s) / 1e6) }')
	# requests served and connections turned away: both cost the server
	req_idle=$(awk -v r=$((st1 - st0 + rej1 - rej0)) -v s="$s_us" -v e="$e_us" -v n="$n" \
		'BEGIN { printf "%.3f", r / ((e - s) / 1e6) / n }')
	# the handoffs
	go_us=$(now_us)
	: >"$dir/log.go"
	wait_until "$DEADLINE" all_done "$dir/out" "$n" ||
		note "$eng -w $n: only $(finished "$dir/out") of $n waiters done after ${DEADLINE}s"
	wait "$holder" 2>/dev/null || note "$eng: the holder exited $?: $(head -c 300 "$dir/holder.err")"
	peak=$(stop_sampler)
	o1=$(overflows)
	drain=$(awk -v g="$go_us" '$3 > m { m = $3 } END { printf "%.1f", (m - g) / 1e6 }' "$dir/out")
	read -r runs bad < <(overlaps "$dir/log")
	runs=$((runs - 1))	# the holder's
	hist=$(histogram "$dir/out")
	awk '$1 == "a" { if (have) print $2 - last }
	     $1 == "r" { last = $2; have = 1 }' "$dir/log" | sort -n >"$dir/hand"
	local hand
	hand=$(awk '{ v[NR] = $1 } END { if (!NR) { print "-"; exit }
		printf "%.0f / %.0f ms", v[int((NR + 1) / 2)] / 1000, v[NR] / 1000 }' "$dir/hand")
	row "$(printf '| %s | -w | %d | %d%s | %s | %s (%s s) | %s (idle %s) | %s | %s %% (%s per waiter) | %s (%s rejected) | %s s | %s | %s |' \
		"$eng" "$n" "$runs" "$( ((bad == 0)) || echo " ($bad overlaps)")" "$hist" \
		"$q queued" "$(secs "$RELEASE_US" "$go_us")" "$peak" "${ipeak:-?}" "$((o1 - o0))" \
		"$cpu_idle" "$(awk -v c="$cpu_idle" -v n="$n" 'BEGIN { printf "%.3f", c / n }')" \
		"$req_idle" "$((rej1 - rej0))" "$drain" "$hand" "$l0-$(load)")"
	errors_top "$dir/err"
	csv_row fleet "$eng, $n waiters" dlock runs count 1 "$runs" "$runs" "$runs"
	csv_row fleet "$eng, $n waiters" dlock "idle requests/s per waiter" 1/s 1 "$req_idle" "$req_idle" "$req_idle"
	csv_row fleet "$eng, $n waiters" dlock "idle server CPU" % 1 "$cpu_idle" "$cpu_idle" "$cpu_idle"
	csv_row fleet "$eng, $n waiters" dlock "drain" s 1 "$drain" "$drain" "$drain"
}

echo "fleet.sh: $(nproc) CPUs, clients on CPU $CLIENT_CPU, servers on CPU $SERVER_CPU;" \
	"$("$DLOCK" --version | head -n 1) ($DLOCK); -t $TTL, -n with --min-hold $MIN_HOLD and a ${JOB}s job," \
	"-w ${WAIT}${EXTRA:+; extra: $EXTRA}${URL_EXTRA:+; URL: ?$URL_EXTRA}; load $(cut -d ' ' -f 1-3 /proc/loadavg)"
for eng in $ENGINES; do
	declare -F "start_$eng" >/dev/null || die "unknown engine '$eng'"
	"start_$eng"
	[[ -z $URL_EXTRA ]] || URL+=$([[ $URL == *\?* ]] && echo '&' || echo '?')$URL_EXTRA
	echo
	echo "$VERSION on 127.0.0.1:$PORT"
	for mode in $MODES; do
		[[ $eng != etcdctl || $mode == w ]] || { note "etcdctl: -w only (it has no -n)"; continue; }
		if [[ $mode == n ]]; then
			echo "| engine | mode | hosts | runs | exit statuses | spread | last loser (last) | peak conns | listen overflows | server CPU | requests (turned away) | load |"
			echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
		else
			echo "| engine | mode | waiters | runs | exit statuses | settled | peak conns (idle) | listen overflows | idle server CPU | idle requests/s per waiter (turned away in all) | drain | handoff median / max | load |"
			echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
		fi
		for n in $SIZES; do
			"scenario_$mode" "$eng" "$n"
		done
	done
	stop_server
done
