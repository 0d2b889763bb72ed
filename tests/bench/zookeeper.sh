#!/bin/bash
# zookeeper.sh: what a lock costs on ZooKeeper (zk://).
#
# W1, uncontended: `dlock -S zk://... K true` against the C floor (a tiny
# program compiled here: libzookeeper-mt's connect, create of an
# ephemeral sequential node, the command, delete, close: the least any
# client of this recipe does), a kazoo script (python3: start, Lock
# acquire, the command, release, stop), `flock FILE true` and a bare
# `true`. Every round runs every tool once, the order rotating; medians
# and ratios to the floor.
#
# W2, contended hand-off: W workers (4, then 16) each run SECTIONS
# critical sections one after another, each a new process holding the
# lock (dlock, the C floor is not a lock, so flock and kazoo as
# yardsticks); each section appends "a <us> <pid>" and "r <us> <pid>" to a
# log: sections per second, the hand-off (an acquisition's time less the
# release before it) and a mutual exclusion check.
#
# Environment: DLOCK (./build/dlock), BASE (a second dlock binary for W1,
# such as main's, with its dlock-zookeeper.so beside it), ROUNDS (100), WARMUP (5), WORKERS
# ("4 16"), SECTIONS (100 per worker count), REF_SECTIONS (20, for kazoo,
# whose python start costs), KAZOO (auto; 0 skips), FORCE_SYNC (yes: the
# server fsyncs each write, as deployed; no measures the clients alone),
# CSV (a file to append results to, README.md), MAX_SECONDS (0; else fewer
# rounds when more would take longer). Starts its own ZooKeeper (Debian's
# zookeeper package) on a free loopback port in a temp dir, stops it and
# removes the dir whatever happens.
set -euo pipefail
set -m
export LC_ALL=C
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE

DLOCK=${DLOCK:-./build/dlock}
ROUNDS=${ROUNDS:-100}
WARMUP=${WARMUP:-5}
WORKERS=${WORKERS:-4 16}
SECTIONS=${SECTIONS:-100}
REF_SECTIONS=${REF_SECTIONS:-20}
KAZOO=${KAZOO:-auto}
FORCE_SYNC=${FORCE_SYNC:-yes}

die() { echo "zookeeper.sh: $*" >&2; exit 1; }
note() { echo "zookeeper.sh: $*" >&2; }
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")
[[ -e $(dirname "$DLOCK")/dlock-zookeeper.so ]] ||
	die "no dlock-zookeeper.so beside $DLOCK (apt-get install libzookeeper-mt-dev; rebuild)"
BASE=${BASE:-}
if [[ -n $BASE ]]; then
	[[ -x $BASE ]] || die "no dlock binary at BASE='$BASE'"
	BASE=$(realpath "$BASE")
	[[ -e $(dirname "$BASE")/dlock-zookeeper.so ]] || die "no dlock-zookeeper.so beside $BASE"
fi
for c in java cc flock python3; do
	command -v "$c" >/dev/null || die "$c not found"
done
[[ -e /usr/share/java/zookeeper.jar ]] || die "no ZooKeeper (apt-get install zookeeper default-jre-headless)"
TRUE=$(type -P true)
BASH_BIN=$(type -P bash)

T=$(mktemp -d "${TMPDIR:-/tmp}/dlock-zk.XXXXXX")
PIDS=() SERVER=
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -- "-$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	[[ -z $SERVER ]] || { kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; } || true
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

. "$(dirname "$0")/lib.sh"	# wait_until, free_ports, csv_*
now_us() { echo "${EPOCHREALTIME/./}"; }

# --- the server ----------------------------------------------------------
read -r PORT < <(free_ports 1)
mkdir -p "$T/data"
cat >"$T/zoo.cfg" <<EOF
tickTime=2000
dataDir=$T/data
clientPort=$PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
maxClientCnxns=0
forceSync=$FORCE_SYNC
4lw.commands.whitelist=srvr
EOF
java -Xms64m -Xmx256m -XX:+UseSerialGC -cp /usr/share/java/zookeeper.jar \
	org.apache.zookeeper.server.ZooKeeperServerMain "$T/zoo.cfg" >"$T/zk.log" 2>&1 &
