#!/usr/bin/env bats
# fleet.bats - a busy server is not an unreachable one (issue 30).
#
# A fleet's cron minute: many hosts' `dlock -n` released at one instant
# against a server with fewer connections than hosts (Redis and
# PostgreSQL): one run, every other host 1, never 69, as
# tests/bench/fleet.sh checks at 200 and 1,000 hosts on the servers'
# default limits. The smaller case here keeps the ratio of hosts to
# connections instead (150 hosts, 20 connections) and pins the hosts to
# one CPU, as the benchmark starves them. Then --connect-budget itself:
# servers that are down, silent or full are tried again, with growing,
# jittered pauses, for that long before 69; and each engine's "server is
# full" (Redis's maxclients, PostgreSQL's max_connections, ZooKeeper's
# maxClientCnxns; MySQL's in mysql.bats) named in that line.

load helpers
load zookeeper_helpers

HOSTS=150

setup() {
	common_setup
	no_suite_budget	# dlock's own 10 s: what a fleet gets
	write_host
}

teardown() {
	stop_pg20
	stop_all
	# by PID, then its files: no later test signals a PID given again
	[[ ! -d $ZK_DIR ]] || { stop_zk_all; rm -rf "$ZK_DIR"; }
}

# $T/host GATE OUT DLOCK-ARGS...: one host of the fleet. Blocks on a shared
# flock of GATE, which the test holds exclusively until the instant, runs
# dlock, and appends its exit status to OUT.
write_host() {
	cat >"$T/host" <<'EOF'
#!/bin/bash
exec 9<"$1"
flock -s 9
exec 9<&-
"$DLOCK" "${@:3}" 2>>"$2.err"
echo $? >>"$2"
EOF
	chmod +x "$T/host"
}

# release_fleet N OUT DLOCK-ARGS...: N hosts at the gate, pinned to one CPU
# where there are two or more, then all let go at once; returns once every
# one of them has ended (60 s at most). The hosts end by themselves (-n,
# a bounded --connect-budget and --min-hold): they are reaped here, not
# tracked, so that teardown never signals a PID the system gave again.
release_fleet() {
	local n=$1 out=$2 ino pin=() k short='' hosts=(); shift 2
	: >"$T/gate"
	: >"$out"
	ino=$(stat -c %i "$T/gate")
	(($(nproc) < 2)) || ! command -v taskset >/dev/null || pin=(taskset -c 0)
	exec 8>"$T/gate"
	flock -x 8
	for ((k = 0; k < n; k++)); do
		# 8>&-: a host holding the gate's descriptor would hold the
		# gate shut for the others, and for itself
		"${pin[@]}" "$T/host" "$T/gate" "$out" "$@" </dev/null >/dev/null 3>&- 8>&- &
		hosts+=($!)
	done
	wait_until 90 at_gate "$ino" "$n" || short=$(blocked_at "$ino")
	flock -u 8	# in any case: the hosts end by themselves
	exec 8>&-
	[[ -z $short ]] || { wait "${hosts[@]}"; fail "only $short of $n hosts at the gate after 90 s"; }
	wait_until 60 all_ended "$out" "$n" ||
		fail "$(wc -l <"$out") of $n hosts ended: $(sort "$out.err" | uniq -c | head -n 3)"
	wait "${hosts[@]}" 2>/dev/null || true
}
blocked_at() { grep -c -- "-> FLOCK .*:$1 " /proc/locks || true; }
at_gate() { (($(blocked_at "$1") >= $2)); }
all_ended() { (($(wc -l <"$1") >= $2)); }

# one_run OUT RUNS N: one host ran the job and exited 0, every other 1
one_run() {
	local hist
	hist=$(sort -n "$1" | uniq -c | awk '{ printf "%s x%s ", $2, $1 }')
	[[ $(wc -l <"$2") == 1 ]] ||
		fail "the job ran $(wc -l <"$2") times; statuses: $hist; $(sort "$1.err" | uniq -c | head -n 3)"
	[[ $hist == "0 x1 1 x$(($3 - 1)) " ]] ||
		fail "statuses: $hist (want one 0, every other 1); $(sort "$1.err" | uniq -c | head -n 3)"
}

