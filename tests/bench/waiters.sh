#!/bin/bash
# waiters.sh (W5): a thousand waiters on one key.
#
# A holder takes the key and holds it; WAITERS dlock processes then wait
# for it, started in batches.  While the holder holds, the waiters are
# idle: what do they cost the server?  Counted over IDLE seconds, once
# every waiter has waited SETTLE seconds: top-level requests (MONITOR,
# calls made by scripts left out) and scripts (EVALSHA/EVAL, INFO
# commandstats) per second, in all and per waiter; the server's
# used_memory before the waiters came and with them; the waiters' RSS.
# Then the holder releases and every waiter runs its section in turn (a
# bash appending "a <µs> <pid>" and "r <µs> <pid>" to a log): the
# release-to-next-start latency of each handoff (the first, from the
# holder, and median/p90/max of all), scripts per section, and whether
# all of them finished, exit status 0, within DEADLINE.
#
# Environment: DLOCK (default ./build/dlock), WAITERS (1000), BATCH (50
# started at a time, each batch once the one before is blocked), SETTLE
# (6 s), IDLE (10 s), DEADLINE (120 s for the handoffs), NICE (-10 as root,
# else 0: the server's niceness, so that a busy machine starves it less).
# The waiters run with -w 900, so that a server too busy to answer at
# once costs them retries, not the wait (without -w they give up after
# about 3 s of failures); waiters that fail all the same are counted.
# Starts its own
# redis-server on a unix socket (--save '', maxclients 3 a waiter) in a
# temp dir; stops the waiters (SIGTERM, then SIGKILL, by process group),
# MONITOR and the server by PID, and removes the dir, whatever happens.
# Takes one to two minutes; raises `ulimit -n` to what it needs.
set -euo pipefail
set -m	# every background job a process group of its own, to stop whole
export LC_ALL=C	# EPOCHREALTIME's decimal point
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE
unset BASH_ENV ENV

DLOCK=${DLOCK:-./build/dlock}
WAITERS=${WAITERS:-1000}
BATCH=${BATCH:-50}
SETTLE=${SETTLE:-6}
IDLE=${IDLE:-10}
DEADLINE=${DEADLINE:-120}
NICE=${NICE:-$( ((EUID == 0)) && echo -10 || echo 0)}

die() { echo "waiters.sh: $*" >&2; exit 1; }
note() { echo "waiters.sh: $*" >&2; }
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")
for c in redis-server redis-cli ps; do
	command -v "$c" >/dev/null || die "$c not found"
done

# Two connections a waiter (its tries, its BLPOP), as many again for a try
# that timed out and reconnected before the server closed the old one, a
# few for the holder and this script; Redis needs 32 descriptors more.
MAXCLIENTS=$((3 * WAITERS + 100))
want=$((MAXCLIENTS + 64))
if (($(ulimit -n) < want)); then
	ulimit -n "$want" 2>/dev/null ||
		die "ulimit -n $want refused (hard limit $(ulimit -Hn)): fewer WAITERS?"
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/dlock-waiters.XXXXXX")
PIDS=()	# process groups: the holder, the waiters
SERVER='' MON=''
alive_any() {
	local p
	for p in "${PIDS[@]}"; do kill -0 -- "-$p" 2>/dev/null && return 0; done
	return 1
}
cleanup() {
	local p n
	for p in "${PIDS[@]}"; do kill -- "-$p" 2>/dev/null || true; done
	for ((n = 0; n < 40; n++)); do alive_any || break; sleep 0.05; done
	for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ -n $MON ]]; then
		kill "$MON" 2>/dev/null || true
		wait "$MON" 2>/dev/null || true
	fi
	if [[ -n $SERVER ]]; then
		kill "$SERVER" 2>/dev/null || true
		wait "$SERVER" 2>/dev/null || true
	fi
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

. "$(dirname "$0")/lib.sh"	# wait_until
now_us() { echo "${EPOCHREALTIME/./}"; }

SOCK=$T/redis.sock
nice -n "$NICE" redis-server --port 0 --unixsocket "$SOCK" --dir "$T" --save '' \
	--appendonly no --maxclients "$MAXCLIENTS" >"$T/redis.log" 2>&1 &
SERVER=$!
wait_until 5 redis-cli -s "$SOCK" ping || die "redis-server did not start: $(tail -n 3 "$T/redis.log")"
REDIS_VERSION=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
rcli() { redis-cli -s "$SOCK" "$@"; }
info() {	# info SECTION FIELD
	rcli INFO "$1" | tr -d '\r' | sed -n "s/^$2://p"
}
[[ $(rcli CONFIG GET maxclients | sed -n 2p) -ge $MAXCLIENTS ]] ||
	die "redis-server lowered maxclients: $(grep -i maxclients "$T/redis.log" | head -n 1)"

