# postgres_helpers.bash - a real PostgreSQL for tests/postgres.bats, started
# once per file (setup_file) and stopped in teardown_file, pass or fail.
#
# PostgreSQL refuses to run as root: initdb and pg_ctl run as the postgres
# user, in a directory it can reach (not under bats' 0700 temp dir).
# Local connections (the unix socket) trust everyone; TCP asks for a
# password (scram-sha-256), so that credentials can be tested.

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)

# start_postgres: exports PGDIR, PGPORT, PG_URL (unix socket, user
# postgres), PG_TCP_URL (127.0.0.1, user dlock with password 'pw').
start_postgres() {
	[[ -x $PGBIN/initdb ]] || skip_unless_strict "no PostgreSQL server installed"
	PGDIR=$(mktemp -d /tmp/dlock-pg.XXXXXX)
	chmod 755 "$PGDIR"
	chown postgres "$PGDIR"
	runuser -u postgres -- "$PGBIN/initdb" --no-sync -U postgres -D "$PGDIR/data" \
		--auth-local=trust --auth-host=scram-sha-256 >"$PGDIR/initdb.log" 2>&1 ||
		{ cat "$PGDIR/initdb.log" >&3; return 1; }
	local try
	for try in 1 2 3; do	# another process may take the free port first
		PGPORT=$(free_port)
		pg_start && break
		PGPORT=
	done
	[[ -n $PGPORT ]] || { cat "$PGDIR/log" >&3; return 1; }
	export PGDIR PGPORT
	export PG_URL="postgres://postgres@/postgres?host=$PGDIR&port=$PGPORT"
	export PG_TCP_URL="postgres://dlock@127.0.0.1:$PGPORT/postgres"
	psql_ "CREATE ROLE dlock LOGIN PASSWORD 'pw'; CREATE ROLE nobody LOGIN;"
	pg_fence_table
}

# pg_fence_table: the fencing counter's table, as an administrator makes
# it for roles that may not (dlock(1)), writable by the role dlock
pg_fence_table() {
	psql_ "CREATE TABLE IF NOT EXISTS public.dlock_fences (lock_key bigint PRIMARY KEY, fence bigint NOT NULL);
		GRANT SELECT, INSERT, UPDATE ON public.dlock_fences TO dlock"
}

# pg_start: starts (again) the server of start_postgres, on PGPORT. fsync
# is off: a crash of the server (pg_crash) keeps what it wrote, as the
# kernel does; only what it had not written yet is lost.
pg_start() {
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -w -t 30 \
		-o "-k $PGDIR -p $PGPORT -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
		-l "$PGDIR/log" start >/dev/null 2>&1 3>&-
}

# pg_crash: the server stopped as a crash stops it (immediate: no
# checkpoint, unwritten WAL lost); pg_start recovers it.
pg_crash() {
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -m immediate stop >/dev/null 2>&1
}

stop_postgres() {
	[[ -n ${PGDIR:-} && -d $PGDIR ]] || return 0
	stop_pgbouncer
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -m immediate stop \
		>/dev/null 2>&1 || true
	rm -rf "$PGDIR"
}

# psql_ SQL: one statement or more, as the superuser, unaligned, quiet
psql_() { psql -h "$PGDIR" -p "$PGPORT" -U postgres -Atq -X -c "$1" postgres; }
# psql_each SQL: the same, SQL read as a file: each statement's result
psql_each() { psql -h "$PGDIR" -p "$PGPORT" -U postgres -Atq -X -v ON_ERROR_STOP=1 -f - postgres <<<"$1"; }

# readme_pg_block N: the Nth code block (indented 4) of the README's
# "### PostgreSQL", as the reader copies it
readme_pg_block() {
	awk -v want="$1" '
		/^### / { inside = $0 == "### PostgreSQL"; next }
		!inside { next }
		/^    / { if (!block) { n++; block = 1 } if (n == want) print substr($0, 5); next }
		{ block = 0 }' "$BATS_TEST_DIRNAME/../README.md"
}

