#!/usr/bin/env bats
# fence.bats - DLOCK_FENCE never goes backwards, even after a server lost
# its fencing counter (a restart without persistence, an eviction) or its
# last increments (a replica promoted before it had them): every fence is
# at least the server's clock in microseconds. And the SHA-1 the build computes
# for each script (src/redis/lua/embed.py) is the one Redis computes for what
# dlock sends, or every run pays an EVAL. The counter's own keys and
# scripts are Redis's; that the fence grows with every acquisition, in
# every mode and across the server's crash, and --no-fence, are checked
# on every engine (DLOCK_TEST_ENGINE).

load helpers
load engine_helpers
load redlock_helpers

setup_file() { engine_start; }
teardown_file() { engine_stop; }
setup() { engine_setup; }
teardown() { engine_teardown; }

# nfence ARGS...: the DLOCK_FENCE a run on the engine's server gets
nfence() {
	run -0 --separate-stderr dlock -S "$U" "$@" printenv DLOCK_FENCE
	[[ $output =~ ^[0-9]+$ ]] || fail "DLOCK_FENCE '$output': $stderr"
	echo "$output"
}

@test "DLOCK_FENCE grows with every acquisition, in every mode, as the store keeps it" {
	local f prev=0 mode n=0
	for mode in -x -s "--limit 2" -x; do
		# shellcheck disable=SC2086
		if refused $mode -n "$K" true; then continue; fi
		# shellcheck disable=SC2086
		f=$(nfence $mode "$K")
		((f > prev)) || fail "$mode: fence $f after $prev"
		prev=$f n=$((n + 1))
	done
	((n >= 2)) || fail "only $n modes"
	hold h -S "$U" "$K"
	wait_ready h
	f=$(job_var h DLOCK_FENCE)
	((f > prev)) || fail "a job's fence $f after $prev"
	assert_equal "$(store_fence "$K")" "$f"
	finish h
	assert_equal "$bg_status" 0
}

# A crash loses what the store had not made durable: a fence handed out
# must survive it, even one handed out just before (PostgreSQL: an xid
# whose commit wrote nothing is not flushed, and comes again).
@test "DLOCK_FENCE grows across the server's crash (SIGKILL), right after a grant" {
	local f1 f2 f3
	f1=$(nfence "$K")
	server_crash
	f2=$(nfence "$K")
	((f2 > f1)) || fail "fence $f2 after the crash, $f1 just before it"
	# and while a job holds it
	hold h -S "$U" -t 3 "$K"
	wait_ready h
	f2=$(job_var h DLOCK_FENCE)
	server_crash
	finish h 15	# lost (75) or kept: the next fence is larger anyway
	f3=$(nfence -w 10 "$K")
	((f3 > f2)) || fail "fence $f3 after the crash, $f2 held then"
}

fence() {	# fence DLOCK-ARGS...: the DLOCK_FENCE a run gets
	run -0 --separate-stderr dlk "$@" K printenv DLOCK_FENCE
	[[ $output =~ ^[0-9]+$ ]] || fail "DLOCK_FENCE '$output': $stderr"
	echo "$output"
}
server_us() {	# server_us NAME: the server's clock, microseconds
	local t
	t=$(rcli "$1" time | tr '\n' ' ')
	set -- $t
	echo "$1$(printf '%06d' "$2")"
}
restart() {	# restart NAME: stopped and started again, empty
	local pid; pid=$(server_pid "$1")
	end_pids TERM "$pid"
	start_redis "$1"
	assert_equal "$(all_keys "$1")" ''
}

@test "DLOCK_FENCE grows across a restart without persistence" {
	redis_only "the fencing counter's keys and scripts"
	local f1 f2 f3 before
	before=$(server_us r)
	f1=$(fence -S "$(sock_url r)")
	f2=$(fence -S "$(sock_url r)")
	((f1 > before && f2 > f1)) || fail "fences $f1, $f2 after the clock's $before"
	restart r
	before=$(server_us r)
	f3=$(fence -S "$(sock_url r)")
	((f3 > f2)) || fail "fence $f3 after a restart, $f2 before"
	((f3 > before)) || fail "fence $f3: not from the server's clock ($before)"
	assert_equal "$(counter r)" "$f3"
}