# The section every waiter runs once it has the lock, and the holder's,
# which stamps the same way but waits for $T/go first.
BASH_BIN=$(type -P bash)
# shellcheck disable=SC2016
SECTION_SH='echo a ${EPOCHREALTIME/./} $$ >>"$0"; echo r ${EPOCHREALTIME/./} $$ >>"$0"'
# shellcheck disable=SC2016
HOLDER_SH='echo a ${EPOCHREALTIME/./} $$ >>"$0"; : >"$0.ready"
	while [ ! -e "$0.go" ]; do sleep 0.01; done
	echo r ${EPOCHREALTIME/./} $$ >>"$0"'
LOG=$T/log
: >"$LOG"

# --- the holder, then the waiters ------------------------------------------
used0=$(info memory used_memory)
"$DLOCK" -S "unix:$SOCK" -t 60 w5 "$BASH_BIN" -c "$HOLDER_SH" "$LOG" \
	>/dev/null 2>"$T/holder.err" </dev/null &
HOLDER=$!
PIDS+=($!)
wait_until 5 test -e "$LOG.ready" || die "the holder did not start: $(cat "$T/holder.err")"
# waiters blocked in BLPOP (not the holder's BRPOP)
blocked() { rcli CLIENT LIST | grep -c ' flags=b[^ ]* .* cmd=blpop ' || true; }
gone() {	# waiters that have exited (failed: none can have the lock yet)
	local p n=0
	for p in "${WPIDS[@]}"; do kill -0 "$p" 2>/dev/null || n=$((n + 1)); done
	echo "$n"
}
t_start=$SECONDS
WPIDS=()
for ((n = 0; n < WAITERS; n += BATCH)); do
	for ((j = n; j < n + BATCH && j < WAITERS; j++)); do
		"$DLOCK" -S "unix:$SOCK" -t 60 -w 900 w5 "$BASH_BIN" -c "$SECTION_SH" "$LOG" \
			>/dev/null 2>>"$T/errors" </dev/null &
		WPIDS+=($!)
		PIDS+=($!)
	done
	t_batch=$SECONDS
	until (($(blocked) + $(gone) >= j)); do
		((SECONDS - t_batch < 60)) ||
			die "only $(blocked) of $j waiters blocked 60 s after their batch started: $(sort "$T/errors" | uniq -c | head -n 3)"
		sleep 0.2
	done
done
failed_start=$(gone)
started_s=$((SECONDS - t_start))
note "$WAITERS waiters blocked after ${started_s}s; settling ${SETTLE}s, then ${IDLE}s idle"
sleep "$SETTLE"

# --- idle: what the waiters cost ---------------------------------------
rss=$(ps -o rss= -p "$(IFS=,; echo "${WPIDS[*]}")" | sort -n |
	awk '{ v[NR] = $1; s += $1 } END { printf "%d %d %d", v[int((NR + 1) / 2)], v[NR], s / 1024 }')
used1=$(info memory used_memory)
redis-cli -s "$SOCK" MONITOR >"$T/monitor" 2>&1 </dev/null &
MON=$!
wait_until 5 grep -q OK "$T/monitor" || die "MONITOR did not start"
rcli CONFIG RESETSTAT >/dev/null
s=$(now_us)
sleep "$IDLE"
e=$(now_us)
rcli INFO commandstats | tr -d '\r' >"$T/idle.stats"
kill -INT "$MON" 2>/dev/null || true	# SIGINT: no "Terminated" line
wait "$MON" 2>/dev/null || true
MON=
# Top-level requests: MONITOR's lines in the window (its times are the
# server's clock, this host's) less those a script ran ("[0 lua]") and
# this script's own (INFO, CONFIG).
read -r top scripts < <(
	awk -v s="$s" -v e="$e" '/^[0-9.]+ \[/ && $3 != "lua]" &&
		$4 !~ /^"(INFO|info|CONFIG|config)"$/ { t = $1 * 1e6; if (t >= s && t <= e) n++ }
	END { printf "%d ", n + 0 }' "$T/monitor"
	awk -F'[_:=,]' '$2 == "evalsha" || $2 == "eval" { x += $4 } END { print x + 0 }' "$T/idle.stats")
all=$(awk -F'[_:=,]' '/^cmdstat_/ && $2 !~ /^(info|config)/ { x += $4 } END { print x + 0 }' "$T/idle.stats")
secs=$(awk -v s="$s" -v e="$e" 'BEGIN { print (e - s) / 1e6 }')

# --- the handoffs ------------------------------------------------------------
rcli CONFIG RESETSTAT >/dev/null
h0=$(now_us)
: >"$LOG.go"
end=$((SECONDS + DEADLINE))
left=$WAITERS
while ((left > 0 && SECONDS < end)); do
	left=0
	for p in "${WPIDS[@]}"; do kill -0 "$p" 2>/dev/null && left=$((left + 1)); done
	((left == 0)) || sleep 0.1
