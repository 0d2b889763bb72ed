#!/usr/bin/env bats
# wait.bats - waiting for a held lock (issue 4): a release wakes the waiter
# at once (a push on the wake list it is blocked on, not polling, not the
# lease running out); releases by clients that wake nobody and expiry are
# noticed too; a waiter that is interrupted or gives up leaves no blocked
# connection and no queue entry. An idle waiter costs the server a try
# every 2 to 4 s (issue 11), and one that was killed is dropped.
# Each check runs on one server of every engine (DLOCK_TEST_ENGINE) where
# it is not about Redis's own wake-ups, and on three Redis (RedLock).

load helpers
load engine_helpers
load modes_helpers

setup_file() { engine_start; }
teardown_file() { engine_stop; }
setup() {
	engine_setup
	write_stamper
}
teardown() { engine_teardown; }

# waiter_blocked N: N waiters blocked for their wake-up on every server
# (Redis's BLPOP), or waiting in the engine's store
waiter_blocked() {
	if on_redis; then blocked_all "$1"; else waiting "$K" "$1"; fi
}

# push_round I: holder hI (-t 30) waits for hI.go; waiter wI starts, and
# once it is blocked on every server, hI is let go. Prints
#   CMD_MS PUSH_MS GAP_MS
# CMD_MS: the waiter's command started this long after the holder's ended;
# from r1's MONITOR (server time): PUSH_MS, the waiter's successful acquire
# after the holder's release; GAP_MS, that acquire after the waiter's
# previous try. The holder is let go a second after the waiter blocked,
# when the waiter's timed pauses (which grow from about 0.25 s) are 0.67
# to 1.33 s long; the holder's lease, 30 s, is no earlier bound.
push_round() {
	local i=$1 mon=$T/mon$1 cmd_ms
	start_bg "h$i" "${SRV[@]}" -t 30 "$K" "$T/stamper" "$T/h$i"
	wait_ready "h$i"
	on_redis && start_monitor r1 "$mon"
	start_bg "w$i" "${SRV[@]}" -t 30 "$K" sh -c 'date +%s%N >"$1"' sh "$T/w$i.start"
	wait_until 5 waiter_blocked 1 || fail "w$i never blocked for a wake-up: $(cat "$T/w$i.err")"
	[[ ! -e $T/w$i.start ]] || fail "w$i ran while h$i held the lock"
	sleep 1
	touch "$T/h$i.go"
	reap "h$i"
	((bg_status == 0)) || fail "h$i: status $bg_status: $(cat "$T/h$i.err")"
	reap "w$i"
	((bg_status == 0)) || fail "w$i: status $bg_status: $(cat "$T/w$i.err")"
	cmd_ms=$((($(<"$T/w$i.start") - $(<"$T/h$i.end")) / 1000000))
	# the other stores: the command's start alone (Redis's MONITOR tells
	# the wake-up from a try)
	on_redis || { echo "$cmd_ms 0 0"; return; }
	end_pids TERM "$MONITOR"
	awk -v cmd_ms="$cmd_ms" '
		$3 == "lua]" || !/"EVAL(SHA)?" / { next }
		index($0, "\"dlock:K\" \"{dlock:K}:fence\"") {	# acquire
			if (!r) p = $1; else if (!a) a = $1
			next
		}
		index($0, "\"dlock:K\" \"{dlock:K}:alive\" \"{dlock:K}:history\"") {	# release
			if (!r) r = $1
		}
		END {
			if (!p || !r || !a) { print "monitor: no try/release/acquire"; exit 1 }
			printf "%d %d %d\n", cmd_ms, (a - r) * 1000, (a - p) * 1000
		}' "$mon"
}