@test "Redis, a listen queue of 8: $HOSTS hosts' dlock -n at one instant, one run, every other 1, no 69" {
	start_redis r --tcp-backlog 8
	release_fleet "$HOSTS" "$T/out" -S "$(sock_url r)" -n -t 10 --min-hold 10 K \
		sh -c 'echo ran >>"$1"; sleep 1' sh "$T/runs"
	one_run "$T/out" "$T/runs" "$HOSTS"
}

# A PostgreSQL of its own: 10 connections, 3 of them kept for superusers
# (this test's questions), the hosts an ordinary role over TCP.
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
start_pg20() {
	local bin=$PG_BIN try
	[[ -x $bin/initdb ]] || skip_unless_strict "no PostgreSQL server installed"
	PGD=$(mktemp -d /tmp/dlock-fleet-pg.XXXXXX)
	chmod 755 "$PGD"
	chown postgres "$PGD"
	runuser -u postgres -- "$bin/initdb" --no-sync -A trust -U postgres -D "$PGD/data" \
		>"$PGD/initdb.log" 2>&1 || fail "initdb: $(tail -n 3 "$PGD/initdb.log")"
	for try in 1 2 3; do
		PGP=$(free_port)
		runuser -u postgres -- "$bin/pg_ctl" -D "$PGD/data" -w -t 20 \
			-o "-k $PGD -p $PGP -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=10" \
			-l "$PGD/log" start >/dev/null 2>&1 3>&- && break
		PGP=
	done
	[[ -n $PGP ]] || fail "PostgreSQL did not start: $(tail -n 3 "$PGD/log")"
	head -n 1 "$PGD/data/postmaster.pid" >"$T/pg.pid"
	# the fence table made once, as an administrator would for a fleet
	"$DLOCK" -S "postgres://postgres@127.0.0.1:$PGP/postgres" -n setup true ||
		fail "dlock could not make its fence table"
	psql -h "$PGD" -p "$PGP" -U postgres -Atq -X -c "CREATE ROLE fleet LOGIN" \
		-c "GRANT SELECT, INSERT, UPDATE ON public.dlock_fences TO fleet" postgres
}
stop_pg20() {
	[[ -n ${PGD:-} && -d $PGD ]] || return 0
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGD/data" -m immediate stop \
		>/dev/null 2>&1 || kill "$(<"$T/pg.pid")" 2>/dev/null || true
	rm -rf "$PGD"
	PGD=
}

@test "PostgreSQL, max_connections 10: $HOSTS hosts' dlock -n at one instant, one run, every other 1, no 69" {
	[[ -e $(dirname "$DLOCK")/dlock-postgres.so ]] || skip_unless_strict "no PostgreSQL engine built"
	start_pg20
	release_fleet "$HOSTS" "$T/out" -S "postgres://fleet@127.0.0.1:$PGP/postgres" -n -t 10 \
		--min-hold 10 K sh -c 'echo ran >>"$1"; sleep 1' sh "$T/runs"
	local full
	full=$(grep -cE 'too many clients|connection slots are reserved' "$PGD/log" || true)
	stop_pg20
	one_run "$T/out" "$T/runs" "$HOSTS"
	((full > 0)) || fail "PostgreSQL turned nobody away: no test of a full server"
}

# $T/listener.py PORT LOG MODE: accepts connections on 127.0.0.1:PORT and
# logs each one's time (ms); MODE silent keeps it open and says nothing (a
# server too busy to answer), close closes it at once (one that drops new
# connections). Prints "ready" once listening.
start_listener() {
	local mode=$1
	LPORT=$(free_port)
	cat >"$T/listener.py" <<'EOF'
import socket, sys, time
port, log, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(512)
print("ready", flush=True)
kept = []
with open(log, "a", buffering=1) as f:
    while True:
        c, _ = s.accept()
        f.write("%d\n" % int(time.time() * 1000))
        if mode == "close":
            c.close()
        else:
            kept.append(c)
EOF
	: >"$T/accepts"
	"$PYTHON" "$T/listener.py" "$LPORT" "$T/accepts" "$mode" >"$T/listener.out" 2>&1 </dev/null 3>&- &
	track $!
	wait_until 10 grep -q ready "$T/listener.out" || fail "listener: $(cat "$T/listener.out")"
}
accepts() { wc -l <"$T/accepts"; }
asked() { (($(accepts) > 0)); }

