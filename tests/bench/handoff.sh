#!/bin/bash
# handoff.sh: contended handoff, W workers taking turns at one lock.
#
# W workers (4, then 16) each run M critical sections one after another,
# every section a new process holding the lock: `dlock K SECTION` against
# `flock FILE SECTION` and a polling bash loop of redis-cli (SET NX PX,
# sleep, retry; SECTION; compare-and-delete EVAL), and, when installed,
# `etcdctl lock K SECTION` and a python3 redis-py `Redis.lock()` as
# yardsticks.  SECTION is the same for every tool: a bash that appends
# "a <µs> <pid>" and "r <µs> <pid>" to a log.  From the log: sections per
# second (sections / wall time), the handoff (each acquire's timestamp less
# the release just before it), and a mutual-exclusion check; also the CPU
# time (all processes and the servers) per section, as on a small machine
# CPU is what bounds the rate.  Tools are interleaved, ROUNDS rounds with
# the order rotating.  Then HERD dlock
# processes (100) start at once on one key: all must finish, and the Redis
# commands that cost are counted ("thundering herd").
#
# Environment: DLOCK (default ./build/dlock), WORKERS ("4 16"), SECTIONS
# (200 per tool, worker count and round), REF_SECTIONS (40, for etcdctl and
# redis-py, which are slow), ROUNDS (3), POLL_SLEEP (0.01 s, the redis-cli
# loop's sleep), HERD (100), HERD_DEADLINE (60 s), ETCD (auto; 0 skips),
# REDISPY (auto; 0 skips), CSV (a file to append results to, README.md).
# HERD=0 skips the herd; MAX_SECONDS (0; else fewer rounds when more
# would take longer, the herd not counted).  Starts its own redis-server (unix socket only)
# and, if installed, its own etcd on 127.0.0.1, in a temp dir; stops them,
# the workers and everything they started by PID (process group), and
# removes the dir, whatever happens.
set -euo pipefail
set -m	# every background job a process group of its own, to stop whole
export LC_ALL=C	# EPOCHREALTIME's decimal point
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE
unset BASH_ENV ENV

DLOCK=${DLOCK:-./build/dlock}
WORKERS=${WORKERS:-4 16}
SECTIONS=${SECTIONS:-200}
REF_SECTIONS=${REF_SECTIONS:-40}
ROUNDS=${ROUNDS:-3}
POLL_SLEEP=${POLL_SLEEP:-0.01}
HERD=${HERD:-100}
HERD_DEADLINE=${HERD_DEADLINE:-60}
ETCD=${ETCD:-auto}
REDISPY=${REDISPY:-auto}

die() { echo "handoff.sh: $*" >&2; exit 1; }
note() { echo "handoff.sh: $*" >&2; }
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")
for c in redis-server redis-cli flock python3; do
	command -v "$c" >/dev/null || die "$c not found"
done