# The advisory locks now held or awaited in the database.
advisory_locks() { psql_ "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"; }
no_advisory_lock() { [[ $(advisory_locks) == 0 ]]; }
dlock_sessions() { psql_ "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'dlock'"; }
no_dlock_session() { [[ $(dlock_sessions) == 0 ]]; }
# key_held KEY: a session holds the advisory lock of dlock's KEY
key_held() {
	[[ $(psql_ "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND objid = (hashtextextended('$1', 0) & 4294967295)::oid
		AND classid = ((hashtextextended('$1', 0) >> 32) & 4294967295)::oid") != 0 ]]
}
key_free() { ! key_held "$1"; }
# slot_held KEY I: a session holds slot I of --limit on dlock's KEY (the
# two-int lock on the halves of hashtextextended(KEY, I): objsubid 2)
slot_held() {
	[[ $(psql_ "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND objsubid = 2 AND objid = (hashtextextended('$1', $2) & 4294967295)::oid
		AND classid = ((hashtextextended('$1', $2) >> 32) & 4294967295)::oid") != 0 ]]
}
# waiting_on KEY: a session waits for it
waiting_on() {
	[[ $(psql_ "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
		AND objid = (hashtextextended('$1', 0) & 4294967295)::oid") != 0 ]]
}

# psql_hold KEY [SECONDS]: a psql session in the background takes dlock's
# KEY the way the man page says, holds it until $T/KEY.go exists (or
# SECONDS, default 60), and releases it; returns once it holds it.
psql_hold() {
	local key=$1 secs=${2:-60}
	# shellcheck disable=SC2016
	(
		exec 3>&-
		{
			echo "SELECT pg_advisory_lock(hashtextextended('$key', 0));"
			echo "\\o $T/$key.held"
			echo "SELECT 1;"
			echo "\\o"
			for ((n = 0; n < secs * 20; n++)); do
				[[ -e $T/$key.go ]] && break
				sleep 0.05
			done
			echo "SELECT pg_advisory_unlock(hashtextextended('$key', 0));"
		} | psql -h "$PGDIR" -p "$PGPORT" -U postgres -Atq -X postgres >/dev/null
	) &
	track $!
	wait_until 10 test -s "$T/$key.held" || fail "psql did not take $key"
}

# man_example TEXT: the man page's code block after the paragraph that
# starts with TEXT (its first line), as the reader sees it (scdoc's \\ is \)
man_example() {
	awk -v start="$1" '
		index($0, start) == 1 { found = 1 }
		found && /^```$/ { if (inside) exit; inside = 1; next }
		inside' "$BATS_TEST_DIRNAME/../man/dlock.1.scd" | sed 's/\\\\/\\/g'
}

# start_pgbouncer MODE [SETTING...]: a PgBouncer in front of the server, in
# pool_mode MODE, with the [pgbouncer] settings given ("name = value");
# exports BOUNCER_URL (for psql; dlock refuses it, a pooler it was not
# told of), BOUNCER_DLOCK_URL (the same, declaring session pooling to
# dlock: ?dlock_pooling=session) and BOUNCER_PID. One at a time
# (stop_pgbouncer; stop_postgres stops it too).
start_pgbouncer() {
	command -v pgbouncer >/dev/null || skip_unless_strict "pgbouncer is not installed"
	local mode=$1 port setting
	shift
	port=$(free_port)
	write_pgbouncer_ini "$PGDIR/pgbouncer" "$port" "$mode" "$@"
	rm -f "$PGDIR/pgbouncer.pid"
	runuser -u postgres -- pgbouncer -d "$PGDIR/pgbouncer.ini" 3>&-
	wait_until 10 test -s "$PGDIR/pgbouncer.pid" || fail "pgbouncer did not start"
	BOUNCER_PID=$(<"$PGDIR/pgbouncer.pid")
	export BOUNCER_URL="postgres://postgres@127.0.0.1:$port/postgres" BOUNCER_PID
	export BOUNCER_DLOCK_URL="$BOUNCER_URL?dlock_pooling=session"
}

# start_reuseport_pgbouncers N MODE [SETTING...]: N PgBouncers on one port
# (so_reuseport = 1: how PgBouncer uses more than one core; the kernel
# spreads the connections over them), as start_pgbouncer; their pids in
# $PGDIR/pgb-*.pid, stopped by stop_pgbouncer.
start_reuseport_pgbouncers() {
	command -v pgbouncer >/dev/null || skip_unless_strict "pgbouncer is not installed"
	local n=$1 mode=$2 port k
	shift 2
	port=$(free_port)
	for ((k = 1; k <= n; k++)); do
		write_pgbouncer_ini "$PGDIR/pgb-$k" "$port" "$mode" "so_reuseport = 1" "$@"
		runuser -u postgres -- pgbouncer -d "$PGDIR/pgb-$k.ini" 3>&-
		wait_until 10 test -s "$PGDIR/pgb-$k.pid" || fail "pgbouncer $k did not start"
	done
	export BOUNCER_URL="postgres://postgres@127.0.0.1:$port/postgres"
	export BOUNCER_DLOCK_URL="$BOUNCER_URL?dlock_pooling=session"
}

# write_pgbouncer_ini BASE PORT MODE [SETTING...]: BASE.ini, its pid file
# BASE.pid and log BASE.log
write_pgbouncer_ini() {
	local base=$1 port=$2 mode=$3 setting
	shift 3
	{
		echo "[databases]"
		echo "postgres = host=$PGDIR port=$PGPORT user=postgres"
		echo "[pgbouncer]"
		echo "listen_addr = 127.0.0.1"
		echo "listen_port = $port"
		echo "unix_socket_dir ="
		echo "auth_type = trust"
		echo "auth_file = $PGDIR/users.txt"
		echo "admin_users = postgres"
		echo "pool_mode = $mode"
		echo "pidfile = $base.pid"
		echo "logfile = $base.log"
		for setting; do echo "$setting"; done
	} >"$base.ini"
	echo '"postgres" ""' >"$PGDIR/users.txt"
	chown postgres "$base.ini" "$PGDIR/users.txt"
}

stop_pgbouncer() {
	local pid=${BOUNCER_PID:-} f other
	[[ -n $pid || ! -s ${PGDIR:-}/pgbouncer.pid ]] || pid=$(<"$PGDIR/pgbouncer.pid")
	for f in "${PGDIR:-/nonexistent}"/pgb-*.pid; do
		other=$(cat "$f" 2>/dev/null) || continue
		[[ -n $other ]] || continue
		kill "$other" 2>/dev/null
		wait_until 10 dead "$other"
		rm -f "$f"
	done
	[[ -n $pid ]] || return 0
	kill "$pid" 2>/dev/null
	wait_until 10 dead "$pid"
	rm -f "$PGDIR/pgbouncer.pid"
	BOUNCER_PID=
}

# bouncer_sql SQL: SQL through the PgBouncer, as a client of it
bouncer_sql() { psql "$BOUNCER_URL" -Atq -X -c "$1"; }
# no_bouncer_client: nobody is a client of database postgres through the
# PgBouncer (a killed dlock's connection closed: its backend is back in
# the pool)
no_bouncer_client() {
	[[ $(psql "${BOUNCER_URL%/postgres}/pgbouncer" -Atq -X -F ' ' -c "SHOW CLIENTS" |
		awk '$3 == "postgres"' | wc -l) == 0 ]]
}

# warm_pool N: N transactions at once through the PgBouncer, so that its
# pool has N server connections, idle when this returns
warm_pool() {
	local i pids=()
	for ((i = 0; i < $1; i++)); do
		bouncer_sql "SELECT pg_sleep(0.3)" >/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
}

# bouncer_traffic [SQL]: another client of the PgBouncer running one
# statement (SQL, default SELECT 1) after another until $T/traffic.stop
# exists
bouncer_traffic() {
	/usr/bin/python3 -c '
import os, sys, psycopg2
c = psycopg2.connect(sys.argv[1])
c.autocommit = True
cur = c.cursor()
while not os.path.exists(sys.argv[2]):
    cur.execute(sys.argv[3])' "$BOUNCER_URL" "$T/traffic.stop" "${1:-SELECT 1}" 3>&- &
	track $!
}

# start_lagging_proxy DELAY: a TCP relay in front of the PgBouncer whose
# every second connection (a dlock's pooler check's second client) has
# its bytes to the PgBouncer arrive DELAY seconds late, as after a lost
# segment's retransmission on that connection alone (TCP's RTO is at
# least 0.2 s); exports LAGGING_URL (declared session pooling)
start_lagging_proxy() {
	local port
	port=$(free_port)
	/usr/bin/python3 -c '
import asyncio, sys
lport, tport, delay, ready = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
count = 0
async def pipe(r, w, d):
    try:
        while (b := await r.read(65536)):
            if d:
                await asyncio.sleep(d)
            w.write(b)
            await w.drain()
    except Exception:
        pass
    finally:
        w.close()
async def handle(cr, cw):
    global count
    count += 1
    sr, sw = await asyncio.open_connection("127.0.0.1", tport)
    await asyncio.gather(pipe(cr, sw, delay if count % 2 == 0 else 0), pipe(sr, cw, 0))
async def main():
    s = await asyncio.start_server(handle, "127.0.0.1", lport)
    open(ready, "w").close()
    await s.serve_forever()
asyncio.run(main())' "$port" "$(sed -n 's/^listen_port = //p' "$PGDIR/pgbouncer.ini")" "$1" "$T/proxy.ready" 3>&- &
	track $!
	wait_until 10 test -e "$T/proxy.ready" || fail "the proxy did not start"
	export LAGGING_URL="postgres://postgres@127.0.0.1:$port/postgres?dlock_pooling=session"
}