check_push() {
	local i cmd=() push=() out late=0
	for i in 1 2 3; do
		out=$(push_round "$i") || fail "round $i: $out"
		set -- $out
		if on_redis; then
			echo "# round $i: command after $1 ms, acquire $2 ms after the release, $3 ms after the previous try" >&3
		else
			echo "# round $i: command after $1 ms" >&3
		fi
		cmd+=("$1") push+=("$2")
		(($2 < 100)) || late=1
	done
	local m
	m=$(median3 "${cmd[@]}")
	((m < 150)) || fail "the waiter's command started a median $m ms after the holder's ended (${cmd[*]})"
	# A waiter whose timed pause is 0.67 to 1.33 s long lands within
	# 100 ms of the release one time in ten: three times running, one
	# time in a thousand.
	# (How long after its previous try says nothing: that is when the
	# holder happened to release, which depends on the machine's load.)
	((late == 0)) ||
		fail "an acquire came >= 100 ms after the release (${push[*]} ms): polling, not woken"
	nothing_left
}

@test "a release wakes the waiter at once (-t 30)" {
	one_server
	check_push
}

@test "RedLock: a release wakes the waiter at once (-t 30)" {
	redis_only RedLock
	servers 3
	check_push
}

@test "a waiter gets in after a redis-py holder releases (no wake-up)" {
	redis_only "redis-py's Lock"
	"$PYTHON" -c 'import redis' 2>/dev/null ||
		skip_unless_strict "$PYTHON has no redis module (python3-redis)"
	servers 1
	cat >"$T/pyhold" <<'EOF'
import os, sys, time
import redis
sock, p = sys.argv[1:3]
lock = redis.Redis(unix_socket_path=sock).lock("dlock:K", timeout=30)
if not lock.acquire(blocking=False):
    sys.exit("redis-py could not acquire dlock:K")
open(p + ".ready", "w").close()
end = time.monotonic() + 30
while not os.path.exists(p + ".release") and time.monotonic() < end:
    time.sleep(0.01)
lock.release()
open(p + ".released", "w").close()
EOF
	"$PYTHON" "$T/pyhold" "$(sock r1)" "$T/py" </dev/null 2>"$T/py.err" 3>&- &
	local py=$!
	track $py
	wait_until 5 test -e "$T/py.ready" || fail "redis-py did not get the lock: $(cat "$T/py.err")"
	start_bg w "${SRV[@]}" K sh -c 'echo "$DLOCK_TOKEN" >"$1"' sh "$T/w.token"
	wait_until 5 blocked_all 1 || fail "the waiter never blocked for a wake-up: $(cat "$T/w.err")"
	[[ ! -e $T/w.token ]] || fail "the waiter ran while redis-py held the lock"
	touch "$T/py.release"
	wait_until 5 test -e "$T/py.released" || fail "redis-py did not release"
	# redis-py's lease had 30 s left: only a retry can see the release.
	reap w 5
	assert_equal "$bg_status" 0
	[[ $(<"$T/w.token") =~ ^[0-9a-f]{32}$ ]] || fail "waiter's token: $(<"$T/w.token")"
	key_gone r1 dlock:K
}

check_expiry() {
	local t0 s started_ms
	t0=$(now_ms)
	for s in "${NAMES[@]}"; do
		assert_equal "$(rcli "$s" set dlock:K x PX 800)" OK
	done
	start_bg w "${SRV[@]}" K sh -c 'date +%s%N >"$1"' sh "$T/w.start"
	# Far sooner than any 30 s: the waiter sleeps no longer than the lease.
	reap w 5
	assert_equal "$bg_status" 0
	started_ms=$(($(<"$T/w.start") / 1000000 - t0))
	((started_ms >= 800)) || fail "the command ran $started_ms ms after the SET PX 800"
	echo "# the command ran $started_ms ms after the SET PX 800" >&3
	nothing_left
}

@test "a waiter gets in when a holder's key expires (SET PX 800)" {
	redis_only "a key another client SETs"
	servers 1
	check_expiry
}

@test "RedLock: a waiter gets in when a holder's key expires" {
	redis_only RedLock
	servers 3
	check_expiry
}