@test "-n: a server that comes up within --connect-budget gives the lock, not 69" {
	local port
	port=$(free_port)
	start_bg w -S "redis://127.0.0.1:$port" -n --connect-budget 8 K touch "$T/ran"
	sleep 1
	alive "$(<"$T/w.dlock")" || fail "dlock -n gave up before the budget: $(cat "$T/w.err")"
	mkdir -p "$T/r"
	_start_redis r "$port" || fail "redis did not start on $port: $(cat "$T/r/log")"
	echo "$port" >"$T/r/port"
	reap w 10
	assert_equal "$bg_status" 0
	[[ -e $T/ran ]] || fail "the command did not run"
	assert_equal "$(all_keys r | grep -c '^dlock:K$')" 0
}

@test "-n: a silent server is tried again until --connect-budget, then 69 naming it" {
	start_listener silent
	local t0=$(now_ms) took
	run -69 --separate-stderr dlock -S "redis://127.0.0.1:$LPORT" -n --node-timeout 0.2 \
		--connect-budget 1.5 K touch "$T/ran"
	took=$(($(now_ms) - t0))
	# the last try falls in the second half of what was left
	((took >= 750 && took < 4000)) || fail "gave up after $took ms, want 0.75 s to 4 s"
	# each try twice as long as the last: 0.2, 0.4, 0.6 s
	(($(accepts) >= 3)) || fail "$(accepts) connections in 1.5 s: not tried again"
	[[ $stderr == "dlock: K: redis://127.0.0.1:$LPORT: no answer in time"* ]] || fail "$stderr"
	[[ ! -e $T/ran ]]
}

@test "--connect-budget 0 tries once; the config file's connect-budget sets it" {
	start_listener close
	local t0=$(now_ms) once
	run -69 dlock -S "redis://127.0.0.1:$LPORT" -n --connect-budget 0 K touch "$T/ran"
	# (dlock's own 10 s would take 5 s at least; a loaded machine's
	# sanitized dlock took 2.9 s for its one try)
	(($(now_ms) - t0 < 4000)) || fail "one try took $(($(now_ms) - t0)) ms"
	once=$(accepts)	# a try may connect twice (its script, its history)
	mkdir -p "$T/xdg/dlock"
	echo "connect-budget = 0.5" >"$T/xdg/dlock/config"
	t0=$(now_ms)
	run -69 dlock -S "redis://127.0.0.1:$LPORT" -n K touch "$T/ran"
	(($(now_ms) - t0 >= 250)) || fail "the config's budget was not used"
	(($(accepts) >= 3 * once)) || fail "$(accepts) connections: not tried again"
	# the command line wins
	: >"$T/accepts"
	t0=$(now_ms)
	run -69 dlock -S "redis://127.0.0.1:$LPORT" -n --connect-budget 0 K touch "$T/ran"
	(($(now_ms) - t0 < 4000)) || fail "--connect-budget 0 did not win over the file"
	assert_equal "$(accepts)" "$once"	# one try: the file's 0.5 s made 3 or more
	[[ ! -e $T/ran ]]
}

@test "bad --connect-budget or connect-budget: 64, naming it" {
	run -64 --separate-stderr dlock -n --connect-budget -1 K true
	[[ $stderr == *"--connect-budget"* ]] || fail "$stderr"
	run -64 --separate-stderr dlock -n --connect-budget inf K true
	mkdir -p "$T/xdg/dlock"
	printf 'ttl = 30\nconnect-budget = soon\n' >"$T/xdg/dlock/config"
	run -64 --separate-stderr dlock -n K true
	[[ $stderr == *"config:2: bad connect-budget 'soon'"* ]] || fail "$stderr"
	# the forms that never wait do not take it
	rm "$T/xdg/dlock/config"
	run -64 dlock status --connect-budget 1 K
}

