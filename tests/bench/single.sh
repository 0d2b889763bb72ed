#!/bin/bash
# single.sh: what one lock costs a shell script, with one Redis server.
#
# `dlock K true` against the C floor (a hiredis program doing the same
# SET NX PX and compare-and-delete, with and without the fence's and
# history's writes), `flock FILE true` and a bare `true`, and, as
# yardsticks, `etcdctl lock K true`, one redis-cli run sending the
# SET NX PX + compare-and-delete EVAL pair, and redis-py's Lock around
# `true` in a python3 process.  Every round runs every tool
# once, in an order that rotates from round to round, so that drift (CPU
# frequency, page cache, a noisy neighbour) spreads over all tools alike.
# Prints medians, 90th percentiles and ratios to flock and to the C
# floor, then peak RSS.
#
# Environment: DLOCK (default ./build/dlock), ROUNDS (default 200),
# WARMUP (default 5 rounds, not counted), RSS_RUNS (default 5), REDISPY
# (auto; 0 skips redis-py), CSV (a file to append results to, README.md),
# MAX_SECONDS (0; else fewer rounds when more would take longer), BASE
# (another dlock binary, e.g. main's, run as two more tools in the same
# rounds: a change compared with its base on a loaded machine).
# Starts its own redis-server (TCP on a free loopback port and a unix
# socket) and, if installed, its own etcd, in a temp dir; stops them by PID
# and removes the dir whatever happens.  Only 127.0.0.1 is contacted.
set -euo pipefail
export LC_ALL=C	# EPOCHREALTIME's decimal point
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE

DLOCK=${DLOCK:-./build/dlock}
ROUNDS=${ROUNDS:-200}
WARMUP=${WARMUP:-5}
RSS_RUNS=${RSS_RUNS:-5}
REDISPY=${REDISPY:-auto}

die() { echo "single.sh: $*" >&2; exit 1; }
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")
BASE=${BASE:-}
[[ -z $BASE || -x $BASE ]] || die "no dlock binary at BASE='$BASE'"
for c in redis-server redis-cli flock python3; do
	command -v "$c" >/dev/null || die "$c not found"
done
TRUE=$(type -P true)	# the program, not bash's builtin

T=$(mktemp -d "${TMPDIR:-/tmp}/dlock-single.XXXXXX")
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

. "$(dirname "$0")/lib.sh"	# wait_until, free_ports, find_redispy, csv_*

# --- servers -----------------------------------------------------------
read -r RPORT ECPORT EPPORT < <(free_ports 3)
redis-server --port "$RPORT" --bind 127.0.0.1 --unixsocket "$T/redis.sock" \
	--dir "$T" --save '' --appendonly no >"$T/redis.log" 2>&1 &
PIDS+=($!)
wait_until 30 redis-cli -s "$T/redis.sock" ping || die "redis-server did not start: $(tail -n 3 "$T/redis.log")"
REDIS_VERSION=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')

HAVE_ETCD=0
if command -v etcd >/dev/null && command -v etcdctl >/dev/null; then
	EURL=http://127.0.0.1:$ECPORT
	etcd --name bench --data-dir "$T/etcd" \
		--listen-client-urls "$EURL" --advertise-client-urls "$EURL" \
		--listen-peer-urls "http://127.0.0.1:$EPPORT" \
		--initial-advertise-peer-urls "http://127.0.0.1:$EPPORT" \
		--initial-cluster "bench=http://127.0.0.1:$EPPORT" \
		--logger zap --log-level error >"$T/etcd.log" 2>&1 &
	PIDS+=($!)
	export ETCDCTL_API=3
	if wait_until 20 etcdctl --endpoints="$EURL" endpoint health; then
		HAVE_ETCD=1
	else
		echo "single.sh: etcd did not start, skipping etcdctl: $(tail -n 2 "$T/etcd.log")" >&2
	fi
fi

