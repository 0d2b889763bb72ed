#!/bin/bash
# etcd.sh: W1 on etcd, what one lock costs a shell script.
#
# `dlock -S etcd://... K true` against `etcdctl lock K true` (etcd's own
# tool: a Go runtime, a gRPC connection, a session lease) and the C floor:
# a tiny C program, compiled here, that makes the four requests a lock
# cannot do without over one connection to the same JSON gateway (lease
# grant, txn put-if-absent, delete, lease revoke), then runs `true`. A
# bare `true` is the baseline. Every round runs every tool once, in an
# order that rotates from round to round. Prints medians, 10th and 90th
# percentiles and the ratios etcdctl/dlock and dlock/floor.
#
# Environment: DLOCK (default ./build/dlock), BASE (a second dlock binary
# to compare, such as main's, with its dlock-etcd.so beside it; none by
# default), ROUNDS (default 100), WARMUP
# (default 5 rounds, not counted), CSV (a file to append results to,
# README.md), MAX_SECONDS (0; else fewer rounds when more would take
# longer), CC (default cc). Starts its own etcd (etcd-server) on free
# loopback ports in a temp dir; stops it by PID and removes the dir
# whatever happens. Only 127.0.0.1 is contacted.
set -euo pipefail
export LC_ALL=C	# EPOCHREALTIME's decimal point
unset DLOCK_SERVERS DLOCK_PASSWORD DLOCK_PREFIX DLOCK_KEY DLOCK_TOKEN DLOCK_FENCE

DLOCK=${DLOCK:-./build/dlock}
ROUNDS=${ROUNDS:-100}
WARMUP=${WARMUP:-5}
CC=${CC:-cc}

die() { echo "etcd.sh: $*" >&2; exit 1; }
[[ -x $DLOCK ]] || die "no dlock binary at '$DLOCK' (set DLOCK=path)"
DLOCK=$(realpath "$DLOCK")
[[ -e $(dirname "$DLOCK")/dlock-etcd.so ]] || die "no dlock-etcd.so beside $DLOCK (libcurl and json-c dev packages at build time?)"
BASE=${BASE:-}
if [[ -n $BASE ]]; then
	[[ -x $BASE ]] || die "no dlock binary at BASE='$BASE'"
	BASE=$(realpath "$BASE")
	[[ -e $(dirname "$BASE")/dlock-etcd.so ]] || die "no dlock-etcd.so beside $BASE"
fi
for c in etcd etcdctl "$CC" python3; do
	command -v "$c" >/dev/null || die "$c not found"
done
TRUE=$(type -P true)

T=$(mktemp -d "${TMPDIR:-/tmp}/dlock-etcd.XXXXXX")
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

. "$(dirname "$0")/lib.sh"	# wait_until, free_ports, csv_*

# --- the server ----------------------------------------------------------
read -r CPORT PPORT < <(free_ports 2)
EP=127.0.0.1:$CPORT
etcd --name bench --data-dir "$T/etcd" \
	--listen-client-urls "http://$EP" --advertise-client-urls "http://$EP" \
	--listen-peer-urls "http://127.0.0.1:$PPORT" \
	--initial-advertise-peer-urls "http://127.0.0.1:$PPORT" \
	--initial-cluster "bench=http://127.0.0.1:$PPORT" \
	--log-level error >"$T/etcd.log" 2>&1 &
PIDS+=($!)
export ETCDCTL_API=3
wait_until 20 etcdctl --endpoints="$EP" endpoint health ||
	die "etcd did not start: $(tail -n 3 "$T/etcd.log")"
ETCD_VERSION=$(etcd --version | sed -n 's/^etcd Version: //p')

# --- the C floor -------------------------------------------------------------
# Grant, txn (put if absent, on the lease), delete, revoke: one keep-alive
# connection, blocking I/O, answers read by their Content-Length.
cat >"$T/floor.c" <<'EOC'
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int fd;
static char buf[65536];

