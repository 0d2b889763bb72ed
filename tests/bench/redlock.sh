#!/bin/bash
# redlock.sh: what a RedLock over 5 Redis masters costs, each 10 ms away.
#
# Five redis-servers, each reached through relay.py adding DELAY_MS to every
# round trip.  As root with iproute2, each server and its relay live in a
# network namespace of their own, joined to this one by a veth pair (a
# "host" per node); otherwise all run on loopback, and the output says so.
# The relays also charge one round trip per new TCP connection
# (--connect-rtt), as a real network would; CONNECT_RTT=0 turns that off.
#
# Measured, interleaved round by round (order rotating):
#   redis-cli PING through one relay         the floor for one connection
#   dlock -S URL K true                      one node, through its relay
#   dlock -S URL1 ... -S URL5 K true         RedLock, the nodes in parallel
#   a bash script: redis-cli SET NX PX on each node one after another, the
#     command, then the compare-and-delete EVAL on each, one after another
#   node whole.js: node-redlock 5 + ioredis, acquire, spawn true, release
#   dlock -S URL1 ... -S URL5 K date +%s%6N, and date alone: how long
#     from dlock's start to its command's (the acquire), less date's own
# then, alone: node-redlock's in-process acquire and release latency.
# node-redlock: the redlock and ioredis modules NODE_PATH finds, else
# `npm install redlock@5.0.0-beta.2 ioredis@5.11.1` in a temp dir (redlock 5
# exists only as betas, so `redlock@5` finds nothing); NODE=0 skips it.
#
# Environment: DLOCK (default ./build/dlock), ROUNDS (default 40), WARMUP
# (3), DELAY_MS (10), NETNS (auto; 0 = loopback only), CONNECT_RTT (1),
# NODE (auto; 0 = skip node-redlock), NODE_PATH, CSV (a file to append
# results to, README.md), MAX_SECONDS (0; else fewer rounds when more would
# take longer).  Everything started is stopped by PID,
# namespaces and links deleted, the temp dir removed, whatever happens.
# Traffic stays on this machine: loopback, or the veth pairs made here.
set -euo pipefail
export LC_ALL=C
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE

DLOCK=${DLOCK:-./build/dlock}
ROUNDS=${ROUNDS:-40}
WARMUP=${WARMUP:-3}
DELAY_MS=${DELAY_MS:-10}
NETNS=${NETNS:-auto}
CONNECT_RTT=${CONNECT_RTT:-1}
NODE=${NODE:-auto}
N_NODES=5
NET=10.199	# node i: 10.199.i.1 here, 10.199.i.2 in its namespace (/30)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RELAY=$HERE/relay.py

die() { echo "redlock.sh: $*" >&2; exit 1; }
note() { echo "redlock.sh: $*" >&2; }
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")
[[ -f $RELAY ]] || die "relay.py not found next to this script"
for c in redis-server redis-cli python3; do
	command -v "$c" >/dev/null || die "$c not found"
done