PY=
if [[ $REDISPY != 0 ]]; then
	find_redispy || echo "single.sh: no python3 with redis-py (apt-get install python3-redis), skipping it" >&2
fi

# --- the tools ---------------------------------------------------------
# Each is one command line, run by bash exactly as a script would run it.
TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
CAD="if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
printf 'SET dlock:bench-cli %s NX PX 30000\nEVAL "%s" 1 dlock:bench-cli %s\n' \
	"$TOKEN" "$CAD" "$TOKEN" >"$T/cli.txt"
PYLOCK='import subprocess, sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
with r.lock("dlock:bench-py", timeout=30):
    rc = subprocess.call(sys.argv[2:])
sys.exit(rc)'

# The C floor: a hand-written hiredis program doing what dlock must, in
# blocking calls and nothing else: connect, SET NX PX, posix_spawn the
# command and wait for it, the compare-and-delete by EVALSHA, close.
# "fenced": the acquisition with the fence and an "acquired" event in one
# script, the release with a "released" event in another (servercost.py's
# floor scripts: the writes dlock's fence and history make, fewest calls).
HAVE_FLOOR=0
if command -v cc >/dev/null && [[ -e /usr/include/hiredis/hiredis.h ]]; then
	cat >"$T/floor.c" <<'EOC'
#include <hiredis/hiredis.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
/* floor HOST PORT|SOCKET 0 plain|fenced KEY SHA [SHA2] CMD... */
int main(int argc, char **argv)
{
	redisContext *c;
	redisReply *r;
	char tok[33], fence[24] = "0";
	unsigned char raw[16];
	int fenced, i, st, ok;
	char **cmd;
	pid_t pid;

	if (argc < 7)
		return 64;
	fenced = !strcmp(argv[3], "fenced");
	cmd = argv + (fenced ? 7 : 6);
	c = argv[1][0] == '/' ? redisConnectUnix(argv[1]) :
		redisConnect(argv[1], atoi(argv[2]));
	if (!c || c->err || getentropy(raw, sizeof raw))
		return 69;
	for (i = 0; i < 16; i++)
		sprintf(tok + 2 * i, "%02x", raw[i]);
	if (fenced) {
		r = redisCommand(c, "EVALSHA %s 4 %s {%s}:fence {%s}:owner {%s}:history %s 30000 h 100",
				 argv[5], argv[4], argv[4], argv[4], argv[4], tok);
		ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2;
		if (ok)
			snprintf(fence, sizeof fence, "%lld", r->element[1]->integer);
	} else {
		r = redisCommand(c, "SET %s %s NX PX 30000", argv[4], tok);
		ok = r && r->type == REDIS_REPLY_STATUS;
	}
	freeReplyObject(r);
	if (!ok)
		return 1;
	if (posix_spawn(&pid, cmd[0], NULL, NULL, cmd, environ) != 0 ||
	    waitpid(pid, &st, 0) < 0)
		return 71;
	if (fenced)
		r = redisCommand(c, "EVALSHA %s 3 %s {%s}:owner {%s}:history %s 100 h %s",
				 argv[6], argv[4], argv[4], argv[4], tok, fence);
	else
		r = redisCommand(c, "EVALSHA %s 1 %s %s", argv[5], argv[4], tok);
	ok = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	freeReplyObject(r);
	redisFree(c);
	return ok ? WEXITSTATUS(st) : 70;
}
EOC
	if cc -O2 -o "$T/floor" "$T/floor.c" -lhiredis 2>"$T/floor.err"; then
		HAVE_FLOOR=1
		CAD_SHA=$(redis-cli -p "$RPORT" script load "$CAD")
		python3 - "$(dirname "$0")/servercost.py" "$T" <<'EOP'
import ast, re, sys
src = open(sys.argv[1]).read()
for name, f in (("FLOOR_ACQUIRE", "acq.lua"), ("FLOOR_RELEASE", "rel.lua")):
	m = re.search(name + r' = (""".*?""")', src, re.S)
	open(sys.argv[2] + "/" + f, "w").write(ast.literal_eval(m.group(1)))