T=$(mktemp -d "${TMPDIR:-/tmp}/dlock-handoff.XXXXXX")
PIDS=()	# clients' process groups: workers, herd
SERVERS=()	# redis-server, etcd
# Clients first, while the servers still answer (etcdctl, told to stop,
# hangs on if etcd is gone), then whatever is left of them, by SIGKILL.
clients_left() {
	local p
	for p in "${PIDS[@]}"; do kill -0 -- "-$p" 2>/dev/null && return 0; done
	return 1
}
cleanup() {
	local p n
	for p in "${PIDS[@]}"; do kill -- "-$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done	# leaders
	for ((n = 0; n < 40; n++)); do clients_left || break; sleep 0.05; done
	for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
	for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${SERVERS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

. "$(dirname "$0")/lib.sh"	# wait_until, free_ports, find_redispy, csv_*
now_us() { echo "${EPOCHREALTIME/./}"; }

# --- servers -----------------------------------------------------------
SOCK=$T/redis.sock
redis-server --port 0 --unixsocket "$SOCK" --dir "$T" --save '' \
	--appendonly no --maxclients 1000 >"$T/redis.log" 2>&1 &
SERVERS+=($!)
wait_until 30 redis-cli -s "$SOCK" ping || die "redis-server did not start: $(tail -n 3 "$T/redis.log")"
REDIS_VERSION=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
rcli() { redis-cli -s "$SOCK" "$@"; }

HAVE_ETCD=0
if [[ $ETCD != 0 ]] && command -v etcd >/dev/null && command -v etcdctl >/dev/null; then
	read -r ECPORT EPPORT < <(free_ports 2)
	EURL=http://127.0.0.1:$ECPORT
	etcd --name bench --data-dir "$T/etcd" \
		--listen-client-urls "$EURL" --advertise-client-urls "$EURL" \
		--listen-peer-urls "http://127.0.0.1:$EPPORT" \
		--initial-advertise-peer-urls "http://127.0.0.1:$EPPORT" \
		--initial-cluster "bench=http://127.0.0.1:$EPPORT" \
		--logger zap --log-level error >"$T/etcd.log" 2>&1 &
	SERVERS+=($!)
	export ETCDCTL_API=3
	if wait_until 20 etcdctl --endpoints="$EURL" endpoint health; then
		HAVE_ETCD=1
	else
		note "etcd did not start, skipping etcdctl: $(tail -n 2 "$T/etcd.log")"
	fi
elif [[ $ETCD != 0 ]]; then
	note "no etcd/etcdctl, skipping etcdctl lock"
fi

# redis-py: whichever python3 can import it (lib.sh)
PY=
if [[ $REDISPY != 0 ]]; then
	find_redispy || note "no python3 with redis-py (apt-get install python3-redis), skipping it"
fi

# --- the section and the tools -------------------------------------------
# SECTION's log is its $0; timestamps are whole microseconds.
# shellcheck disable=SC2016
SECTION_SH='echo a ${EPOCHREALTIME/./} $$ >>"$0"; echo r ${EPOCHREALTIME/./} $$ >>"$0"'
BASH_BIN=$(type -P bash)
CAD="if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
# shellcheck disable=SC2016
PYLOCK='import subprocess, sys, redis
r = redis.Redis(unix_socket_path=sys.argv[1])
with r.lock("dlock:handoff-py", timeout=30):
    rc = subprocess.call(sys.argv[2:])
sys.exit(rc)'

# One critical section with each tool: sec_NAME LOG ITERATION
sec_flock() { flock "$T/flock.lock" "$BASH_BIN" -c "$SECTION_SH" "$1"; }
sec_dlock() { "$DLOCK" -S "unix:$SOCK" handoff "$BASH_BIN" -c "$SECTION_SH" "$1"; }
sec_poll() {
	local tok=$BASHPID.$2 rc=0
	until [[ $(rcli SET dlock:handoff-cli "$tok" NX PX 30000) == OK ]]; do
		sleep "$POLL_SLEEP"
	done
	"$BASH_BIN" -c "$SECTION_SH" "$1" || rc=$?
	[[ $(rcli EVAL "$CAD" 1 dlock:handoff-cli "$tok") == 1 ]] || rc=1
	return "$rc"
}
sec_etcd() { etcdctl --endpoints="$EURL" lock handoff -- "$BASH_BIN" -c "$SECTION_SH" "$1"; }
sec_redispy() { "$PY" -c "$PYLOCK" "$SOCK" "$BASH_BIN" -c "$SECTION_SH" "$1"; }

NAMES=(flock dlock "redis-cli poll") FUNCS=(sec_flock sec_dlock sec_poll) REF=(0 0 0)
((HAVE_ETCD)) && { NAMES+=("etcdctl lock"); FUNCS+=(sec_etcd); REF+=(1); }
[[ -n $PY ]] && { NAMES+=("redis-py lock"); FUNCS+=(sec_redispy); REF+=(1); }
N=${#NAMES[@]}

# Sanity: each tool runs one section, and leaves no lock behind.
for ((i = 0; i < N; i++)); do
	: >"$T/check.log"
	"${FUNCS[$i]}" "$T/check.log" 0 >"$T/out" 2>&1 ||
		die "'${NAMES[$i]}' failed: $(head -c 300 "$T/out")"
	[[ $(wc -l <"$T/check.log") == 2 ]] || die "'${NAMES[$i]}' did not run the section"
done
[[ $(rcli EXISTS dlock:handoff dlock:handoff-cli dlock:handoff-py) == 0 ]] ||
	die "a lock key is still there after its holder exited"

# --- contended runs ------------------------------------------------------
worker() {	# worker FUNC LOG M: M sections, one after another
	local i
	for ((i = 0; i < $3; i++)); do
		"$1" "$2" "$i" >/dev/null 2>>"$T/errors" || echo x >>"$2.fail"
	done
}
# analyse LOG: "sections violations" on stdout; handoffs (µs) to LOG.h.
# A violation: an acquire while another holds, or a release by a pid that
# does not hold.
analyse() {
	: >"$1.h"
	awk -v h="$1.h" '
	$1 == "a" { if (holder != "") bad++; holder = $3; n++
		    if (have_r) print $2 - last_r > h }
	$1 == "r" { if (holder != $3) bad++; holder = ""; last_r = $2; have_r = 1 }
	END { printf "%d %d\n", n, bad + 0 }' "$1"
}
# CPU_US: CPU time so far (user + system, µs) of this shell's waited-for
# children and of the servers.  Not by $(...): a subshell's children are
# not this shell's.
TCK=$(getconf CLK_TCK)
cpu_now() {
	local p u s t st
	CPU_US=0
	for p in "${SERVERS[@]}"; do
		read -r -a st <"/proc/$p/stat"
		CPU_US=$((CPU_US + (st[13] + st[14]) * 1000000 / TCK))
	done
	times >"$T/times"
	{ read -r _; read -r u s; } <"$T/times"	# children: 0m1.234s 0m0.567s
	for p in "$u" "$s"; do	# XmY.ZZZs, 3 decimals
		t=${p#*m}
		t=${t%s}
		CPU_US=$((CPU_US + (10#${p%%m*} * 60000 + 10#${t/./}) * 1000))
	done
}
# Redis scripts run (EVAL + EVALSHA) since the last CONFIG RESETSTAT
scripts_run() {
	rcli INFO commandstats | tr -d '\r' |
		awk -F'[_:=,]' '$2 == "evalsha" || $2 == "eval" { n += $4 } END { print n + 0 }'
}
run_config() {	# run_config I W R: tool I, W workers, round R
	local i=$1 w=$2 r=$3 total m s e j log pids=() n bad c0
	total=$SECTIONS
	((REF[i])) && total=$REF_SECTIONS
	m=$(( (total + w - 1) / w ))
	log=$T/log.$i.$w.$r
	: >"$log"
	rcli CONFIG RESETSTAT >/dev/null
	cpu_now; c0=$CPU_US
	s=$(now_us)
	for ((j = 0; j < w; j++)); do
		worker "${FUNCS[$i]}" "$log" "$m" &
		pids+=($!)
		PIDS+=($!)
	done
	for j in "${pids[@]}"; do wait "$j" || true; done
	e=$(now_us)
	cpu_now
	PIDS=("${PIDS[@]:0:${#PIDS[@]}-w}")
	read -r n bad < <(analyse "$log")
	cat "$log.h" >>"$T/h.$i.$w"
	echo "$n $((e - s)) $bad $( [[ -f $log.fail ]] && wc -l <"$log.fail" || echo 0)" \
		"$((CPU_US - c0)) $(scripts_run)" >>"$T/runs.$i.$w"
}

for w in $WORKERS; do
	for ((i = 0; i < N; i++)); do : >"$T/h.$i.$w"; : >"$T/runs.$i.$w"; done
done
note "$ROUNDS rounds x workers ($WORKERS) x $N tools: ${NAMES[*]} ..."
t_start=$SECONDS
for ((r = 0; r < ROUNDS; r++)); do
	if over_budget "$t_start" "$r"; then
		note "MAX_SECONDS ($MAX_SECONDS) reached: $r rounds, not $ROUNDS"
		ROUNDS=$r
		break
	fi
	for w in $WORKERS; do
		for ((k = 0; k < N; k++)); do
			run_config $(( (r + k) % N )) "$w" "$r"
		done
	done
done
elapsed=$((SECONDS - t_start))

quantiles() {	# quantiles FILE: "median p90 max" in ms, or "- - -"
	sort -n "$1" | awk '{ v[NR] = $1 }
	function q(p) { return v[int(p * (NR - 1)) + 1] / 1000 }
	END {
		if (!NR) { print "- - -"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.2f %.2f %.1f\n", m / 1000, q(0.90), v[NR] / 1000
	}'
}
totals() {	# totals RUNS: "sections wall_us violations failures cpu_us scripts"
	awk '{ n += $1; t += $2; b += $3; f += $4; c += $5; x += $6 }
	END { print n, t, b, f, c, x }' "$1"
}

echo
echo "dlock contended-handoff benchmark: $ROUNDS interleaved rounds in ${elapsed}s;" \
	"redis $REDIS_VERSION on a unix socket (--save ''); $(nproc) CPUs;" \
	"section: bash -c 'echo a/r \$EPOCHREALTIME >> log'"
printf '%-15s %7s %8s %7s %10s %8s %8s %7s %7s %8s\n' tool workers sections "wall s" \
	"sections/s" "x flock" "hand med" "p90 ms" "max ms" "CPU ms"
declare -A RATE MED SCRIPTS
for w in $WORKERS; do
	for ((i = 0; i < N; i++)); do
		read -r n t bad fail cpu scripts < <(totals "$T/runs.$i.$w")
		((i != 1)) || SCRIPTS[$w]=$(awk -v x="$scripts" -v n="$n" 'BEGIN { printf "%.1f", x / n }')
		read -r med p90 max < <(quantiles "$T/h.$i.$w")
		RATE[$i.$w]=$(awk -v n="$n" -v t="$t" 'BEGIN { printf "%.1f", t ? n * 1e6 / t : 0 }')
		MED[$i.$w]=$med
		printf '%-15s %7d %8d %7.2f %10s %8.2f %8s %7s %7s %8.2f%s%s\n' "${NAMES[$i]}" "$w" \
			"$n" "$(awk -v t="$t" 'BEGIN { print t / 1e6 }')" "${RATE[$i.$w]}" \
			"$(awk -v a="${RATE[$i.$w]}" -v b="${RATE[0.$w]}" 'BEGIN { print b ? a / b : 0 }')" \
			"$med" "$p90" "$max" "$(awk -v c="$cpu" -v n="$n" 'BEGIN { print c / n / 1000 }')" \
			"$( ((fail == 0)) || echo "  ($fail failed)")" \
			"$( ((bad == 0)) || echo "  WARNING: $bad mutual-exclusion violations")"
		# per round: sections/s; every handoff: ms
		awk '$2 { print $1 * 1e6 / $2 }' "$T/runs.$i.$w" >"$T/rates"
		# shellcheck disable=SC2046
		csv_row W2 "$w workers" "${NAMES[$i]}" "sections/s" "1/s" $(csv_stats "$T/rates" 1)
		# shellcheck disable=SC2046
		csv_row W2 "$w workers" "${NAMES[$i]}" "handoff ms" ms $(csv_stats "$T/h.$i.$w")
		((bad == 0)) || csv_row W2 "$w workers" "${NAMES[$i]}" "violations" count 1 "$bad" "$bad" "$bad"
	done
done
for w in $WORKERS; do
	awk -v w="$w" -v d="${RATE[1.$w]}" -v f="${RATE[0.$w]}" \
		-v dm="${MED[1.$w]}" -v fm="${MED[0.$w]}" 'BEGIN {
		printf "target, %d workers: dlock at %.0f %% of flock'\''s sections/s (>= 80 %%); ", w, f ? 100 * d / f : 0
		printf "handoff median %+.2f ms over flock'\''s (<= 1 ms)\n", dm - fm }'
done
printf 'dlock: Redis scripts (EVALSHA) per section:'
for w in $WORKERS; do printf ' %s at %d workers;' "${SCRIPTS[$w]}" "$w"; done
echo " 2 with no contention (acquire, release), 3 for a process that waits" \
	"(+ a refused try); a release wakes one waiter (BLPOP), so no more with more waiters"
if [[ -s $T/errors ]]; then
	note "stderr of failed sections (first lines):"
	sort "$T/errors" | uniq -c | sort -rn | head -n 5 >&2
fi

# --- 100 waiters on one key ------------------------------------------------
((HERD > 0)) || exit 0
# All start at once; each runs the section once.  Counted: how many exit 0
# before the deadline, how long the last took, and the commands Redis ran
# for them (INFO commandstats after CONFIG RESETSTAT, less INFO and CONFIG).
herd() {	# herd NAME CMD...: "ok started seconds violations" to $T/herd.out
	local log=$T/herd.$1 s e end p j ok=0 left
	local -a hp=()
	shift
	: >"$log"
	s=$(now_us)
	for ((j = 0; j < HERD; j++)); do
		"$@" "$BASH_BIN" -c "$SECTION_SH" "$log" >/dev/null 2>>"$T/herd-errors" </dev/null &
		hp+=($!)
		PIDS+=($!)
	done
	end=$((SECONDS + HERD_DEADLINE))
	left=${#hp[@]}
	while ((left > 0 && SECONDS < end)); do
		left=0
		for p in "${hp[@]}"; do kill -0 "$p" 2>/dev/null && left=$((left + 1)); done
		((left == 0)) || sleep 0.02
	done
	e=$(now_us)
	for p in "${hp[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			kill -- "-$p" 2>/dev/null || true
			wait "$p" 2>/dev/null || true
		elif wait "$p"; then
			ok=$((ok + 1))
		fi
	done
	PIDS=("${PIDS[@]:0:${#PIDS[@]}-HERD}")
	read -r _ bad < <(analyse "$log")
	echo "$ok $HERD $(awk -v t=$((e - s)) 'BEGIN { printf "%.2f", t / 1e6 }') $bad" >"$T/herd.out"
}
echo
echo "$HERD waiters on one key, all started at once (deadline ${HERD_DEADLINE}s):"
herd flock flock "$T/flock.lock"
read -r ok all secs bad <"$T/herd.out"
csv_row W2 "$HERD at once" flock "seconds until all done" s 1 "$secs" "$secs" "$secs"
printf '  %-6s %3d/%d exited 0 in %6.2f s%s\n' flock "$ok" "$all" "$secs" \
	"$( ((bad == 0)) || echo "  WARNING: $bad mutual-exclusion violations")"
rcli CONFIG RESETSTAT >/dev/null
herd dlock "$DLOCK" -S "unix:$SOCK" handoff-herd
read -r ok all secs bad <"$T/herd.out"
csv_row W2 "$HERD at once" dlock "seconds until all done" s 1 "$secs" "$secs" "$secs"
((ok == all)) || csv_row W2 "$HERD at once" dlock "not finished" count 1 $((all - ok)) $((all - ok)) $((all - ok))
printf '  %-6s %3d/%d exited 0 in %6.2f s%s%s\n' dlock "$ok" "$all" "$secs" \
	"$( ((ok == all)) || echo "  FAILED: not all completed")" \
	"$( ((bad == 0)) || echo "  WARNING: $bad mutual-exclusion violations")"
# commandstats counts the calls a script makes too: EVAL/EVALSHA are the
# lock scripts run (each try to acquire, each release), the rest mostly
# what they called.
rcli INFO commandstats | tr -d '\r' | awk -F'[_:=,]' -v n="$HERD" '
	/^cmdstat_/ && $2 !~ /^(info|config)/ { c[$2] = $4; total += $4 }
	END {
		printf "  thundering herd cost: %.1f scripts (EVAL/EVALSHA) per section; %.1f Redis commands per section, calls made by scripts included:\n   ", (c["evalsha"] + ("eval" in c ? c["eval"] : 0)) / n, total / n
		k = 0
		for (x in c) order[++k] = x
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
			if (c[order[j]] > c[order[i]]) { t = order[i]; order[i] = order[j]; order[j] = t }
		for (i = 1; i <= k; i++) printf " %s %d", order[i], c[order[i]]
		printf " (%d sections)\n", n
	}'
[[ $(rcli EXISTS dlock:handoff-herd) == 0 ]] || note "WARNING: dlock:handoff-herd left behind"
if [[ -s $T/herd-errors ]]; then
	note "stderr of the herd (first lines):"
	sort "$T/herd-errors" | uniq -c | sort -rn | head -n 5 >&2
fi