# check_interrupted [--fair]: SIGINT to a waiting dlock
check_interrupted() {
	local token
	hold h "${SRV[@]}" "$K"
	wait_ready h
	token=$(job_var h DLOCK_TOKEN)
	start_bg w "${SRV[@]}" "$@" "$K" touch "$T/ran"
	wait_until 5 waiter_blocked 1 || fail "the waiter never blocked for a wake-up: $(cat "$T/w.err")"
	[[ $* != *--fair* ]] || ! on_redis || wait_until 5 queued_all 1 || fail "the waiter is not queued"
	kill -INT "$(<"$T/w.dlock")"
	reap w 5
	assert_equal "$bg_status" 130
	[[ ! -e $T/ran ]] || fail "the command ran"
	wait_until 2 waiter_blocked 0 || fail "still blocked"
	if_redis every_server 0 zcard '{dlock:K}:queue'
	if_redis every_server 0 zcard '{dlock:K}:alive'
	if_redis every_server "$token" get dlock:K
	on_redis || store_has_token "$K" "$token" || fail "the holder: $(store_token "$K")"
	finish h
	assert_equal "$bg_status" 0
	nothing_left
}

@test "SIGINT while waiting: 130, nothing left blocked" {
	one_server
	check_interrupted
}

@test "SIGINT while waiting --fair: 130, nothing blocked, no queue entry" {
	needs --fair
	one_server
	check_interrupted --fair
}

@test "RedLock: SIGINT while waiting --fair: 130, nothing left" {
	redis_only RedLock
	servers 3
	check_interrupted --fair
}

# check_timeout [--fair]: -w 0.5 gives up
check_timeout() {
	local token
	hold h "${SRV[@]}" "$K"
	wait_ready h
	token=$(job_var h DLOCK_TOKEN)
	run -1 tdlock "${SRV[@]}" -w 0.5 "$@" "$K" touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
	wait_until 2 waiter_blocked 0 || fail "still blocked"
	if_redis every_server 0 zcard '{dlock:K}:queue'
	if_redis every_server 0 zcard '{dlock:K}:alive'
	if_redis every_server "$token" get dlock:K
	on_redis || store_has_token "$K" "$token" || fail "the holder: $(store_token "$K")"
	finish h
	assert_equal "$bg_status" 0
	nothing_left
}

@test "-w 0.5 gives up with 1 and leaves nothing blocked" {
	one_server
	check_timeout
}

@test "-w 0.5 --fair gives up with 1, nothing blocked, no queue entry" {
	needs --fair
	one_server
	check_timeout --fair
}

@test "RedLock: -w 0.5 --fair gives up and leaves nothing" {
	redis_only RedLock
	servers 3
	check_timeout --fair
}

# check_run_unblocked [--fair]: a waiter that got the lock runs its
# command with its wake-up connections closed and out of the queue.
check_run_unblocked() {
	hold h "${SRV[@]}" "$K"
	wait_ready h
	hold w "${SRV[@]}" "$@" "$K"
	wait_until 5 waiter_blocked 1 || fail "the waiter never blocked for a wake-up: $(cat "$T/w.err")"
	finish h
	assert_equal "$bg_status" 0
	wait_ready w
	wait_until 2 waiter_blocked 0 ||
		fail "the command runs with dlock still blocked"
	if_redis every_server 0 zcard '{dlock:K}:queue'
	if on_redis; then
		majority_holds "$(job_var w DLOCK_TOKEN)"
	else
		store_has_token "$K" "$(job_var w DLOCK_TOKEN)" || fail "the holder: $(store_token "$K")"
	fi
	finish w
	assert_equal "$bg_status" 0
	nothing_left
}

@test "the waiter's wake-up connection is closed while its command runs" {
	needs --fair
	one_server
	check_run_unblocked --fair
}

@test "RedLock: the waiter's wake-up connections are closed while its command runs" {
	redis_only RedLock
	servers 3
	check_run_unblocked
}