@test "without -w, failed tries in a row end the wait after --connect-budget" {
	start_listener close
	local t0=$(now_ms) took
	run -69 dlock -S "redis://127.0.0.1:$LPORT" --connect-budget 1 K touch "$T/ran"
	took=$(($(now_ms) - t0))
	((took >= 500 && took < 3000)) || fail "gave up after $took ms"
	[[ ! -e $T/ran ]]
}

@test "-w bounds the tries as it bounds the wait: a short -w is not stretched to --connect-budget, a long one outlasts it" {
	start_listener close
	local t0=$(now_ms) took
	run -69 dlock -S "redis://127.0.0.1:$LPORT" -w 0.3 --connect-budget 5 K touch "$T/ran"
	took=$(($(now_ms) - t0))
	((took >= 300 && took < 1500)) || fail "-w 0.3 gave up after $took ms"
	t0=$(now_ms)
	run -69 dlock -S "redis://127.0.0.1:$LPORT" -w 2 --connect-budget 0.5 K touch "$T/ran"
	took=$(($(now_ms) - t0))
	((took >= 2000 && took < 4000)) || fail "-w 2 gave up after $took ms"
	[[ ! -e $T/ran ]] || fail "the command ran"
}

# silent_w1 [DLOCK-ARGS...]: -w 1 against a Redis that never answers
# ends after 1 to 1.7 s, 69, the command not run
silent_w1() {
	start_listener silent
	local t0=$(now_ms) took
	run -69 dlock -S "redis://127.0.0.1:$LPORT" "$@" -w 1 K touch "$T/ran"
	took=$(($(now_ms) - t0))
	((took >= 1000 && took < 1700)) || fail "-w 1 gave up after $took ms"
	[[ ! -e $T/ran ]] || fail "the command ran"
}

@test "-w bounds the tries against a silent server too: the undo of an unanswered try ends with the wait" {
	# the try waits --node-timeout (1 s) for its answer; the undo of what
	# it may have set gets no more than what is left of -w (before: a
	# second --node-timeout, 2 s in all)
	silent_w1
}

@test "--fair -w 1 against a silent server: no ticket taken, no queue to leave after the wait" {
	# the ticket's round waits --node-timeout (1 s) and fails: no try was
	# sent, so no queue holds us (before: a leaving round of its own, a
	# second --node-timeout, 2 s in all)
	silent_w1 --fair
}