EOP
		ACQ_SHA=$(redis-cli -p "$RPORT" -x script load <"$T/acq.lua")
		REL_SHA=$(redis-cli -p "$RPORT" -x script load <"$T/rel.lua")
	else
		echo "single.sh: cannot compile the C floor, skipping it: $(head -c 300 "$T/floor.err")" >&2
	fi
else
	echo "single.sh: no cc or hiredis (apt-get install libhiredis-dev), skipping the C floor" >&2
fi

NAMES=() CMDS=()
tool() {	# tool NAME COMMAND [ARG...]: CMDS gets it quoted, for eval
	NAMES+=("$1"); shift
	CMDS+=("$(printf '%q ' "$@")")
}
tool "true"                  "$TRUE"
# Every tool gets true by the same absolute path, as the C floor needs it:
# no tool pays a PATH search that another does not (~20 us in dlock).
tool "flock FILE true"       flock "$T/flock.lock" "$TRUE"
tool "dlock K true (tcp)"    "$DLOCK" -S "redis://127.0.0.1:$RPORT" bench-tcp "$TRUE"
tool "dlock K true (unix)"   "$DLOCK" -S "unix:$T/redis.sock" bench-unix "$TRUE"
if ((HAVE_FLOOR)); then
	tool "floor: C hiredis (tcp)"  "$T/floor" 127.0.0.1 "$RPORT" plain dlock:bench-fl "$CAD_SHA" "$TRUE"
	tool "floor: C hiredis (unix)" "$T/floor" "$T/redis.sock" 0 plain dlock:bench-flu "$CAD_SHA" "$TRUE"
	tool "floor: C fenced (tcp)"   "$T/floor" 127.0.0.1 "$RPORT" fenced dlock:bench-ff "$ACQ_SHA" "$REL_SHA" "$TRUE"