# A waiter woken with nothing to gain (here a push while the holder still
# holds; as well a newcomer that got in first) tries, is refused, and
# blocks again: the holder's release still wakes it at once.
@test "a waiter woken for nothing blocks again, and the release wakes it" {
	redis_only "its wake-up list"
	local tok t0 ms
	servers 1
	hold h "${SRV[@]}" K
	wait_ready h
	start_bg w "${SRV[@]}" K sh -c 'date +%s%N >"$1"' sh "$T/w.start"
	wait_until 5 blocked_all 1 || fail "the waiter never blocked: $(cat "$T/w.err")"
	tok=$(rcli r1 zrange '{dlock:K}:alive' 0 0)
	[[ $tok =~ ^[0-9a-f]{32}$ ]] || fail "the waiter's token: '$tok'"
	sleep 2	# past its first pauses
	assert_equal "$(rcli r1 lpush "{dlock:K}:wake:$tok" 1)" 1
	wait_until 2 key_gone r1 "{dlock:K}:wake:$tok" || fail "the waiter did not take its wake-up"
	wait_until 2 blocked_all 1 || fail "the waiter did not block again"
	[[ ! -e $T/w.start ]] || fail "the waiter ran while h held the lock"
	t0=$(date +%s%N)
	finish h
	assert_equal "$bg_status" 0
	reap w 5
	assert_equal "$bg_status" 0
	ms=$((($(<"$T/w.start") - t0) / 1000000))
	echo "# the command started $ms ms after the holder was let go" >&3
	((ms < 1000)) || fail "the waiter started $ms ms after the holder was let go: not woken"
	nothing_left
}

# scripts_run NAME: the scripts (EVALSHA, EVAL) NAME ran since CONFIG RESETSTAT
scripts_run() {
	rcli "$1" info commandstats | tr -d '\r' |
		awk -F'[_:=,]' '$2 == "evalsha" || $2 == "eval" { n += $4 } END { print n + 0 }'
}

@test "an idle waiter costs a try every 2 to 4 s, not several a second" {
	redis_only "its tries, counted by the server"
	local n id
	servers 1
	hold h "${SRV[@]}" -t 60 K	# renews every 20 s: once in the window at most
	wait_ready h
	for id in w1 w2 w3 w4 w5; do
		start_bg "$id" "${SRV[@]}" K true
	done
	wait_until 5 blocked_all 5 || fail "the waiters never blocked: $(cat "$T"/w?.err)"
	sleep 5	# past the first pauses (about 0.25, 0.5, 1 and 2 s)
	rcli r1 config resetstat >/dev/null
	sleep 10
	n=$(scripts_run r1)
	echo "# 5 idle waiters: $n scripts in 10 s" >&3
	# One try every 2 s each at most, 5 * (10 / 2 + 1), and the holder's
	# renewal; every 4 s at least, to catch releases that wake nobody.
	((n <= 31)) || fail "5 idle waiters ran $n scripts in 10 s: more than a try every 2 s each"
	((n >= 10)) || fail "5 idle waiters ran $n scripts in 10 s: less than a try every 4 s each"
	finish h
	assert_equal "$bg_status" 0
	for id in w1 w2 w3 w4 w5; do
		reap "$id" 10
		assert_equal "$bg_status" 0
	done
	nothing_left
}

# check_foreign_del: another client's key, deleted (which wakes nobody)
# once the waiter pauses 2 to 4 s between tries: it still gets in within 5 s.
check_foreign_del() {
	local s t0 ms
	for s in "${NAMES[@]}"; do
		assert_equal "$(rcli "$s" set dlock:K foreign PX 60000)" OK
	done
	start_bg w "${SRV[@]}" K sh -c 'date +%s%N >"$1"' sh "$T/w.start"
	wait_until 5 blocked_all 1 || fail "the waiter never blocked: $(cat "$T/w.err")"
	sleep 6
	[[ ! -e $T/w.start ]] || fail "the waiter ran while the foreign key was there"
	t0=$(date +%s%N)
	for s in "${NAMES[@]}"; do
		assert_equal "$(rcli "$s" del dlock:K)" 1
	done
	reap w 10
	assert_equal "$bg_status" 0
	ms=$((($(<"$T/w.start") - t0) / 1000000))
	echo "# the command started $ms ms after the DEL" >&3
	((ms < 5000)) || fail "the waiter noticed the DEL after $ms ms"
	nothing_left
}

