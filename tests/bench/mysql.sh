#!/bin/bash
# mysql.sh: W1 on MariaDB, what one lock costs a shell script.
#
# `dlock -S mysql://... K true` (TCP and the unix socket; with the default
# history, with --history 0, and on a dlock_history in InnoDB as older
# versions made it; BASE=another dlock, such as main's, interleaved on a
# database of its own) against the C floor, a small C program
# compiled here that does what dlock must: connect, GET_LOCK with the fence
# row in one batch, run `true`, RELEASE_LOCK, close (blocking Connector/C
# calls, nothing else); and, as yardsticks, a shell wrapper that holds
# GET_LOCK in a `mariadb` client coprocess around `true`, PyMySQL doing
# the same in python3, flock(1) and a bare `true`. Every round runs every
# tool once, in an order that rotates, so drift spreads over all alike.
# Prints medians, 10th and 90th percentiles and the ratio to the C floor.
#
# Environment: DLOCK (default ./build/dlock, with build/dlock-mysql.so),
# BASE (a second dlock binary to compare, with its dlock-mysql.so beside
# it; none by default), ROUNDS (default 100), WARMUP (default 5), CSV
# (README.md), MAX_SECONDS, COST_RUNS (default 100: the runs of each tool
# for the flushes and CPU per run, after the timed rounds; 0: none).
# Starts its own mariadbd (mariadb-install-db, as the mysql user, in a temp
# dir under /tmp; about 6 s) on a free loopback port and a unix socket, and
# stops it by PID whatever happens. Needs root (mariadbd --user=mysql),
# mariadb-server, libmariadb-dev and a C compiler; python3-pymysql for its
# row.
set -euo pipefail
export LC_ALL=C
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE

DLOCK=${DLOCK:-./build/dlock}
ROUNDS=${ROUNDS:-100}
WARMUP=${WARMUP:-5}

die() { echo "mysql.sh: $*" >&2; exit 1; }
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")
[[ -e $(dirname "$DLOCK")/dlock-mysql.so ]] || die "no dlock-mysql.so beside $DLOCK (libmariadb-dev at meson setup?)"
BASE=${BASE:-}
if [[ -n $BASE ]]; then
	[[ -x $BASE ]] || die "no dlock binary at BASE='$BASE'"
	BASE=$(realpath "$BASE")
	[[ -e $(dirname "$BASE")/dlock-mysql.so ]] || die "no dlock-mysql.so beside $BASE"
fi
for c in mariadbd mariadb-install-db mariadb flock cc pkg-config; do
	command -v "$c" >/dev/null || die "$c not found"
done
((EUID == 0)) || die "run as root: mariadbd runs as the mysql user"
TRUE=$(type -P true)