@test "a signal ends a try that waits on a silent server at once (PostgreSQL, MySQL, etcd), not when the try would" {
	start_listener silent
	local url e t0 took
	for url in "postgres://u@127.0.0.1:$LPORT/db" "mysql://u@127.0.0.1:$LPORT/db" "etcd://127.0.0.1:$LPORT"; do
		e=${url%%://*}
		[[ -e $(dirname "$DLOCK")/dlock-$e.so ]] || continue
		# the tries grow, 1, 2, then 4 s from about 3.3 s on (--node-timeout
		# 1, --connect-budget 60): at 3.5 s one is waiting for its answer
		start_bg s -S "$url" --connect-budget 60 K touch "$T/ran"
		sleep 3.5
		alive "$(<"$T/s.dlock")" || fail "$e: dlock gave up: $(cat "$T/s.err")"
		t0=$(now_ms)
		kill -TERM "$(<"$T/s.dlock")"
		reap s 10
		took=$(($(now_ms) - t0))
		assert_equal "$bg_status" 143
		((took < 1500)) || fail "$e: SIGTERM took $took ms to end dlock"
		[[ ! -e $T/ran ]] || fail "$e: the command ran"
	done
}

@test "etcd: a signal ends a try at once also when the URL names more members: the next one is not asked" {
	[[ -e $(dirname "$DLOCK")/dlock-etcd.so ]] || skip "no etcd engine"
	local p1 t0 took
	start_listener silent
	p1=$LPORT
	start_listener silent
	# the first member's answer is awaited up to --node-timeout (5 s);
	# before: the signal cut that wait, and the second member was asked
	# for the rest of it
	start_bg s -S "etcd://127.0.0.1:$p1,127.0.0.1:$LPORT" --node-timeout 5 \
		--connect-budget 60 K touch "$T/ran"
	wait_until 10 asked || fail "no member was asked: $(cat "$T/s.err")"
	t0=$(now_ms)
	kill -TERM "$(<"$T/s.dlock")"
	reap s 15
	took=$(($(now_ms) - t0))
	assert_equal "$bg_status" 143
	((took < 1500)) || fail "SIGTERM took $took ms to end dlock ($(accepts) connections)"
	[[ ! -e $T/ran ]] || fail "the command ran"
}

@test "a server that drops every connection at once is not hammered: a few connections a second" {
	start_listener close
	run -69 dlock -S "redis://127.0.0.1:$LPORT" --connect-budget 2 K touch "$T/ran"
	# 0.1, 0.2, 0.4, 0.8 s... between tries: a dozen or so in 2 s (before:
	# every closed connection woke the waiter at once, 10,000 a second)
	(($(accepts) <= 40)) || fail "$(accepts) connections in 2 s"
	[[ ! -e $T/ran ]]
}

@test "hosts turned away together do not come back together: the pauses are jittered" {
	start_listener close
	local k pids=()
	for ((k = 0; k < 20; k++)); do
		"$DLOCK" -S "redis://127.0.0.1:$LPORT" -n --connect-budget 2 K true \
			</dev/null >/dev/null 2>&1 3>&- &
		pids+=($!)
	done
	wait "${pids[@]}" || true	# each ends within its budget
	spread_out
}
# After the first second, no 50 ms holds a quarter of the tries: without
# jitter, all 20 hosts come back in the same few ms, each wave in one
# window.
spread_out() {
	sort -n "$T/accepts" | awk '
		NR == 1 { t0 = $1 }
		$1 - t0 >= 1000 { late++; b = int(($1 - t0) / 50); c[b]++; if (c[b] > m) m = c[b] }
		END {
			if (late < 20) { print "only " late + 0 " connections after the first second"; exit 1 }
			if (m * 4 > late) { print "a 50 ms window with " m " of the " late " connections"; exit 1 }
		}' ||
		fail "$(sort -n "$T/accepts" | awk 'NR == 1 { t0 = $1 } { printf "%d ", $1 - t0 }')"
}

@test "ZooKeeper: hosts turned away together come back at the core's jittered pace, not the client library's own second" {
	start_listener close
	local k pids=()
	# the library, left to itself, tries again a sixtieth of the
	# session timeout after it failed: every host at once, each second
	for ((k = 0; k < 20; k++)); do
		"$DLOCK" -S "zk://127.0.0.1:$LPORT" -n -t 60 --connect-budget 2 K true \
			</dev/null >/dev/null 2>&1 3>&- &
		pids+=($!)
	done
	wait "${pids[@]}" || true
	spread_out
}

# ---- a full server, on each engine: named, and tried again ----------------

# hold_sockets N SECONDS HOST PORT: N connections kept SECONDS, then
# closed: what fills a server that counts connections as it accepts them
# (Redis, ZooKeeper). Returns once they are all open; the holder in $holder.
hold_sockets() {
	"$PYTHON" -c '
import socket, sys, time
n, secs, flag, host, port = sys.argv[1:]
cs = [socket.create_connection((host, int(port))) for _ in range(int(n))]
open(flag, "w").write("%d\n" % len(cs))
time.sleep(float(secs))
' "$1" "$2" "$T/held" "$3" "$4" 3>&- &
	holder=$!
	track "$holder"
	wait_until 10 test -s "$T/held" || fail "the holder's connections did not open"
	rm -f "$T/held"
}

# full_then_free URL LINE: dlock -n on a server kept full ("$fill 30") is
# tried again for --connect-budget, then exits 69 with LINE, naming what
# is full; on one kept full for 1.5 s only, -n gets the lock once a
# connection is free, within the budget.
full_then_free() {
	local url=$1 line=$2 t0 took
	$fill 30
	t0=$(now_ms)
	run -69 --separate-stderr dlock -S "$url" -n --connect-budget 1 K touch "$T/ran"
	took=$(($(now_ms) - t0))
	end_pids TERM $holder
	[[ $stderr == "$line" ]] || fail "stderr: $stderr"
	# the last try falls in the second half of the budget
	((took >= 500)) || fail "gave up after $took ms, before --connect-budget"
	[[ ! -e $T/ran ]] || fail "the command ran"
	$fill 1.5
	run --separate-stderr dlock -S "$url" -n --connect-budget 10 K touch "$T/ran"
	((status == 0)) && [[ -e $T/ran ]] || fail "the command did not run ($status): $stderr"
}

@test "Redis at its maxclients: -n tried again within --connect-budget, then 69 naming maxclients; a client gone, the lock" {
	start_redis_tcp r --maxclients 1
	fill() { hold_sockets 1 "$1" 127.0.0.1 "$(<"$T/r/port")"; }
	fill=fill
	# main: 70 at once, the server's words as an unexpected answer
	full_then_free "$(tcp_url r)" \
		"dlock: K: $(tcp_url r): ERR max number of clients reached (the server is full: maxclients)"
	assert_equal "$(all_keys r | grep -c '^dlock:K$')" 0
}

# fill_pg SECONDS: 7 sessions of the role fleet, each asleep SECONDS,
# fill start_pg20's 10 connections less the 3 kept for superusers; their
# psqls in $holder
fill_pg() {
	local k
	holder=
	# a client killed leaves its backend asleep: the last filling's go
	psql -h "$PGD" -p "$PGP" -U postgres -Atq -X -c "SELECT pg_terminate_backend(pid)
		FROM pg_stat_activity WHERE usename = 'fleet'" postgres >/dev/null
	wait_until 10 no_sessions_of fleet || fail "the role's sessions did not end"
	# a slot of a backend just ended (the last dlock's, a terminated
	# one) may not be free yet: a psql turned away is started again
	local round n
	for ((round = 0; round < 10; round++)); do
		n=$(count_sessions_of fleet)
		((n >= 7)) && break
		for ((k = n; k < 7; k++)); do
			psql -h 127.0.0.1 -p "$PGP" -U fleet -Atq -X -c "SELECT pg_sleep($1)" \
				postgres >/dev/null 2>&1 </dev/null 3>&- &
			track $!
			holder+="$! "
		done
		wait_until 2 sessions_of fleet 7 && break
	done
	sessions_of fleet 7 || fail "the role's sessions did not start: $(count_sessions_of fleet) of 7"
}

@test "PostgreSQL with no connection to give: -n tried again within --connect-budget, then 69 naming it; one freed, the lock" {
	[[ -e $(dirname "$DLOCK")/dlock-postgres.so ]] || skip_unless_strict "no PostgreSQL engine built"
	start_pg20
	fill=fill_pg
	# main: 69 at once, in the server's words alone
	full_then_free "postgres://fleet@127.0.0.1:$PGP/postgres" \
		"dlock: K: postgres://fleet@127.0.0.1:$PGP/postgres: remaining connection slots are reserved for non-replication superuser connections (the server is full: max_connections, less the reserved slots)"
}
no_sessions_of() { ! sessions_of "$1" 1; }
count_sessions_of() {
	psql -h "$PGD" -p "$PGP" -U postgres -Atq -X \
		-c "SELECT count(*) FROM pg_stat_activity WHERE usename = '$1'" postgres
}
sessions_of() {
	(($(psql -h "$PGD" -p "$PGP" -U postgres -Atq -X \
		-c "SELECT count(*) FROM pg_stat_activity WHERE usename = '$1'" postgres) >= $2))
}

pg_refusals() { grep -cE 'too many clients|connection slots are reserved' "$PGD/log" || true; }

@test "PostgreSQL kept full: waiters turned away come back after 0.8 s, not 0.1 s as to a server down (each refusal costs it a backend), and get in once a connection frees" {
	[[ -e $(dirname "$DLOCK")/dlock-postgres.so ]] || skip_unless_strict "no PostgreSQL engine built"
	start_pg20
	fill_pg 60
	local k before refused pids=() took t0
	before=$(pg_refusals)
	: >"$T/runs"
	for ((k = 0; k < 10; k++)); do
		"$DLOCK" -S "postgres://fleet@127.0.0.1:$PGP/postgres" -w 40 K \
			sh -c 'echo ran >>"$1"' sh "$T/runs" </dev/null >/dev/null 2>>"$T/w.err" 3>&- &
		pids+=($!)
		track $!
	done
	sleep 5
	refused=$(($(pg_refusals) - before))
	# the connections freed: every waiter gets in, within a pause
	t0=$(now_ms)
	psql -h "$PGD" -p "$PGP" -U postgres -Atq -X -c "SELECT pg_terminate_backend(pid)
		FROM pg_stat_activity WHERE usename = 'fleet' AND query LIKE '%pg_sleep%'" postgres >/dev/null
	for k in "${pids[@]}"; do
		wait "$k" || fail "a waiter exited $?: $(sort "$T/w.err" | uniq -c | head -n 3)"
	done
	took=$(($(now_ms) - t0))
	assert_equal "$(wc -l <"$T/runs")" 10
	((took < 15000)) || fail "the waiters took $took ms to get in once connections were free"
	# main: tries at 0, 0.1, 0.3, 0.7, 1.5, 3.1 s on average, 6 refusals a
	# waiter in the first 5 s (about 60 in all); now 0, 0.8, 2.4 (5.6) s,
	# 3 or 4 each
	echo "# $refused refusals of 10 waiters in their first 5 s" >&3
	((refused >= 10)) || fail "only $refused refusals: the server was not full"
	((refused <= 48)) || fail "$refused refusals of 10 waiters in 5 s"
}

# zk_limited NAME MAX: a ZooKeeper server of its own, at most MAX
# connections per client address (maxClientCnxns); its port in ZK_PORT
zk_limited() {
	mkdir -p "$ZK_DIR"
	ZK_PORT=$(free_port)
	_zk_conf "$1" "$ZK_PORT" "maxClientCnxns=$2"
	_zk_run "$1" org.apache.zookeeper.server.ZooKeeperServerMain
	wait_until 30 zk_serving "$ZK_PORT" || fail "zookeeper: $(tail -n 5 "$ZK_DIR/$1/log")"
}

@test "ZooKeeper, maxClientCnxns 6: $HOSTS hosts' dlock -n -t 60 at one instant from one address, one run, every other 1, no 69" {
	local port
	zk_limited fleet 6
	port=$ZK_PORT
	# main: the hosts turned away came back with the client library, all
	# together once a second, a few of them a second: 69 after the budget
	release_fleet "$HOSTS" "$T/out" -S "zk://127.0.0.1:$port" -n -t 60 --min-hold 10 \
		--connect-budget 4 K sh -c 'echo ran >>"$1"; sleep 1' sh "$T/runs"
	one_run "$T/out" "$T/runs" "$HOSTS"
}

@test "ZooKeeper at its maxClientCnxns: -n tried again within --connect-budget, then 69 naming it; one freed, the lock" {
	local port
	zk_limited full 2
	port=$ZK_PORT
	fill() { hold_sockets 2 "$1" 127.0.0.1 "$port"; }
	fill=fill
	# main: "cannot connect: host is down", at once
	full_then_free "zk://127.0.0.1:$port" \
		"dlock: K: zk://127.0.0.1:$port: cannot connect: the server closed the connection before a session began (the server is full: maxClientCnxns from this address; or it is not serving)"
}
