#!/usr/bin/env bats
# fair.bats - --fair: waiters get the lock in arrival order; a killed
# waiter does not stall the queue (its liveness, 6 s + 2 * node-timeout,
# runs out, and the waiter behind it tries again then); a waiter that gives
# up leaves the queue at once. On one server of every engine
# (DLOCK_TEST_ENGINE: MySQL refuses --fair, 64, which each test checks
# before it skips; PostgreSQL, ZooKeeper and etcd queue in arrival order
# anyway) and on three Redis (RedLock).

load helpers
load engine_helpers
load modes_helpers

setup_file() { engine_start --fair; }	# every test needs it
teardown_file() { engine_stop; }
setup() {
	engine_setup
	needs --fair
	# a killed waiter keeps its place until it lapses: on Redis its
	# liveness (6 s + 2 * --node-timeout); where its node or key lives
	# with its session or lease (ZooKeeper, etcd), the TTL: 2 s here
	DIES=()
	on_redis || DIES=(-t 2)
}
teardown() { engine_teardown; }

# queued N: N waiters in the queue (Redis: on every server)
queued() {
	if on_redis; then queued_all "$1"; else waiting "$K" "$1"; fi
}

# fair_waiter I: waiter wI (--fair, waits for ever) appends I to $T/order
# once it has the lock; returns once it is queued as the Ith.
fair_waiter() {
	start_bg "w$1" "${SRV[@]}" --fair "${@:2}" "$K" sh -c 'echo "$1" >>"$2"' sh "$1" "$T/order"
	wait_until 5 queued "$1" ||
		fail "w$1 is not the $1th in the queue: $(cat "$T/w$1.err")"
}

check_order() {
	local i
	hold h "${SRV[@]}" "$K"
	wait_ready h
	for i in $(seq 8); do
		fair_waiter "$i"
	done
	[[ ! -e $T/order ]] || fail "a waiter ran while h held the lock: $(cat "$T/order")"
	finish h
	assert_equal "$bg_status" 0
	for i in $(seq 8); do
		reap "w$i" 20
		((bg_status == 0)) || fail "w$i: status $bg_status: $(cat "$T/w$i.err")"
	done
	assert_equal "$(tr '\n' ' ' <"$T/order")" "1 2 3 4 5 6 7 8 "
	if_redis no_queue_left
	nothing_left
}

@test "--fair: 8 waiters get the lock in arrival order" {
	one_server
	check_order
}

@test "RedLock: --fair: 8 waiters get the lock in arrival order" {
	redis_only RedLock
	servers 3
	check_order
}

check_killed_waiter() {
	local i
	hold h "${SRV[@]}" "$K"
	wait_ready h
	for i in $(seq 5); do
		if ((i == 3)); then fair_waiter "$i" "${DIES[@]}"; else fair_waiter "$i"; fi
	done
	end_pids KILL "$(<"$T/w3.dlock")"
	finish h
	assert_equal "$bg_status" 0
	# w3 stays queued until its liveness (6 s + 2 * 1 s) runs out.
	for i in 1 2 4 5; do
		reap "w$i" 20
		((bg_status == 0)) || fail "w$i: status $bg_status: $(cat "$T/w$i.err")"
	done
	assert_equal "$(tr '\n' ' ' <"$T/order")" "1 2 4 5 "
	if_redis no_queue_left
	nothing_left
}

@test "--fair: a killed waiter does not stall the queue" {
	one_server
	check_killed_waiter
}

@test "RedLock: --fair: a killed waiter does not stall the queue" {
	redis_only RedLock
	servers 3
	check_killed_waiter
}

# A killed head of the queue is woken by the release in vain, and holds
# the queue up until its liveness lapses, 6 s + 2 * --node-timeout (6.4 s
# here) after its last try: the waiter behind it, told so by its refusals,
# tries again then, not at its next pause (up to 4 s later).
check_killed_head() {
	local t0 ms
	hold h "${SRV[@]}" "$K"
	wait_ready h
	fair_waiter 1 --node-timeout 0.2 "${DIES[@]}"
	fair_waiter 2
	end_pids KILL "$(<"$T/w1.dlock")"
	t0=$(now_ms)
	finish h
	assert_equal "$bg_status" 0
	reap w2 15
	assert_equal "$bg_status" 0
	ms=$(($(now_ms) - t0))
	echo "# w2 ran $ms ms after the head was killed" >&3
	((ms < 8000)) || fail "w2 ran $ms ms after the head was killed (its liveness: 6.4 s)"
	assert_equal "$(tr '\n' ' ' <"$T/order")" "2 "
	if_redis no_queue_left
	nothing_left
}

@test "--fair: a killed head holds the queue up only until it lapses" {
	one_server
	check_killed_head
}

@test "RedLock: --fair: a killed head holds the queue up only until it lapses" {
	redis_only RedLock
	servers 3
	check_killed_head
}