SERVER=$!
srvr() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && echo srvr >&3 && cat <&3' _ "$PORT" 2>/dev/null; }
wait_until 60 eval 'srvr | grep -q "^Mode: standalone"' || die "ZooKeeper did not start: $(tail -n 5 "$T/zk.log")"
ZK_VERSION=$(srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p')
HOSTS=127.0.0.1:$PORT
URL=zk://$HOSTS

HAVE_KAZOO=0 PY=
if [[ $KAZOO != 0 ]]; then
	for p in /usr/bin/python3 "$(type -P python3)"; do
		if "$p" -c 'import kazoo' 2>/dev/null; then PY=$p; HAVE_KAZOO=1; break; fi
	done
	((HAVE_KAZOO)) || note "no python3 with kazoo (apt-get install python3-kazoo), skipping it"
fi

# --- the C floor ---------------------------------------------------------
cat >"$T/floor.c" <<'EOF'
/* connect, create an ephemeral sequential child of argv[2], run argv[3..],
 * delete it, close: the least a client of the recipe does */
#define THREADED
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int up;

static void w(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE) {
		pthread_mutex_lock(&mu);
		up = 1;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
	}
}

int main(int argc, char **argv)
{
	char path[512], made[512];
	zhandle_t *zh;
	pid_t pid;
	int st;

	zoo_set_debug_level(0);
	if (!(zh = zookeeper_init(argv[1], w, 30000, 0, 0, 0)))
		return 69;
	pthread_mutex_lock(&mu);
	while (!up)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	snprintf(path, sizeof path, "%s/floor__lock__", argv[2]);
	if (zoo_create(zh, path, "", 0, &ZOO_OPEN_ACL_UNSAFE,
		       ZOO_EPHEMERAL_SEQUENTIAL, made, sizeof made) != ZOK)
		return 70;
	if ((pid = fork()) == 0) {
		execvp(argv[3], argv + 3);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	if (zoo_delete(zh, made, -1) != ZOK)
		return 70;
	zookeeper_close(zh);
	return WEXITSTATUS(st);
}
EOF
cc -O2 -o "$T/floor" "$T/floor.c" -lzookeeper_mt -lpthread || die "cannot build the C floor"

KAZOO_PY='import subprocess, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1])
zk.start()
with zk.Lock(sys.argv[2], "kazoo"):
    rc = subprocess.call(sys.argv[3:])
zk.stop()
sys.exit(rc)'

# the floor's parent: dlock makes a lock's znode
"$DLOCK" -S "$URL" bench-floor true || die "dlock failed on $URL"

# --- W1 --------------------------------------------------------------------
NAMES=() CMDS=()
tool() { NAMES+=("$1"); shift; CMDS+=("$(printf '%q ' "$@")"); }
tool "true"                   "$TRUE"
tool "flock FILE true"        flock "$T/flock.lock" "$TRUE"
tool "C floor (zk)"           "$T/floor" "$HOSTS" /dlock:bench-floor "$TRUE"
tool "dlock K true (zk)"      "$DLOCK" -S "$URL" bench "$TRUE"
[[ -z $BASE ]] || tool "BASE dlock K true (zk)" "$BASE" -S "$URL" bench-base "$TRUE"
((HAVE_KAZOO)) && tool "kazoo Lock K true" "$PY" -c "$KAZOO_PY" "$HOSTS" /dlock:bench-kz "$TRUE"
N=${#NAMES[@]}
FLOOR=2
run() { eval "${CMDS[$1]}" </dev/null >"$T/out" 2>&1; }

for ((i = 0; i < N; i++)); do
	run "$i" || die "'${NAMES[$i]}' failed: $(head -c 300 "$T/out")"
done

note "W1: $ROUNDS rounds x $N tools (+$WARMUP warm-up), interleaved ..."
interleave zookeeper.sh

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f\n", m / 1000 }'; }
pct() { sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END { printf "%.3f\n", v[int(p * (NR - 1)) + 1] / 1000 }'; }
FLOOR_MED=$(median "$T/t$FLOOR")
echo
echo "W1 uncontended: $ROUNDS interleaved rounds; ZooKeeper $ZK_VERSION standalone on 127.0.0.1, forceSync=$FORCE_SYNC"
printf '%-22s %6s %10s %9s %9s %10s\n' tool runs "median ms" "p10 ms" "p90 ms" "x C floor"
for ((i = 0; i < N; i++)); do
	med=$(median "$T/t$i")
	printf '%-22s %6d %10.2f %9.2f %9.2f %10.2f%s\n' "${NAMES[$i]}" "$(wc -l <"$T/t$i")" \
		"$med" "$(pct "$T/t$i" 0.1)" "$(pct "$T/t$i" 0.9)" \
		"$(awk -v a="$med" -v b="$FLOOR_MED" 'BEGIN { print a / b }')" \
		"$( ((FAILS[i] == 0)) || echo "  (${FAILS[i]} failed)")"
	# shellcheck disable=SC2046
	csv_row W1 "uncontended, ZooKeeper" "${NAMES[$i]}" "wall ms" ms $(csv_stats "$T/t$i")
	csv_row W1 "uncontended, ZooKeeper" "${NAMES[$i]}" "x C floor" ratio 1 \
		"$(awk -v a="$med" -v b="$FLOOR_MED" 'BEGIN { print a / b }')" - -
done

# --- W2 --------------------------------------------------------------------
# shellcheck disable=SC2016
SECTION_SH='echo a ${EPOCHREALTIME/./} $$ >>"$0"; echo r ${EPOCHREALTIME/./} $$ >>"$0"'
sec_dlock() { "$DLOCK" -S "$URL" handoff "$BASH_BIN" -c "$SECTION_SH" "$1"; }
sec_flock() { flock "$T/handoff.lock" "$BASH_BIN" -c "$SECTION_SH" "$1"; }
sec_kazoo() { "$PY" -c "$KAZOO_PY" "$HOSTS" /dlock:handoff-kz "$BASH_BIN" -c "$SECTION_SH" "$1"; }

# handoff TOOL W M: W workers, M sections in all; prints "sec/s handoff_ms_median p90 bad"
handoff() {
	local tool=$1 w=$2 m=$3 log=$T/log.$1.$2 per j t0 t1 pids=()
	: >"$log"
	per=$(( (m + w - 1) / w ))
	t0=$(now_us)
	for ((j = 0; j < w; j++)); do
		( for ((s = 0; s < per; s++)); do "sec_$tool" "$log" || exit 1; done ) &
		pids+=($!)
		PIDS+=($!)
	done
	for j in "${pids[@]}"; do wait "$j" || note "$tool: a worker failed"; done
	t1=$(now_us)
	awk -v t0="$t0" -v t1="$t1" '
		$1 == "a" { if (held) bad++; held = 1; if (last) h[++n] = $2 - last; cnt++ }
		$1 == "r" { held = 0; last = $2 }
		END {
			asort(h); med = n ? h[int((n + 1) / 2)] / 1000 : 0; p90 = n ? h[int(0.9 * (n - 1)) + 1] / 1000 : 0
			printf "%.1f %.2f %.2f %d %d\n", cnt / ((t1 - t0) / 1e6), med, p90, bad + 0, cnt
		}' "$log"
}

echo
echo "W2 hand-off: each section a new process; sections/s, hand-off (acquire less the release before it)"
printf '%-8s %-8s %9s %11s %9s %9s %6s\n' workers tool sections "sections/s" "handoff ms" "p90 ms" overlap
for w in $WORKERS; do
	tools=(flock dlock)
	((HAVE_KAZOO)) && tools+=(kazoo)
	for tool in "${tools[@]}"; do
		m=$SECTIONS
		[[ $tool == kazoo ]] && m=$REF_SECTIONS
		((m >= w)) || m=$w
		read -r rate med p90 bad cnt < <(handoff "$tool" "$w" "$m")
		printf '%-8s %-8s %9d %11.1f %9.2f %9.2f %6d\n' "$w" "$tool" "$cnt" "$rate" "$med" "$p90" "$bad"
		csv_row W2 "$w workers, ZooKeeper" "$tool" "sections/s" 1/s 1 "$rate" - -
		csv_row W2 "$w workers, ZooKeeper" "$tool" "handoff ms" ms "$cnt" "$med" - "$p90"
		((bad == 0)) || note "$tool with $w workers: $bad overlapping sections!"
	done
done