done
h1=$(now_us)
ok=0
for p in "${WPIDS[@]}"; do
	if kill -0 "$p" 2>/dev/null; then
		:
	elif wait "$p"; then
		ok=$((ok + 1))
	fi
done
wait "$HOLDER" || note "the holder's dlock exited $?: $(cat "$T/holder.err")"
hscripts=$(rcli INFO commandstats | tr -d '\r' |
	awk -F'[_:=,]' '$2 == "evalsha" || $2 == "eval" { x += $4 } END { print x + 0 }')
# Each acquire's "a" less the "r" just before it; an "a" while another
# holds, or an "r" from another pid than the holder's, is a violation.
read -r sections bad < <(awk -v h="$T/hand" '
	$1 == "a" { if (holder != "") bad++; holder = $3; n++
		    if (have_r) print $2 - last_r >h }
	$1 == "r" { if (holder != $3) bad++; holder = ""; last_r = $2; have_r = 1 }
	END { printf "%d %d\n", n, bad + 0 }' "$LOG")
first=$(head -n 1 "$T/hand" 2>/dev/null || echo 0)
read -r med p90 max < <(sort -n "$T/hand" | awk '{ v[NR] = $1 }
	END {
		if (!NR) { print "- - -"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.2f %.2f %.1f\n", m / 1000, v[int(0.9 * (NR - 1)) + 1] / 1000, v[NR] / 1000
	}')

echo
echo "dlock W5: $WAITERS waiters on one key; redis $REDIS_VERSION on a unix socket" \
	"(--save '', nice $NICE); $(nproc) CPUs, load $(cut -d ' ' -f 1-3 /proc/loadavg);" \
	"$("$DLOCK" --version 2>/dev/null | head -n 1)"
echo "started in batches of $BATCH, all blocked after ${started_s}s$( ((failed_start == 0)) || echo " (but $failed_start failed)");" \
	"idle window ${secs}s after ${SETTLE}s more"
awk -v w="$WAITERS" -v t="$secs" -v top="$top" -v x="$scripts" -v all="$all" 'BEGIN {
	printf "idle, server side: %.1f requests/s (%.3f per waiter, one every %.2f s);", top / t, top / t / w, top ? t * w / top : 0
	printf " %.1f scripts/s (%.3f per waiter); %.0f commands/s with the calls scripts make\n", x / t, x / t / w, all / t
}'
awk -v a="$used0" -v b="$used1" -v w="$WAITERS" 'BEGIN {
	printf "server used_memory: %.2f MiB before the waiters, %.2f MiB with them (%.1f KiB per waiter)\n", a / 1048576, b / 1048576, (b - a) / 1024 / w
}'
read -r rss_med rss_max rss_sum <<<"$rss"
echo "waiter RSS: median $rss_med KiB, max $rss_max KiB, all $WAITERS together $rss_sum MiB (shared pages counted in each)"
echo "handoffs: $sections sections (holder included) in" \
	"$(awk -v t=$((h1 - h0)) 'BEGIN { printf "%.2f", t / 1e6 }') s;" \
	"release to next start: first $(awk -v f="$first" 'BEGIN { printf "%.2f", f / 1000 }') ms," \
	"median $med ms, p90 $p90 ms, max $max ms;" \
	"$(awk -v x="$hscripts" -v n="$WAITERS" 'BEGIN { printf "%.2f", x / n }') scripts per section"
echo "all finished: $( ((ok == WAITERS)) && echo yes || echo "no ($ok of $WAITERS exited 0 within ${DEADLINE}s)")" \
	"$( ((bad == 0)) || echo "WARNING: $bad mutual-exclusion violations")"
# For tests/bench/run (CSV=FILE): one sample each but the handoffs
case="$WAITERS waiters on one key"
per_waiter=$(awk -v w="$WAITERS" -v t="$secs" -v top="$top" 'BEGIN { printf "%.4f", top / t / w }')
csv_row W5 "$case" dlock "idle requests/s per waiter" 1/s 1 "$per_waiter" "$per_waiter" "$per_waiter"
kib=$(awk -v a="$used0" -v b="$used1" -v w="$WAITERS" 'BEGIN { printf "%.1f", (b - a) / 1024 / w }')
csv_row W5 "$case" dlock "server memory per waiter" KiB 1 "$kib" "$kib" "$kib"
if [[ -s $T/hand ]]; then
	csv_row W5 "$case" dlock "release to next start ms" ms $(csv_stats "$T/hand")
fi
csv_row W5 "$case" dlock "waiters finished" count 1 "$ok" "$ok" "$ok"
csv_row W5 "$case" dlock "mutual-exclusion violations" count 1 "$bad" "$bad" "$bad"
if [[ -s $T/errors ]]; then
	note "stderr of the waiters (first lines):"
	sort "$T/errors" | uniq -c | sort -rn | head -n 5 >&2
fi