@test "a counter ahead of the clock counts on by one; a deleted one starts above the old" {
	redis_only "the fencing counter's keys and scripts"
	local f1 f2
	rcli r set '{dlock:K}:fence' 5000000000000041 >/dev/null
	assert_equal "$(fence -S "$(sock_url r)")" 5000000000000042
	rcli r set '{dlock:K}:fence' 41 >/dev/null	# as an older dlock left it
	f1=$(fence -S "$(sock_url r)")
	((f1 > $(server_us r) - 60000000)) || fail "fence $f1: not from the clock"
	rcli r del '{dlock:K}:fence' >/dev/null	# evicted
	f1=$(fence -S "$(sock_url r)")
	((f1 > 42)) || fail "fence $f1 after 42"
	# shared and --limit holders take the other way out of the script
	rcli r del '{dlock:K}:fence' >/dev/null
	f2=$(fence -S "$(sock_url r)" -s)
	((f2 > f1)) || fail "shared: fence $f2 after $f1"
	rcli r del '{dlock:K}:fence' >/dev/null
	f1=$(fence -S "$(sock_url r)" --limit 2)
	((f1 > f2)) || fail "--limit: fence $f1 after $f2"
}

# pttl_day NAME KEY: KEY on server NAME expires within a day (and more
# than a day less a minute from now)
pttl_day() {
	local ms; ms=$(rcli "$1" pttl "$2")
	((ms > 86400000 - 60000 && ms <= 86400000)) ||
		fail "$1: $2 has PTTL $ms, not a day"
}

@test "the fencing and ticket counters lapse a day after the lock was last used" {
	redis_only "the fencing counter's keys and scripts"
	local f1 f2
	f1=$(fence -S "$(sock_url r)")
	pttl_day r '{dlock:K}:fence'
	run -0 dlk -S "$(sock_url r)" --fair K true
	pttl_day r '{dlock:K}:ticket'
	pttl_day r '{dlock:K}:fence'
	f1=$(fence -S "$(sock_url r)" -s)	# the shared way out of the script
	pttl_day r '{dlock:K}:fence'
	# once lapsed, the counter starts again above every fence given out
	rcli r pexpire '{dlock:K}:fence' 1 >/dev/null
	wait_until 2 key_gone r '{dlock:K}:fence'
	f2=$(fence -S "$(sock_url r)")
	((f2 > f1)) || fail "fence $f2 after the counter lapsed, $f1 before"
	pttl_day r '{dlock:K}:fence'
}

@test "RedLock: a fence written back to a server lapses a day later too" {
	redis_only "RedLock"
	start_servers 3
	local f
	# r1's counter is far ahead: r2 and r3 get its value written back
	rcli r1 set '{dlock:K}:fence' 5000000000000000 >/dev/null
	f=$(fence "${SRV[@]}")
	assert_equal "$f" 5000000000000001
	for s in r1 r2 r3; do
		assert_equal "$(counter "$s")" "$f"
		pttl_day "$s" '{dlock:K}:fence'
	done
}

@test "a TIME in the acquire script for the fence; none in the release unless someone waits" {
	redis_only "its scripts"
	time_calls() { rcli r info commandstats | tr -d '\r' |
		sed -n 's/^cmdstat_time:calls=\([0-9]*\),.*/\1/p'; }
	run -0 dlock -S "$(sock_url r)" K true
	local t0; t0=$(time_calls)
	run -0 dlock -S "$(sock_url r)" K true
	assert_equal "$(time_calls)" "$((t0 + 1))"
}

# A counter that lost its last increment: what Sentinel's failover does
# when the master acknowledged an acquisition its replica never received
# (replication is asynchronous). The next fence must still be larger than
# the one handed out, or a resource checking fences takes both writers.
@test "a replica promoted before it got the last increment still counts past it" {
	redis_only "a replica promoted"
	# not r: engine_setup started that one, and a second would hide it
	# from teardown (its pid file rewritten)
	start_redis_tcp m
	start_redis rep --replicaof 127.0.0.1 "$(<"$T/m/port")"
	wait_until 10 link_up rep || fail "the replica did not sync"
	local f1 f2 f3
	f1=$(fence -S "$(tcp_url m)")
	wait_until 5 eval '[[ $(counter rep) == "$f1" ]]' || fail "not replicated: $(counter rep)"
	# the replica is cut off and promoted: the next increment is lost to it
	rcli rep replicaof no one >/dev/null
	f2=$(fence -S "$(tcp_url m)")
	assert_equal "$(counter rep)" "$f1"
	f3=$(fence -S "$(sock_url rep)")
	((f3 > f2)) || fail "fence $f3 on the promoted replica, $f2 handed out before"
}