T=$(mktemp -d /tmp/dlock-bench-mysql.XXXXXX)	# the mysql user reaches it
SERVER=
cleanup() {
	if [[ -n $SERVER ]]; then
		kill "$SERVER" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SERVER" 2>/dev/null || true
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

. "$(dirname "$0")/lib.sh"	# wait_until, free_ports, csv_*

# --- the server --------------------------------------------------------
read -r PORT < <(free_ports 1)
chmod 755 "$T"
cat >"$T/init.sql" <<'EOF'
CREATE DATABASE IF NOT EXISTS dlock;
CREATE DATABASE IF NOT EXISTS dlock_innodb;
CREATE DATABASE IF NOT EXISTS dlock_base;
CREATE USER IF NOT EXISTS 'dl'@'%' IDENTIFIED BY 'secret';
GRANT ALL ON dlock.* TO 'dl'@'%';
GRANT ALL ON dlock_innodb.* TO 'dl'@'%';
GRANT ALL ON dlock_base.* TO 'dl'@'%';
EOF
cat >"$T/my.cnf" <<EOF
[mariadbd]
datadir=$T/data
socket=$T/sock
pid-file=$T/mariadbd.pid
port=$PORT
bind-address=127.0.0.1
skip-log-bin
skip-name-resolve
innodb_buffer_pool_size=16M
init-file=$T/init.sql
log-error=$T/err.log
EOF
chown -R mysql:mysql "$T"
mariadb-install-db --defaults-file="$T/my.cnf" --user=mysql \
	--auth-root-authentication-method=socket --skip-test-db >"$T/install.log" 2>&1 ||
	die "mariadb-install-db failed: $(tail -n 3 "$T/install.log")"
mariadbd --defaults-file="$T/my.cnf" --user=mysql >"$T/out.log" 2>&1 </dev/null &
SERVER=$!
wait_until 30 mariadb -S "$T/sock" -uroot -e 'SELECT 1' ||
	die "mariadbd did not start: $(tail -n 3 "$T/err.log")"
VERSION=$(mariadb -S "$T/sock" -uroot -N -B -e 'SELECT VERSION()')
URL="mysql://dl:secret@127.0.0.1:$PORT/dlock"
SOCK_URL="mysql://dl:secret@localhost/dlock?socket=$T/sock"

# --- the C floor -------------------------------------------------------
cat >"$T/floor.c" <<'EOF'
/* connect; GET_LOCK(name, 0) and the fence row in one batch; run true;
 * RELEASE_LOCK; close: what dlock does, in blocking Connector/C calls. */
#include <mysql.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
extern char **environ;
static void drain(MYSQL *m)
{
	do {
		MYSQL_RES *r = mysql_store_result(m);
		if (r)
			mysql_free_result(r);
	} while (mysql_next_result(m) == 0);
}
int main(int argc, char **argv)
{
	MYSQL *m = mysql_init(NULL);
	char *args[] = { argv[2], NULL };
	pid_t pid;
	int st;

	if (!mysql_real_connect(m, "127.0.0.1", "dl", "secret", "dlock",
				(unsigned)atoi(argv[1]), NULL, CLIENT_MULTI_STATEMENTS) ||
	    mysql_query(m, "SELECT GET_LOCK('dlock:bench-c', 0);"
			"INSERT INTO dlock_locks (name, fence, conn, token, holder, ttl_ms, lock_name) "
			"SELECT 'dlock:bench-c', LAST_INSERT_ID(1), CONNECTION_ID(), 't', 'h', 30000, 'n' "
			"FROM DUAL WHERE IS_USED_LOCK('dlock:bench-c') = CONNECTION_ID() "
			"ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(fence + 1)")) {
		fprintf(stderr, "%s\n", mysql_error(m));
		return 69;
	}
	drain(m);
	if (posix_spawn(&pid, args[0], NULL, NULL, args, environ) != 0 ||
	    waitpid(pid, &st, 0) < 0)
		return 71;
	if (mysql_query(m, "SELECT RELEASE_LOCK('dlock:bench-c')"))
		return 69;
	drain(m);
	mysql_close(m);
	return WEXITSTATUS(st);
}
EOF
# shellcheck disable=SC2046
cc -O2 -o "$T/floor" "$T/floor.c" $(pkg-config --cflags --libs libmariadb) ||
	die "cannot compile the C floor"

# --- the tools ---------------------------------------------------------
cat >"$T/wrapper.sh" <<'EOF'
#!/bin/bash
# GET_LOCK held by a mariadb client coprocess around the command
port=$1; shift
coproc M { mariadb -h127.0.0.1 -P"$port" -udl -psecret -N -B -n dlock; }
echo "SELECT GET_LOCK('dlock:bench-sh', 0);" >&"${M[1]}"
read -r got <&"${M[0]}"
[[ $got == 1 ]] || exit 1
"$@"; rc=$?
echo "SELECT RELEASE_LOCK('dlock:bench-sh');" >&"${M[1]}"
read -r _ <&"${M[0]}"
exec {M[1]}>&-
wait
exit $rc
EOF
chmod +x "$T/wrapper.sh"
PYLOCK='import subprocess, sys, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="dl", password="secret", database="dlock")
cur = c.cursor()
cur.execute("SELECT GET_LOCK(%s, 0)", ("dlock:bench-py",))
if cur.fetchone()[0] != 1: sys.exit(1)
rc = subprocess.call(sys.argv[2:])
cur.execute("DO RELEASE_LOCK(%s)", ("dlock:bench-py",))
c.close()
sys.exit(rc)'

NAMES=() CMDS=()
tool() { NAMES+=("$1"); shift; CMDS+=("$(printf '%q ' "$@")"); }
tool "true"                        "$TRUE"
tool "flock FILE true"             flock "$T/flock.lock" "$TRUE"
tool "C floor (tcp)"               "$T/floor" "$PORT" "$TRUE"
tool "dlock K true (tcp)"          "$DLOCK" -S "$URL" bench-tcp "$TRUE"
tool "dlock --history 0 (tcp)"     "$DLOCK" -S "$URL" --history 0 bench-h0 "$TRUE"
tool "dlock K true (unix)"         "$DLOCK" -S "$SOCK_URL" bench-unix "$TRUE"
tool "dlock, InnoDB history (tcp)" "$DLOCK" -S "${URL}_innodb" bench-inno "$TRUE"
if [[ -n $BASE ]]; then
	tool "BASE dlock K true (tcp)"     "$BASE" -S "${URL}_base" bench-tcp "$TRUE"
	tool "BASE --history 0 (tcp)"      "$BASE" -S "${URL}_base" --history 0 bench-h0 "$TRUE"
fi
tool "mariadb coproc wrapper"      "$T/wrapper.sh" "$PORT" "$TRUE"
if /usr/bin/python3 -c 'import pymysql' 2>/dev/null; then
	tool "PyMySQL GET_LOCK K true" /usr/bin/python3 -c "$PYLOCK" "$PORT" "$TRUE"
else
	echo "mysql.sh: no python3-pymysql, skipping its row" >&2
fi
N=${#NAMES[@]}
run() { eval "${CMDS[$1]}" </dev/null >"$T/out" 2>&1; }

# Sanity: every tool works (dlock first: it creates dlock_locks; BASE
# its own tables; dlock_innodb's history is InnoDB, as an older dlock
# made it), and no lock is left.
for ((i = N - 1; i >= 0; i--)); do
	[[ ${NAMES[$i]} == "dlock K true (tcp)" || ${NAMES[$i]} == "BASE dlock K true (tcp)" ]] &&
		{ run "$i" || die "${NAMES[$i]} failed: $(cat "$T/out")"; }
done
# dlock(1)'s tables, the history in InnoDB
awk '$0 == "## MySQL and MariaDB" { m = 1 } m && index($0, "*The fence.*") == 1 { f = 1 }
	f && /^```$/ { if (in_block) exit; in_block = 1; next } in_block && !/^GRANT/' \
	"$(dirname "$0")/../../man/dlock.1.scd" | sed 's/ENGINE=Aria TRANSACTIONAL=0/ENGINE=InnoDB/' >"$T/ddl.sql"
grep -q 'ENGINE=InnoDB;' "$T/ddl.sql" || die "no DDL in dlock(1)"
mariadb -S "$T/sock" -uroot dlock_innodb <"$T/ddl.sql" || die "cannot make dlock_innodb's tables"
for ((i = 0; i < N; i++)); do
	run "$i" || die "'${NAMES[$i]}' failed: $(head -c 300 "$T/out")"
done
left=$(mariadb -S "$T/sock" -uroot -N -B -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'dl'")
[[ $left == 0 ]] || die "$left connections left after the tools exited"

echo "mysql.sh: $ROUNDS rounds x $N tools (+$WARMUP warm-up rounds), interleaved ..." >&2
interleave mysql.sh

read -r FLOOR_MED _ < <(stats "$T/t2")

echo
echo "dlock on MariaDB: $ROUNDS interleaved rounds in ${elapsed}s; $VERSION on 127.0.0.1; load average $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -z $BASE ]] || echo "BASE: $BASE"
for db in dlock dlock_innodb dlock_base; do
	echo "$db.dlock_history: $(mariadb -S "$T/sock" -uroot -N -B -e "SELECT CONCAT(ENGINE, ' ', CREATE_OPTIONS) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$db' AND TABLE_NAME = 'dlock_history'")"
done
printf '%-28s %6s %10s %9s %9s %9s\n' tool runs "median ms" "p10 ms" "p90 ms" "x floor"
for ((i = 0; i < N; i++)); do
	read -r med p10 p90 < <(stats "$T/t$i")
	printf '%-28s %6d %10.2f %9.2f %9.2f %9.2f%s\n' "${NAMES[$i]}" \
		"$(wc -l <"$T/t$i")" "$med" "$p10" "$p90" \
		"$(awk -v a="$med" -v b="$FLOOR_MED" 'BEGIN { print a / b }')" \
		"$( ((FAILS[i] == 0)) || echo "  (${FAILS[i]} failed)")"
	# shellcheck disable=SC2046
	csv_row W1 "uncontended, MariaDB" "${NAMES[$i]}" "wall ms" ms $(csv_stats "$T/t$i")
done

# What each run costs, whatever the load: the server's flushes (redo log
# and data files: Innodb_data_fsyncs) and CPU (mariadbd's user + system
# time, in ticks of 10 ms: COST_RUNS runs to a row), and the client's CPU
# (the tool and its children), each tool COST_RUNS times in a row.
COST_RUNS=${COST_RUNS:-100}
fsyncs() {
	mariadb -S "$T/sock" -uroot -N -B -e "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_DATA_FSYNCS'"
}
server_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER/stat"; }
((COST_RUNS > 0)) || exit 0
echo
echo "per run, $COST_RUNS runs in a row each:"
printf '%-28s %9s %15s %15s\n' tool flushes "server CPU ms" "client CPU ms"
for ((i = 2; i < N; i++)); do
	[[ ${NAMES[$i]} == PyMySQL* ]] && continue
	f0=$(fsyncs) c0=$(server_ticks)
	TIMEFORMAT='%U %S'
	{ time { for ((r = 0; r < COST_RUNS; r++)); do run "$i" || true; done; } ; } 2>"$T/time"
	f1=$(fsyncs) c1=$(server_ticks)
	read -r cu cs <"$T/time"
	printf '%-28s %9.2f %15.2f %15.2f\n' "${NAMES[$i]}" \
		"$(awk -v a="$f0" -v b="$f1" -v n="$COST_RUNS" 'BEGIN { print (b - a) / n }')" \
		"$(awk -v a="$c0" -v b="$c1" -v n="$COST_RUNS" 'BEGIN { print (b - a) * 10 / n }')" \
		"$(awk -v u="$cu" -v s="$cs" -v n="$COST_RUNS" 'BEGIN { print (u + s) * 1000 / n }')"
done