static const char *post(const char *path, const char *body)
{
	char req[4096];
	int n = snprintf(req, sizeof req, "POST %s HTTP/1.1\r\nHost: x\r\n"
			 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
			 path, strlen(body), body);
	size_t got = 0;
	char *end, *cl;

	if (write(fd, req, (size_t)n) != n)
		exit(2);
	for (;;) {
		ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);

		if (r <= 0)
			exit(3);
		got += (size_t)r;
		buf[got] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) &&
		    (cl = strcasestr(buf, "content-length:")) &&
		    got >= (size_t)(end + 4 - buf) + strtoul(cl + 15, NULL, 10))
			break;
	}
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
		exit(4);
	return end + 4;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[1])) };
	char body[1024], id[32];
	const char *p;
	int one = 1, st;
	pid_t pid;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
		return 1;
	p = strstr(post("/v3/lease/grant", "{\"TTL\":\"30\"}"), "\"ID\":\"");
	if (!p || sscanf(p + 6, "%31[0-9]", id) != 1)
		return 5;
	/* key "floor/k" = Zmxvb3Ivaw==, value "x" = eA== */
	snprintf(body, sizeof body, "{\"compare\":[{\"key\":\"Zmxvb3Ivaw==\",\"target\":\"CREATE\","
		 "\"result\":\"EQUAL\",\"create_revision\":\"0\"}],\"success\":[{\"request_put\":"
		 "{\"key\":\"Zmxvb3Ivaw==\",\"value\":\"eA==\",\"lease\":\"%s\"}}]}", id);
	if (!strstr(post("/v3/kv/txn", body), "\"succeeded\":true"))
		return 6;
	if ((pid = fork()) == 0) {
		execv(argv[2], argv + 2);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	post("/v3/kv/deleterange", "{\"key\":\"Zmxvb3Ivaw==\"}");
	snprintf(body, sizeof body, "{\"ID\":\"%s\"}", id);
	post("/v3/lease/revoke", body);
	return WEXITSTATUS(st);
}
EOC
"$CC" -O2 -o "$T/floor" "$T/floor.c" || die "cannot compile the C floor"

NAMES=() CMDS=()
tool() {	# tool NAME COMMAND [ARG...]
	NAMES+=("$1"); shift
	CMDS+=("$(printf '%q ' "$@")")
}
tool "true"                 "$TRUE"
tool "C floor (4 requests)" "$T/floor" "$CPORT" "$TRUE"
tool "dlock K true"         "$DLOCK" -S "etcd://$EP" bench "$TRUE"
[[ -z $BASE ]] || tool "BASE dlock K true" "$BASE" -S "etcd://$EP" bench-base "$TRUE"
tool "etcdctl lock K true"  etcdctl --endpoints="$EP" lock dlock:bench-ctl "$TRUE"
N=${#NAMES[@]}
run() { eval "${CMDS[$1]}" </dev/null >"$T/out" 2>&1; }

for ((i = 0; i < N; i++)); do
	run "$i" || die "'${NAMES[$i]}' failed: $(head -c 300 "$T/out")"
done
[[ -z $(etcdctl --endpoints="$EP" get --prefix dlock:bench/ --keys-only) ]] ||
	die "dlock left its key behind"

echo "etcd.sh: $ROUNDS rounds x $N tools (+$WARMUP warm-up rounds), interleaved ..." >&2
interleave etcd.sh --die

MED=()
echo
echo "dlock on etcd, W1: $ROUNDS interleaved rounds in ${elapsed}s; etcd $ETCD_VERSION on 127.0.0.1"
printf '%-22s %10s %9s %9s\n' tool "median ms" "p10 ms" "p90 ms"
for ((i = 0; i < N; i++)); do
	read -r med p10 p90 < <(stats "$T/t$i")
	MED+=("$med")
	printf '%-22s %10.2f %9.2f %9.2f\n' "${NAMES[$i]}" "$med" "$p10" "$p90"
	# shellcheck disable=SC2046
	csv_row W1 "uncontended, etcd" "${NAMES[$i]}" "wall ms" ms $(csv_stats "$T/t$i")
done
echo
awk -v f="${MED[1]}" -v d="${MED[2]}" -v e="${MED[N - 1]}" \
	-v b="${BASE:+${MED[3]}}" 'BEGIN {
	printf "etcdctl lock / dlock: %.1fx (goal: 5x or more)\n", e / d
	printf "dlock / C floor:      %.2fx\n", d / f
	if (b != "")
		printf "BASE / C floor:       %.2fx\n", b / f
}'