T=$(mktemp -d "${TMPDIR:-/tmp}/dlock-redlock.XXXXXX")
PIDS=() NSS=() LINKS=()
cleanup() {
	local x
	for x in "${PIDS[@]}"; do kill "$x" 2>/dev/null || true; done
	for x in "${PIDS[@]}"; do wait "$x" 2>/dev/null || true; done
	for x in "${LINKS[@]}"; do ip link del "$x" 2>/dev/null || true; done
	for x in "${NSS[@]}"; do ip netns del "$x" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

. "$(dirname "$0")/lib.sh"	# wait_until, free_ports, csv_*

# --- nodes ---------------------------------------------------------------
# setup_netns: namespace dlk<pid>n<i> per node, veth dk<pid>h<i> here and
# vn<i> there.  Fails (leaving cleanup to the trap) if anything is refused
# or the addresses are already in use here.
setup_netns() {
	local i ns hv
	[[ $(id -u) == 0 ]] && command -v ip >/dev/null || return 1
	ip -4 addr show | grep -q "inet $NET\." && return 1
	ip -4 route show | grep -q "^$NET\." && return 1
	for ((i = 1; i <= N_NODES; i++)); do
		ns=dlk$$n$i hv=dk$$h$i
		ip netns add "$ns" || return 1
		NSS+=("$ns")
		ip link add "$hv" type veth peer name vn$i netns "$ns" || return 1
		LINKS+=("$hv")
		ip addr add "$NET.$i.1/30" dev "$hv" || return 1
		ip link set "$hv" up || return 1
		ip -n "$ns" link set lo up || return 1
		ip -n "$ns" addr add "$NET.$i.2/30" dev vn$i || return 1
		ip -n "$ns" link set vn$i up || return 1
		# The node's address must be reached through our veth, never
		# through a route leaving the machine.
		ip route get "$NET.$i.2" | grep -q " dev $hv " || return 1
	done
}

MODE=loopback
if [[ $NETNS != 0 ]]; then
	if setup_netns 2>"$T/netns.err"; then
		MODE=netns
	else
		note "network namespaces unavailable ($(head -n 1 "$T/netns.err")), using loopback relays"
		for x in "${LINKS[@]}"; do ip link del "$x" 2>/dev/null || true; done
		for x in "${NSS[@]}"; do ip netns del "$x" 2>/dev/null || true; done
		LINKS=() NSS=()
	fi
fi

RFLAGS=()
((CONNECT_RTT)) && RFLAGS+=(--connect-rtt)
EPS=()	# host:port of each node's relay
for ((i = 1; i <= N_NODES; i++)); do
	d=$T/n$i; mkdir -p "$d"
	if [[ $MODE == netns ]]; then
		run_in=(ip netns exec "dlk$$n$i")	# execs: $! is the server's PID
		rport=6379 listen=$NET.$i.2:7000
	else
		run_in=()
		read -r rport lport < <(free_ports 2)
		listen=127.0.0.1:$lport
	fi
	"${run_in[@]}" redis-server --bind 127.0.0.1 --port "$rport" \
		--unixsocket "$d/sock" --dir "$d" --save '' --appendonly no \
		>"$d/redis.log" 2>&1 &
	PIDS+=($!)
	wait_until 30 redis-cli -s "$d/sock" ping || die "redis $i did not start: $(tail -n 2 "$d/redis.log")"
	"${run_in[@]}" python3 "$RELAY" "${RFLAGS[@]}" "$listen" "127.0.0.1:$rport" "$DELAY_MS" \
		>"$d/relay.out" 2>"$d/relay.err" &
	PIDS+=($!)
	wait_until 30 grep -qx ready "$d/relay.out" || die "relay $i did not start: $(head -n 2 "$d/relay.err")"
	EPS+=("$listen")
done
host() { echo "${1%:*}"; }
port() { echo "${1##*:}"; }

# RTT floor: one persistent connection, no connect cost.
LAT_PIDS=()
for ((i = 0; i < N_NODES; i++)); do
	redis-cli -h "$(host "${EPS[i]}")" -p "$(port "${EPS[i]}")" --latency -i 1 --raw \
		</dev/null >"$T/lat$i" 2>&1 &
	LAT_PIDS+=($!)
done
wait "${LAT_PIDS[@]}"	# not a bare wait: the servers are children too
RTT_LINE=$(cat "$T"/lat* | awk 'NF == 4 { if (min == "" || $1 < min) min = $1; if ($2 > max) max = $2; s += $3; n++ }
	END { if (n) printf "min %s, avg %.2f, max %s ms over %d nodes", min, s / n, max, n }')
RTT_AVG=$(cat "$T"/lat* | awk 'NF == 4 { s += $3; n++ } END { if (n) printf "%.3f", s / n; else print '"$DELAY_MS"' }')

# --- node-redlock ------------------------------------------------------
HAVE_NODE=0
mkdir -p "$T/node"
node_versions() {	# "redlock X, ioredis Y" as NODE_PATH finds them, or fails
	# (not require("redlock/package.json"): its "exports" do not allow it)
	(cd "$T/node" && node -e 'const fs = require("fs"), path = require("path");
		const v = (m) => { require(m);
			for (const d of (process.env.NODE_PATH || "").split(path.delimiter)) {
				const f = path.join(d, m, "package.json");
				if (d && fs.existsSync(f)) return JSON.parse(fs.readFileSync(f)).version;
			}
			return "?"; };
		console.log(`redlock ${v("redlock")}, ioredis ${v("ioredis")}`)') 2>/dev/null
}
if [[ $NODE != 0 ]] && command -v node >/dev/null; then
	if [[ -n ${NODE_PATH:-} ]] && NODE_VERSIONS=$(node_versions); then
		HAVE_NODE=1
	elif ! command -v npm >/dev/null; then
		note "no npm, and NODE_PATH has no redlock and ioredis: skipping node-redlock"
	elif (cd "$T/node" && timeout 180 npm install --no-audit --no-fund --loglevel=error \
		redlock@5.0.0-beta.2 ioredis@5.11.1 >"$T/npm.log" 2>&1); then
		export NODE_PATH="$T/node/node_modules"
		NODE_VERSIONS=$(node_versions) && HAVE_NODE=1
	else
		note "npm install redlock@5.0.0-beta.2 ioredis@5.11.1 failed, skipping node-redlock: $(grep -m1 -i error "$T/npm.log")"
	fi
fi
if ((HAVE_NODE)); then
	cat >"$T/node/common.js" <<'EOF'
const Redis = require("ioredis");
const R = require("redlock");
const Redlock = R.default || R;
const eps = process.env.BENCH_EPS.split(" ").map((s) => {
	const i = s.lastIndexOf(":");
	return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
});
function connect() {
	const clients = eps.map((e) => new Redis({ host: e.host, port: e.port,
		maxRetriesPerRequest: 0 }));
	return { clients, redlock: new Redlock(clients, { retryCount: 0 }) };
}
module.exports = { connect };
EOF
	cat >"$T/node/whole.js" <<'EOF'
// One lock around one command, as `dlock K true` does.
const { spawnSync } = require("child_process");
const { connect } = require("./common.js");
(async () => {
	const { clients, redlock } = connect();
	const lock = await redlock.acquire(["dlock:bench-node"], 30000);
	const r = spawnSync("true", { stdio: "inherit" });
	await lock.release();
	await Promise.all(clients.map((c) => c.quit()));
	process.exitCode = r.status;
})().catch((e) => { console.error(e.message); process.exit(1); });
EOF
	cat >"$T/node/inproc.js" <<'EOF'
// N acquire/release pairs on open connections: "acquire n med p10 p90 min max" etc.
const { connect } = require("./common.js");
const n = Number(process.argv[2]), warm = 5;
const ms = (a, b) => Number(b - a) / 1e6;
function stats(name, v) {
	v.sort((a, b) => a - b);
	const q = (p) => v[Math.floor(p * (v.length - 1))];
	const m = v.length % 2 ? v[(v.length - 1) / 2]
		: (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
	console.log(name, v.length, m.toFixed(3), q(0.1).toFixed(3), q(0.9).toFixed(3),
		v[0].toFixed(3), v[v.length - 1].toFixed(3));
}
(async () => {
	const { clients, redlock } = connect();
	const acq = [], rel = [], both = [];
	for (let i = 0; i < n + warm; i++) {
		const t0 = process.hrtime.bigint();
		const lock = await redlock.acquire(["dlock:bench-inproc"], 30000);
		const t1 = process.hrtime.bigint();
		await lock.release();
		const t2 = process.hrtime.bigint();
		if (i < warm) continue;
		acq.push(ms(t0, t1)); rel.push(ms(t1, t2)); both.push(ms(t0, t2));
	}
	stats("acquire", acq); stats("release", rel); stats("acquire+release", both);
	await Promise.all(clients.map((c) => c.quit()));
})().catch((e) => { console.error(e.message); process.exit(1); });
EOF
	export BENCH_EPS="${EPS[*]}"
fi

# --- the sequential redis-cli script -----------------------------------
{
	echo '# RedLock by hand, one node after another.'
	echo 'tok=$(printf %08x%08x%08x%08x $SRANDOM $SRANDOM $SRANDOM $SRANDOM)'
	echo 'n=0'
	for ep in "${EPS[@]}"; do
		echo "[[ \$(redis-cli -h $(host "$ep") -p $(port "$ep") SET dlock:bench-seq \$tok NX PX 30000) == OK ]] && n=\$((n + 1))"
	done
	echo "rc=1; ((n >= $((N_NODES / 2 + 1)))) && { true; rc=\$?; }"
	for ep in "${EPS[@]}"; do
		echo "redis-cli -h $(host "$ep") -p $(port "$ep") EVAL \"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end\" 1 dlock:bench-seq \$tok >/dev/null"
	done
	echo 'exit $rc'
} >"$T/seq.sh"

# --- the tools ---------------------------------------------------------
SARGS=()
for ep in "${EPS[@]}"; do SARGS+=(-S "redis://$ep"); done
NAMES=() CMDS=()
tool() {	# tool NAME COMMAND [ARG...]: CMDS gets it quoted, for eval
	NAMES+=("$1"); shift
	CMDS+=("$(printf '%q ' "$@")")
}
tool "redis-cli PING (1 node)" redis-cli -h "$(host "${EPS[0]}")" -p "$(port "${EPS[0]}")" PING
tool "dlock K true (1 node)"   "$DLOCK" -S "redis://${EPS[0]}" bench-one true
tool "dlock -S x5 K true"      "$DLOCK" "${SARGS[@]}" bench-five true
tool "redis-cli x5 sequential" bash "$T/seq.sh"
((HAVE_NODE)) && tool "node-redlock whole.js" node "$T/node/whole.js"
# The acquire: from dlock's start to its command's, each printing the clock.
DATE=$(type -P date)
STAMP_DATE=${#NAMES[@]}
tool "date (exec floor)"       "$DATE" +%s%6N
STAMP_DLOCK=${#NAMES[@]}
tool "dlock -S x5 K date"      "$DLOCK" "${SARGS[@]}" bench-five-date "$DATE" +%s%6N
N=${#NAMES[@]}
DL5=2	# index of the RedLock dlock row, the ratios' base

run() { eval "${CMDS[$1]}" </dev/null >"$T/out" 2>&1; }
for ((i = 0; i < N; i++)); do
	run "$i" || die "'${NAMES[$i]}' failed: $(head -c 300 "$T/out")"
done
for ((i = 0; i < N_NODES; i++)); do
	[[ $(redis-cli -s "$T/n$((i + 1))/sock" --raw exists dlock:bench-one dlock:bench-five \
		dlock:bench-seq dlock:bench-node dlock:bench-five-date) == 0 ]] ||
		die "a lock key is still on node $((i + 1)) after its holder exited"
done

note "$ROUNDS rounds x $N tools (+$WARMUP warm-up rounds), interleaved ..."
# after_run I START: the stamping tools' start-to-command time, in $T/sI
after_run() {
	local stamp
	if (($1 == STAMP_DATE || $1 == STAMP_DLOCK)); then
		read -r stamp <"$T/out" && [[ $stamp =~ ^[0-9]+$ ]] &&
			echo $((stamp - 10#${2/./})) >>"$T/s$1"
	fi
	return 0
}
for ((i = 0; i < N; i++)); do : >"$T/s$i"; done
interleave redlock.sh

if ((HAVE_NODE)); then
	node "$T/node/inproc.js" "$ROUNDS" >"$T/inproc" 2>&1 ||
		note "node-redlock in-process run failed: $(head -n 2 "$T/inproc")"
fi

read -r BASE _ < <(stats "$T/t$DL5")
row() {	# row NAME RUNS MED P10 P90 [FAILS]
	printf '%-32s %5d %10.2f %8.2f %8.2f %6.1f %8.2f%s\n' "$1" "$2" "$3" "$4" "$5" \
		"$(awk -v a="$3" -v b="$RTT_AVG" 'BEGIN { print a / b }')" \
		"$(awk -v a="$3" -v b="$BASE" 'BEGIN { print a / b }')" \
		"$( [[ ${6:-0} == 0 ]] || echo "  ($6 failed)")"
}

echo
if [[ $MODE == netns ]]; then where="a network namespace each, veth to this one"
else where="all on loopback (no network namespaces)"; fi
echo "dlock RedLock benchmark: $N_NODES redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') nodes, each behind relay.py +${DELAY_MS} ms RTT;"
echo "  $where; new connections $( ((CONNECT_RTT)) && echo "charged 1 RTT" || echo "free (CONNECT_RTT=0)");"
echo "  $ROUNDS interleaved rounds in ${elapsed}s$( ((HAVE_NODE)) && echo "; node $(node --version), $NODE_VERSIONS")"
echo "RTT floor (redis-cli --latency, 1 s on an open connection): $RTT_LINE"
echo
printf '%-32s %5s %10s %8s %8s %6s %8s\n' "whole process" runs "median ms" "p10 ms" "p90 ms" RTTs "x dlock"
CASE="5 nodes, +${DELAY_MS} ms RTT ($MODE)"
csv_row W3 "$CASE" "redis-cli --latency" "RTT floor" ms "$N_NODES" "$RTT_AVG" \
	"$(cat "$T"/lat* | awk 'NF == 4 { if (m == "" || $1 < m) m = $1 } END { print m }')" \
	"$(cat "$T"/lat* | awk 'NF == 4 { if ($2 > m) m = $2 } END { print m + 0 }')"
for ((i = 0; i < N; i++)); do
	read -r med p10 p90 < <(stats "$T/t$i")
	row "${NAMES[$i]}" "$(wc -l <"$T/t$i")" "$med" "$p10" "$p90" "${FAILS[i]}"
	# shellcheck disable=SC2046
	csv_row W3 "$CASE" "${NAMES[$i]}" "wall ms" ms $(csv_stats "$T/t$i")
done
# The acquire: each dlock run's stamp less the median date run's, in ms
read -r _ DATE_MED _ < <(csv_stats "$T/s$STAMP_DATE")
awk -v d="$DATE_MED" '{ print $1 - d * 1000 }' "$T/s$STAMP_DLOCK" >"$T/acq"
read -r ACQ_N ACQ_MED ACQ_MIN ACQ_MAX < <(csv_stats "$T/acq")
csv_row W3 "$CASE" "dlock -S x5 K CMD" "acquire: start to command ms" ms \
	"$ACQ_N" "$ACQ_MED" "$ACQ_MIN" "$ACQ_MAX"
if ((HAVE_NODE)) && [[ -s $T/inproc ]] && grep -q '^acquire ' "$T/inproc"; then
	echo
	printf '%-32s %5s %10s %8s %8s %6s %8s\n' "node-redlock in-process" runs "median ms" "p10 ms" "p90 ms" RTTs "x dlock"
	while read -r what n med p10 p90 min max; do
		row "  $what" "$n" "$med" "$p10" "$p90"
		csv_row W3 "$CASE" "node-redlock in-process" "$what ms" ms "$n" "$med" "$min" "$max"
	done <"$T/inproc"
fi
echo
printf 'dlock acquire, from its start to its command'\''s (stamp less date'\''s alone): median %.2f ms = %.2f RTTs, min %.2f, max %.2f ms (%d runs)\n' \
	"$ACQ_MED" "$(awk -v a="$ACQ_MED" -v b="$RTT_AVG" 'BEGIN { print a / b }')" "$ACQ_MIN" "$ACQ_MAX" "$ACQ_N"
echo "RTTs: median / average RTT floor; x dlock: median / median of 'dlock -S x5 K true'."