@test "a DEL by another client is noticed within 5 s, however long the wait" {
	redis_only "a key another client SETs and DELs"
	servers 1
	check_foreign_del
}

@test "RedLock: a DEL by another client is noticed within 5 s" {
	redis_only RedLock
	servers 3
	check_foreign_del
}

# A killed waiter counts as gone 6 s + 2 * --node-timeout after its last
# try (6.4 s here) and is dropped at the next try of another waiter (4 s
# at most); a live one, trying every 2 to 4 s, never lapses.
@test "a killed waiter leaves :alive within its liveness and a pause; a live one stays" {
	redis_only "its liveness set"
	local tok1 tok2 t0 score
	servers 1
	hold h "${SRV[@]}" K
	wait_ready h
	start_bg w1 "${SRV[@]}" --node-timeout 0.2 K true
	wait_until 5 is r1 1 zcard '{dlock:K}:alive' || fail "w1 is not a waiter: $(cat "$T/w1.err")"
	tok1=$(rcli r1 zrange '{dlock:K}:alive' 0 0)
	start_bg w2 "${SRV[@]}" K true
	wait_until 5 is r1 2 zcard '{dlock:K}:alive' || fail "w2 is not a waiter: $(cat "$T/w2.err")"
	tok2=$(rcli r1 zrange '{dlock:K}:alive' 0 -1 | grep -vx "$tok1")
	wait_until 5 blocked_all 2 || fail "the waiters never blocked"
	end_pids KILL "$(<"$T/w1.dlock")"
	t0=$(now_ms)
	until [[ -z $(rcli r1 zscore '{dlock:K}:alive' "$tok1") ]]; do
		(($(now_ms) - t0 < 12000)) || fail "the killed waiter is still in :alive after 12 s"
		score=$(rcli r1 zscore '{dlock:K}:alive' "$tok2")
		[[ -n $score ]] && ((${score%.*} > $(server_ms r1))) ||
			fail "the live waiter lapsed ('$score') $(($(now_ms) - t0)) ms on"
		sleep 0.1
	done
	echo "# the killed waiter was dropped $(($(now_ms) - t0)) ms after SIGKILL" >&3
	finish h
	assert_equal "$bg_status" 0
	reap w2 5
	assert_equal "$bg_status" 0
	nothing_left
}

# A waiter's try that the server carried out only after the try's own
# deadline (the server paused past --node-timeout): the lock is the
# waiter's, under its one token for the whole wait. On Redis it was
# refused as held, and the waiter then waited for itself until its own
# lease lapsed: -w 30 ran out (1) and the lock stayed blocked for its TTL.
# The other engines hold it by their session or lease, which the waiter's
# next try finds as its own.
@test "a waiter's try carried out late, after the server paused, holds the lock for it: it runs at once" {
	hold h -S "$U" -t 2 "$K"
	wait_ready h
	start_bg w -S "$U" -w 30 "$K" sh -c 'echo ran'
	wait_until 5 waiter_blocked 1 || fail "the waiter does not wait"
	server_pause
	# past the holder's lease (2 s) and the waiter's next try's deadline
	sleep 3
	server_resume
	reap h
	assert_equal "$bg_status" 75	# its lease lost while the server paused
	reap w 10
	assert_equal "$bg_status" 0
	assert_equal "$(<"$T/w.out")" ran
	store_nothing_left
}