@test "a counter copied to a second server one step behind: the next fence is larger" {
	redis_only "the fencing counter's keys and scripts"
	start_redis a
	start_redis b
	local f1 f2 f3 v
	f1=$(fence -S "$(sock_url a)")
	v=$(rcli a get '{dlock:K}:fence')
	f2=$(fence -S "$(sock_url a)")
	# b has the counter's key as it was on a before the last acquisition,
	# as a restored backup or a lagging replica would
	rcli b set '{dlock:K}:fence' "$v" PX 86400000 >/dev/null
	assert_equal "$(counter b)" "$f1"
	f3=$(fence -S "$(sock_url b)")
	((f3 > f2)) || fail "fence $f3 on b, $f2 handed out on a"
}

@test "RedLock: DLOCK_FENCE grows when servers restart empty" {
	redis_only "RedLock"
	start_servers 3
	local f s n prev
	prev=$(fence "${SRV[@]}")
	for s in r1 r2 r3; do
		restart "$s"
		f=$(fence "${SRV[@]}")
		((f > prev)) || fail "fence $f after $prev, $s restarted"
		# the write-back raised every granting server to it (fence_max,
		# with numbers far beyond 32 bits)
		for n in r1 r2 r3; do
			assert_equal "$(counter "$n")" "$f"
		done
		prev=$f
	done
	restart r1
	restart r2
	restart r3
	f=$(fence "${SRV[@]}")
	((f > prev)) || fail "fence $f after $prev, every server restarted"
}

# scripts: "NAME SHA-1 NUMKEYS" a line for each script, as the build
# embeds it (src/redis/lua/embed.py), the body it sends in $T/lua/NAME.lua
scripts() {
	mkdir -p "$T/lua"
	"$PYTHON" "$BATS_TEST_DIRNAME/../src/redis/lua/embed.py" --list "$T/lua" \
		"$BATS_TEST_DIRNAME"/../src/redis/lua/*.lua
}

@test "Redis compiles every script and computes the SHA-1 the build embeds" {
	redis_only "its scripts"
	local name sha n=0
	run -0 scripts
	while read -r name sha _; do
		# SCRIPT LOAD compiles the body: a syntax error fails here
		assert_equal "$(rcli r -x script load <"$T/lua/$name.lua")" "$sha"
		n=$((n + 1))
	done <<<"$output"
	assert_equal "$n" "$(ls "$BATS_TEST_DIRNAME"/../src/redis/lua/*.lua | wc -l)"
}

@test "dlock sends each script under the SHA-1 that Redis computes" {
	redis_only "its scripts"
	start_servers 3
	local name sha s
	# r1's counter far ahead: r2 gets the fence written back (fence_max);
	# a renewal after 0.33 s (extend), with time to spare under load; the release
	rcli r1 set '{dlock:K}:fence' 5000000000000000 >/dev/null
	run -0 dlk "${SRV[@]}" -t 1 K sleep 0.5
	run -1 dlk status "${SRV[@]}" K	# 1: free
	# a waiter that gives up leaves; --force breaks the foreign holder
	for s in r1 r2 r3; do rcli "$s" set dlock:K foreign PX 60000 >/dev/null; done
	run -1 dlk "${SRV[@]}" -w 0.2 K true
	run -0 dlk release "${SRV[@]}" --force K
	# Each script reached r2 by EVALSHA, or by EVAL after NOSCRIPT, which
	# caches the body under its own SHA-1: the build's must be that one.
	run -0 scripts
	while read -r name sha _; do
		assert_equal "$name $(rcli r2 script exists "$sha")" "$name 1"
	done <<<"$output"
	rcli r2 info memory | grep -qx $'number_of_cached_scripts:7\r' ||
		fail "r2 caches scripts the build does not know: $(rcli r2 info memory | grep cached_scripts)"
}

@test "--no-fence: the command gets no DLOCK_FENCE, nor one a caller set; acquire --export unsets it" {
	run -0 env DLOCK_FENCE=41 "$DLOCK" -S "$U" --no-fence "$K" sh -c 'echo "${DLOCK_FENCE-unset}"'
	assert_output unset
	run -0 env DLOCK_FENCE=41 "$DLOCK" -S "$U" --no-fence -k "$(name A)" -k "$(name B)" sh -c 'echo "${DLOCK_FENCE-unset}"'
	assert_output unset
	# without it, a fence as before
	run -0 dlock -S "$U" "$K" sh -c 'echo "${DLOCK_FENCE-unset}"'
	assert_output --regexp '^[0-9]+$'
	needs steps
	run -0 dlock acquire -S "$U" --no-fence --export "$(name K2)"
	assert_line 'unset DLOCK_FENCE'
	refute_line --partial 'export DLOCK_FENCE'
}
