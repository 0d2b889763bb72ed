#!/bin/bash
# pghandoff.sh: W2 on PostgreSQL, contended handoff against flock.
#
# W workers (WORKERS, "4 16") each run SECTIONS critical sections one after
# another, every section a new process holding the lock: `dlock -S
# postgres://... K SECTION` against `flock FILE SECTION`, where SECTION is
# handoff.sh's bash appending "a <µs> <pid>" and "r <µs> <pid>" to a log.
# The C floor (libpq: connect, pg_advisory_lock and the fence row in one
# statement, the section, unlock) runs beside them: what any client that
# keeps a fence pays per section. Sections per second, x flock, x floor,
# the handoff (an acquire less the release before it) and a
# mutual-exclusion check, per tool, ROUNDS rounds interleaved. DLOCK2
# (another build, e.g. main's) is measured as a fourth tool when set.
#
# Environment: DLOCK (./build/dlock), DLOCK2, WORKERS, SECTIONS (100),
# ROUNDS (3), TRANSPORT (unix or tcp), PGOPTS (server options, e.g.
# "-c fsync=off"). As root: PostgreSQL runs as the
# postgres user, in a temp dir, with its default durability, and is
# stopped whatever happens.
set -euo pipefail
export LC_ALL=C
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE
unset BASH_ENV ENV

DLOCK=${DLOCK:-./build/dlock}
DLOCK2=${DLOCK2:-}
WORKERS=${WORKERS:-4 16}
SECTIONS=${SECTIONS:-100}
ROUNDS=${ROUNDS:-3}
TRANSPORT=${TRANSPORT:-unix}
PGOPTS=${PGOPTS:-}

die() { echo "pghandoff.sh: $*" >&2; exit 1; }
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")
[[ -z $DLOCK2 ]] || DLOCK2=$(realpath "$DLOCK2")
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[[ -x $PGBIN/initdb ]] || die "no PostgreSQL server (apt-get install postgresql)"
((EUID == 0)) || die "run as root: PostgreSQL runs as the postgres user"
BASH_BIN=$(type -P bash)

. "$(dirname "$0")/lib.sh"	# free_ports, pg_start, pg_stop

T=$(mktemp -d /tmp/dlock-pghandoff.XXXXXX)
cleanup() {
	pg_stop "$T"
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

read -r PORT < <(free_ports 1)
# shellcheck disable=SC2086	# PGOPTS: server options, one word each
pg_start "$T" "$PORT" $PGOPTS
if [[ $TRANSPORT == tcp ]]; then
	URL="postgres://postgres@127.0.0.1:$PORT/postgres"
else
	URL="postgres://postgres@/postgres?host=$T&port=$PORT"
fi

# The C floor, as postgres.sh's but waiting: connect, one statement that
# waits in pg_advisory_lock and writes the next fence (committed with
# synchronous_commit on), the section, the unlock, the end: the least a
# tool that keeps a fence can do per section.
cat >"$T/floor.c" <<'EOF'
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <libpq-fe.h>
extern char **environ;
int main(int argc, char **argv)
{
	PGconn *c = PQconnectdb(argv[1]);
	const char *key[] = { "dlock:w2" };
	PGresult *r;
	pid_t pid;
	int st;

	if (argc < 3 || PQstatus(c) != CONNECTION_OK)
		return 69;
	r = PQexecParams(c, "WITH l AS MATERIALIZED (SELECT pg_advisory_lock(hashtextextended($1, 0))), "
			 "f AS (INSERT INTO public.dlock_fences AS t (lock_key, fence) "
			 "SELECT hashtextextended($1, 0), (extract(epoch FROM clock_timestamp()) * 1000000)::bigint FROM l "
			 "ON CONFLICT (lock_key) DO UPDATE SET fence = GREATEST(t.fence + 1, excluded.fence) RETURNING t.fence) "
			 "SELECT fence FROM f", 1, NULL, key, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK)
		return 70;
	PQclear(r);
	if (posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ) != 0 ||
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
psql -h "$T" -p "$PORT" -U postgres -Atq -X -c "CREATE TABLE public.dlock_fences
	(lock_key bigint PRIMARY KEY, fence bigint NOT NULL)" postgres
if [[ $TRANSPORT == tcp ]]; then
	CONNINFO="host=127.0.0.1 port=$PORT user=postgres dbname=postgres"
else
	CONNINFO="host=$T port=$PORT user=postgres dbname=postgres"
fi

# shellcheck disable=SC2016
SECTION_SH='echo a ${EPOCHREALTIME/./} $$ >>"$0"; echo r ${EPOCHREALTIME/./} $$ >>"$0"'
TOOLS=(flock floor dlock)
[[ -z $DLOCK2 ]] || TOOLS+=(dlock2)

section() {	# section TOOL LOG
	case $1 in
	flock) flock "$T/flock" "$BASH_BIN" -c "$SECTION_SH" "$2" ;;
	floor) "$T/floor" "$CONNINFO" "$BASH_BIN" -c "$SECTION_SH" "$2" ;;
	dlock) "$DLOCK" -S "$URL" w2 "$BASH_BIN" -c "$SECTION_SH" "$2" ;;
	dlock2) "$DLOCK2" -S "$URL" w2 "$BASH_BIN" -c "$SECTION_SH" "$2" ;;
	esac
}