fi
[[ -n $BASE ]] && tool "base K true (tcp)"  "$BASE" -S "redis://127.0.0.1:$RPORT" bench-btcp "$TRUE"
[[ -n $BASE ]] && tool "base K true (unix)" "$BASE" -S "unix:$T/redis.sock" bench-bunix "$TRUE"
tool "redis-cli SET NX+EVAL" redis-cli -p "$RPORT"	# stdin: cli.txt
((HAVE_ETCD)) && tool "etcdctl lock K true" etcdctl --endpoints="$EURL" lock bench "$TRUE"
[[ -n $PY ]] && tool "redis-py Lock K true" "$PY" -c "$PYLOCK" "$RPORT" "$TRUE"
N=${#NAMES[@]}

input() {	# input I: what tool I reads on stdin
	if [[ ${NAMES[$1]} == redis-cli* ]]; then echo "$T/cli.txt"; else echo /dev/null; fi
}
INPUTS=()
for ((i = 0; i < N; i++)); do INPUTS+=("$(input "$i")"); done
run() {	# run I: run tool I once, silently; its status
	eval "${CMDS[$1]}" <"${INPUTS[$1]}" >"$T/out" 2>&1
}

# Sanity: every tool works, and dlock leaves no lock behind.
for ((i = 0; i < N; i++)); do
	run "$i" || die "'${NAMES[$i]}' failed: $(head -c 300 "$T/out")"
done
if [[ $(redis-cli -p "$RPORT" exists dlock:bench-tcp dlock:bench-unix dlock:bench-cli dlock:bench-py \
	dlock:bench-btcp dlock:bench-bunix dlock:bench-fl dlock:bench-flu dlock:bench-ff) != 0 ]]; then
	die "a lock key is still there after its holder exited"
fi
if [[ $(redis-cli -p "$RPORT" <"$T/cli.txt") != $'OK\n1' ]]; then
	die "redis-cli SET NX + EVAL did not answer OK, 1"
fi

# --- interleaved runs --------------------------------------------------
echo "single.sh: $ROUNDS rounds x $N tools (+$WARMUP warm-up rounds), interleaved ..." >&2
interleave single.sh

read -r FLOCK_MED _ < <(stats "$T/t1")
read -r TRUE_MED _ < <(stats "$T/t0")
FLOOR_TCP='' FLOOR_UNIX=''
for ((i = 0; i < N; i++)); do
	[[ ${NAMES[$i]} == "floor: C hiredis (tcp)" ]] && read -r FLOOR_TCP _ < <(stats "$T/t$i")
	[[ ${NAMES[$i]} == "floor: C hiredis (unix)" ]] && read -r FLOOR_UNIX _ < <(stats "$T/t$i")
done
x_floor() {	# x_floor NAME MEDIAN: over the C floor's on the same transport
	local f=$FLOOR_TCP
	[[ $1 == *unix* ]] && f=$FLOOR_UNIX
	if [[ -z $f ]]; then echo -; else awk -v a="$2" -v b="$f" 'BEGIN { printf "%.2f", a / b }'; fi
}

echo
echo "dlock single-server benchmark: $ROUNDS interleaved rounds in ${elapsed}s;" \
	"redis $REDIS_VERSION on 127.0.0.1 (--save '')"
printf '%-24s %6s %10s %9s %9s %9s %9s %9s\n' tool runs "median ms" "p10 ms" "p90 ms" "x flock" "x floor" "-true ms"
for ((i = 0; i < N; i++)); do
	read -r med p10 p90 < <(stats "$T/t$i")
	printf '%-24s %6d %10.2f %9.2f %9.2f %9.2f %9s %9.2f%s\n' "${NAMES[$i]}" \
		"$(wc -l <"$T/t$i")" "$med" "$p10" "$p90" \
		"$(awk -v a="$med" -v b="$FLOCK_MED" 'BEGIN { print a / b }')" \
		"$(x_floor "${NAMES[$i]}" "$med")" \
		"$(awk -v a="$med" -v b="$TRUE_MED" 'BEGIN { print a - b }')" \
		"$( ((FAILS[i] == 0)) || echo "  (${FAILS[i]} failed)")"
	# shellcheck disable=SC2046
	csv_row W1 "uncontended, 1 server" "${NAMES[$i]}" "wall ms" ms $(csv_stats "$T/t$i")
done

# --- peak RSS ----------------------------------------------------------
# GNU time reports the process's own peak and that of the children it waited
# for (Linux wait4), whichever is larger; `true` is far smaller than any tool.
rss_once() {	# rss_once I: peak RSS of one run of tool I, KiB
	eval "/usr/bin/time -f %M -o \"\$T/rss\" ${CMDS[$1]}" \
		<"${INPUTS[$1]}" >/dev/null 2>&1 || true
	tail -n 1 "$T/rss"
}
maxrss() {	# maxrss I: "runs median min max" peak RSS over RSS_RUNS runs, KiB
	local j
	for ((j = 0; j < RSS_RUNS; j++)); do rss_once "$1"; done >"$T/rss.all"
	csv_stats "$T/rss.all" 1
}
# A python or bash wrapper would not do: the RSS it had before exec counts.
if [[ ! -x /usr/bin/time ]] && ((EUID == 0)); then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null 2>&1 || true
fi
echo
if [[ -x /usr/bin/time ]]; then
	echo "peak RSS, KiB (median of $RSS_RUNS runs, /usr/bin/time -f %M)"
	for ((i = 0; i < N; i++)); do
		read -r n med min max < <(maxrss "$i")
		printf '%-24s %8.0f\n' "${NAMES[$i]}" "$med"
		csv_row W4 "peak RSS" "${NAMES[$i]}" "peak RSS" KiB "$n" "$med" "$min" "$max"
	done
else
	echo "peak RSS: not measured (no /usr/bin/time: apt-get install time)"
fi