check_give_up() {
	local tok s
	hold h "${SRV[@]}" "$K"
	wait_ready h
	fair_waiter 1
	# -w 3: time to see it queued and queue w3 behind it, on a busy machine
	fair_waiter 2 -w 3
	if on_redis; then
		tok=$(rcli r1 zrange '{dlock:K}:queue' 1 1)
		[[ $tok =~ ^[0-9a-f]{32}$ ]] || fail "w2's place in the queue: '$tok'"
	fi
	fair_waiter 3
	reap w2 10
	assert_equal "$bg_status" 1
	for s in "${NAMES[@]}"; do
		assert_equal "$(rcli "$s" zscore '{dlock:K}:queue' "$tok")" ''
		assert_equal "$(rcli "$s" zscore '{dlock:K}:alive' "$tok")" ''
	done
	if_redis every_server 2 zcard '{dlock:K}:queue'
	wait_until 5 queued 2 || fail "w2 is still in the queue"
	finish h
	assert_equal "$bg_status" 0
	reap w1 10
	assert_equal "$bg_status" 0
	reap w3 10
	assert_equal "$bg_status" 0
	assert_equal "$(tr '\n' ' ' <"$T/order")" "1 3 "
	if_redis no_queue_left
	nothing_left
}

@test "--fair: a waiter that gives up (-w 3) leaves the queue" {
	one_server
	check_give_up
}

@test "RedLock: --fair: a waiter that gives up (-w 3) leaves the queue" {
	redis_only RedLock
	servers 3
	check_give_up
}

@test "RedLock: a waiter that gets a majority leaves the queue on every server" {
	redis_only RedLock
	servers 3
	# r3 still has a lock key (say, an earlier release never reached it):
	# the waiter gets r1 and r2 and is refused on r3.
	assert_equal "$(rcli r3 set dlock:K stale PX 5000)" OK
	hold w "${SRV[@]}" --fair K
	wait_ready w
	local tok
	tok=$(job_var w DLOCK_TOKEN)
	assert_equal "$(rcli r1 get dlock:K)" "$tok"
	assert_equal "$(rcli r2 get dlock:K)" "$tok"
	assert_equal "$(rcli r3 get dlock:K)" stale
	[[ -z $(rcli r3 zscore '{dlock:K}:queue' "$tok") ]] ||
		fail "r3 still has the holder in its queue (so it refuses every waiter behind it)"
	[[ -z $(rcli r3 zscore '{dlock:K}:alive' "$tok") ]] ||
		fail "r3 still has the holder in its liveness set"
	finish w
	assert_equal "$bg_status" 0
}

@test "RedLock: --fair -w: servers that cannot give a ticket are waited out, as for a try" {
	redis_only RedLock
	servers 3
	kill -STOP "$(server_pid r2)" "$(server_pid r3)"
	start_bg w "${SRV[@]}" --fair -w 30 --node-timeout 0.3 K touch "$T/ran"
	# its first ticket round reached r1 only: no majority
	wait_until 10 eval '[[ $(rcli r1 get "{dlock:K}:ticket") -ge 1 ]]' ||
		{ kill -CONT "$(server_pid r2)" "$(server_pid r3)"; fail "no ticket asked: $(cat "$T/w.err")"; }
	kill -CONT "$(server_pid r2)" "$(server_pid r3)"
	reap w 30
	((bg_status == 0)) || fail "status $bg_status: $(cat "$T/w.err")"
	[[ -e $T/ran ]]
	nothing_left
}

# A renewal of dlock:A shows as a PTTL above the one read before it (a
# PTTL only falls between renewals). Not one estimated from a first read
# and the time since: a slow read (a loaded machine) made that estimate
# low by its delay, so that a lease not renewed at all could pass.
pttl_a_rose() {
	local now; now=$(rcli r1 pttl dlock:A)
	((now > last_pttl)) && return 0
	last_pttl=$now
	return 1
}
renewal() {	# (other stores: the time of a renewal round and more)
	if ! on_redis; then sleep "$TTL"; return; fi
	last_pttl=$(rcli r1 pttl dlock:A)
	wait_until 5 pttl_a_rose || fail "A is not renewed"
}

@test "--fair with -k: a job that holds a key keeps its place while it waits for the next" {
	one_server
	TTL=0.6
	! refused -t "$TTL" "$(name probe)" true || TTL=1	# etcd: whole seconds
	hold h "${SRV[@]}" "$K"
	wait_ready h
	# w1 takes A, then queues for K first; it renews A every 0.2 s meanwhile
	start_bg w1 "${SRV[@]}" --fair -t "$TTL" -k "$(name A)" -k "$K" sh -c 'echo 1 >>"$0"' "$T/order"
	wait_until 5 queued 1 || fail "w1 is not queued: $(cat "$T/w1.err")"
	fair_waiter 2
	# two renewals of A since w2 queued: rounds that once queued w1 anew
	renewal
	renewal
	finish h
	reap w1 20
	reap w2 20
	assert_equal "$(tr '\n' ' ' <"$T/order")" "1 2 "
	if_redis no_queue_left
	on_redis || nothing_left	# (Redis keeps A's counters: no K's only)
}