run_round() {	# run_round TOOL W: prints "sections/s handoff_median_ms overlaps"
	local tool=$1 w=$2 log=$T/$1.$2.log s e k
	: >"$log"
	s=$EPOCHREALTIME
	for ((k = 0; k < w; k++)); do
		( for ((j = 0; j < SECTIONS; j++)); do section "$tool" "$log" || exit 1; done ) &
	done
	wait
	e=$EPOCHREALTIME
	awk -v s="${s/./}" -v e="${e/./}" '
		$1 == "a" { if (h != "") bad++; h = $3; n++; if (have) hand[++m] = $2 - last }
		$1 == "r" { if (h != $3) bad++; h = ""; last = $2; have = 1 }
		END {
			asort(hand)
			med = m ? ((m % 2) ? hand[(m + 1) / 2] : (hand[m / 2] + hand[m / 2 + 1]) / 2) : 0
			printf "%.1f %.2f %d\n", n / ((e - s) / 1e6), med / 1000, bad + 0
		}' "$log"
}

# every tool works once before anything is timed (a build that cannot
# find its engine would count as 0 sections/s)
for t in "${TOOLS[@]}"; do
	: >"$T/check.log"
	section "$t" "$T/check.log" || die "$t: one section failed (exit $?)"
	[[ $(wc -l <"$T/check.log") == 2 ]] || die "$t: the section did not run"
done
echo "pghandoff.sh: PostgreSQL $("$PGBIN/postgres" --version | awk '{ print $3 }') ($TRANSPORT), $ROUNDS rounds x $SECTIONS sections a worker, load $(cut -d ' ' -f 1-3 /proc/loadavg)" >&2
for w in $WORKERS; do
	for t in "${TOOLS[@]}"; do : >"$T/res.$t.$w"; done
	for ((r = 0; r < ROUNDS; r++)); do
		for ((k = 0; k < ${#TOOLS[@]}; k++)); do
			t=${TOOLS[(k + r) % ${#TOOLS[@]}]}
			run_round "$t" "$w" >>"$T/res.$t.$w"
		done
	done
done
echo
echo "| workers | tool | sections/s (median of rounds) | x flock | x floor | handoff ms (median) | overlaps |"
echo "|---|---|---|---|---|---|---|"
for w in $WORKERS; do
	f=$(sort -n "$T/res.flock.$w" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	c=$(sort -n "$T/res.floor.$w" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	for t in "${TOOLS[@]}"; do
		sort -n "$T/res.$t.$w" | awk -v w="$w" -v t="$t" -v f="$f" -v c="$c" '
			{ s[NR] = $1; h[NR] = $2; b += $3 }
			END {
				m = s[int((NR + 1) / 2)]; n = asort(h)
				printf "| %s | %s | %.1f | %.2f | %.2f | %.2f | %d |\n", w, t, m, m / f, (c > 0 ? m / c : 0), h[int((n + 1) / 2)], b
			}'
	done
done
echo "load $(cut -d ' ' -f 1-3 /proc/loadavg)"
