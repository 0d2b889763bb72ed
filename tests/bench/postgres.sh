#!/bin/bash
# postgres.sh: W1 on PostgreSQL, what one lock costs a shell script.
#
# `dlock -S postgres://... K true` against the C floor (a program that
# connects with libpq, takes pg_advisory_lock and writes the fence durably
# in the same statement, as dlock must, runs `true` and waits for it,
# releases the lock and ends: the least any tool can do), a psql wrapper (one psql session
# that takes the lock, runs `true` with \!, and unlocks), and flock and a
# bare `true` as yardsticks. Rounds rotate the order of the tools, so drift
# spreads over all alike. Prints medians and ratios to the C floor.
#
# Environment: DLOCK (default ./build/dlock), ROUNDS (default 100), WARMUP
# (5), CSV (append results, README.md), TRANSPORT (unix, the default, or
# tcp). Starts its own PostgreSQL (as the postgres user, in a temp dir under
# /tmp that user can reach) and stops it whatever happens. As root.
set -euo pipefail
export LC_ALL=C
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE

DLOCK=${DLOCK:-./build/dlock}
ROUNDS=${ROUNDS:-100}
WARMUP=${WARMUP:-5}
TRANSPORT=${TRANSPORT:-unix}

die() { echo "postgres.sh: $*" >&2; exit 1; }
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[[ -x $PGBIN/initdb ]] || die "no PostgreSQL server (apt-get install postgresql)"
for c in psql gcc pkg-config flock; do
	command -v "$c" >/dev/null || die "$c not found"
done
TRUE=$(type -P true)

. "$(dirname "$0")/lib.sh"	# wait_until, free_ports, csv_*, pg_start

T=$(mktemp -d /tmp/dlock-bench-pg.XXXXXX)
cleanup() {
	pg_stop "$T"
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

read -r PORT < <(free_ports 1)
pg_start "$T" "$PORT" -c fsync=off
PG_VERSION=$("$PGBIN/postgres" --version | awk '{print $3}')
# the fencing counter's table (dlock(1)), for the floor as for dlock
psql -h "$T" -p "$PORT" -U postgres -Atq -X -c "CREATE TABLE public.dlock_fences
	(lock_key bigint PRIMARY KEY, fence bigint NOT NULL)" postgres
if [[ $TRANSPORT == tcp ]]; then
	URL="postgres://postgres@127.0.0.1:$PORT/postgres"
	CONNINFO="host=127.0.0.1 port=$PORT user=postgres dbname=postgres"
	PSQL=(psql -h 127.0.0.1 -p "$PORT" -U postgres -Atq -X postgres)
else
	URL="postgres://postgres@/postgres?host=$T&port=$PORT"
	CONNINFO="host=$T port=$PORT user=postgres dbname=postgres"
	PSQL=(psql -h "$T" -p "$PORT" -U postgres -Atq -X postgres)
fi

# The C floor: connect, lock and write the next fence (committed with
# synchronous_commit, in the lock's statement), run the command (true, as
# the other engines' floors do), unlock, end; nothing dlock does besides.
cat >"$T/floor.c" <<'EOF'
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <libpq-fe.h>
extern char **environ;
int main(int argc, char **argv)
{
	PGconn *c = PQconnectdb(argv[1]);
	const char *key[] = { "dlock:K" };
	char *args[] = { argv[2], NULL };
	PGresult *r;
	pid_t pid;
	int st;

	if (PQstatus(c) != CONNECTION_OK)
		return 69;
	r = PQexecParams(c, "WITH l AS MATERIALIZED (SELECT pg_advisory_lock(hashtextextended($1, 0))), "
			 "f AS (INSERT INTO public.dlock_fences AS t (lock_key, fence) "
			 "SELECT hashtextextended($1, 0), (extract(epoch FROM clock_timestamp()) * 1000000)::bigint FROM l "
			 "ON CONFLICT (lock_key) DO UPDATE SET fence = GREATEST(t.fence + 1, excluded.fence) RETURNING t.fence) "
			 "SELECT fence FROM f", 1, NULL, key, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		return 70;
	PQclear(r);
	if (posix_spawn(&pid, args[0], NULL, NULL, args, environ) != 0 ||
	    waitpid(pid, &st, 0) < 0)
		return 71;
	r = PQexecParams(c, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", 1, NULL, key, NULL, NULL, 0);
	PQclear(r);
	PQfinish(c);
	return WEXITSTATUS(st);
}
EOF
# shellcheck disable=SC2046
gcc -O2 -o "$T/floor" "$T/floor.c" $(pkg-config --cflags --libs libpq)

run_tool() {
	case $1 in
	true) "$TRUE" ;;
	flock) flock "$T/flock" "$TRUE" ;;
	floor) "$T/floor" "$CONNINFO" "$TRUE" ;;
	dlock) "$DLOCK" -S "$URL" K "$TRUE" ;;
	psql) "${PSQL[@]}" -c "SELECT pg_advisory_lock(hashtextextended('dlock:K', 0))" \
		-c "\\! $TRUE" -c "SELECT pg_advisory_unlock(hashtextextended('dlock:K', 0))" >/dev/null ;;
	esac
}

TOOLS=(true flock floor dlock psql)
for t in "${TOOLS[@]}"; do
	run_tool "$t" >/dev/null || die "$t failed once before timing"
	: >"$T/$t.us"
done
echo "postgres.sh: $ROUNDS rounds x ${#TOOLS[@]} tools (+$WARMUP warm-up rounds), interleaved ..." >&2
for ((r = 0; r < ROUNDS + WARMUP; r++)); do
	for ((k = 0; k < ${#TOOLS[@]}; k++)); do
		t=${TOOLS[(k + r) % ${#TOOLS[@]}]}
		s=$EPOCHREALTIME
		run_tool "$t" >/dev/null
		e=$EPOCHREALTIME
		((r < WARMUP)) || echo $((${e/./} - ${s/./})) >>"$T/$t.us"
	done
done

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
floor_us=$(median "$T/floor.us")
echo
echo "W1 on PostgreSQL $PG_VERSION ($TRANSPORT): $ROUNDS interleaved rounds"
printf '%-34s %10s %10s\n' tool "median ms" "x floor"
for t in "${TOOLS[@]}"; do
	m=$(median "$T/$t.us")
	case $t in
	true) name="true" ;;
	flock) name="flock FILE true" ;;
	floor) name="C floor (libpq connect+lock+fence+unlock)" ;;
	dlock) name="dlock -S postgres://... K true" ;;
	psql) name="psql lock; \\! true; unlock" ;;
	esac
	printf '%-34s %10.2f %10.2f\n' "$name" "$(echo "$m / 1000" | bc -l)" "$(echo "$m / $floor_us" | bc -l)"
	read -r n med min max < <(csv_stats "$T/$t.us")
	csv_row W1 "postgres-$TRANSPORT" "$t" wall ms "$n" "$med" "$min" "$max"
done
