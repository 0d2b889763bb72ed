#!/usr/bin/env bats
# release.bats - dlock release: one holder by its token (any mode), or the
# lock broken whoever holds it (--force), saying whose it was; a dlock
# running a job under it is told at once and exits 75; keys that never
# expire or are no lock are left alone. On every engine
# (DLOCK_TEST_ENGINE): --force everywhere; --token where the engine has
# the steps (PostgreSQL and MySQL refuse them, 64, checked).

load helpers
load engine_helpers
load redlock_helpers
load postgres_helpers

setup_file() { engine_start; }
teardown_file() { engine_stop; }
setup() { engine_setup; }
teardown() {
	engine_teardown
	if_redis stop_postgres	# where a test started one (its own server elsewhere)
}

# token_shown TOKEN: how release --force names TOKEN's holder (ZooKeeper:
# its contender node, named by the token's GUID)
token_shown() {
	if [[ $ENGINE == zookeeper ]]; then echo "-${1:0:32}-[^ ]*"; else echo "$1"; fi
}

# told ID SECONDS: dlock ID's job got the lease-lost treatment and dlock
# exited 75 within SECONDS of now
told() {
	local t0; t0=$(now_ms)
	reap "$1" 10
	local ms=$(($(now_ms) - t0))
	assert_equal "$bg_status" 75
	assert_equal "$(cat "$T/$1.sig")" TERM
	((ms < $2 * 1000)) || fail "$1 was told after $ms ms"
	echo "# $1 told after $ms ms" >&3
}

@test "--token releases that holder only; the others keep theirs" {
	needs steps
	needs -s
	needs --limit
	local K2 K3; K2=$(name K2) K3=$(name K3)
	run -0 dlock acquire -S "$U" -s "$K"
	local t1=$output
	run -0 dlock acquire -S "$U" -s "$K"
	local t2=$output
	run -0 --separate-stderr dlock release -S "$U" "$K" --token "$t1"
	assert_output ''
	assert_equal "$stderr" ''
	if on_redis; then
		assert_equal "$(rcli r zscore dlock:K "$t1")" ''
		[[ -n $(rcli r zscore dlock:K "$t2") ]] || fail "the other holder went too"
	fi
	assert_equal "$(store_holders "$K")" 1
	store_has_token "$K" "$t2" || fail "the other holder went: $(store_token "$K")"
	run -1 --separate-stderr dlock release -S "$U" "$K" --token "$t1"
	# (ZooKeeper: the token's session, ended by the release, is gone)
	[[ $stderr == "dlock: $K: not held by token $t1" ||
		$ENGINE == zookeeper && $stderr == "dlock: $K: $U: session expired" ]] || fail "stderr: $stderr"
	# exclusive, and a --limit slot
	run -0 dlock release -S "$U" --token "$t2" "$K"
	run -0 dlock acquire -S "$U" "$K2"
	run -0 dlock release -S "$U" --token "$output" "$K2"
	if_redis key_gone r dlock:K2
	store_free "$K2"
	run -0 dlock acquire -S "$U" --limit 2 "$K3"
	local t3=$output
	run -0 dlock release -S "$U" --token "$t3" "$K3"
	if_redis key_gone r '{dlock:K3}:slots:0'
	store_free "$K3"
	store_nothing_left
	# the history names the holder, and who released it
	refused history "$K3" && return 0
	run -0 dlock history -S "$U" -n 1 --json "$K3"
	[[ $output == *'"event":"released"'*'"by":{"host":"'"$(hostname)"'"'* ]] ||
		fail "history: $output"
}

@test "without --token: DLOCK_TOKEN when DLOCK_KEY names the lock" {
	needs steps
	run -0 dlock acquire -S "$U" "$K"
	local token=$output
	DLOCK_KEY=$(key_of other) DLOCK_TOKEN=$token run -64 --separate-stderr dlock release -S "$U" "$K"
	[[ $stderr == "dlock: $K: no token: "* ]] || fail "stderr: $stderr"
	store_held "$K"
	DLOCK_KEY=$(key_of "$K") DLOCK_TOKEN=$token run -0 dlock release -S "$U" "$K"
	store_free "$K"
	store_nothing_left
}

@test "--token of a running job: the job is told at once, dlock exits 75" {
	needs steps
	hold h -S "$U" "$K"
	wait_ready h
	sleep 0.6	# the holder listens for notices by now
	known_bug zookeeper "release --token of a lock a running dlock holds fails (69): the two pull the session to and fro (--force works)"
	run -0 dlock release -S "$U" "$K" --token "$(job_var h DLOCK_TOKEN)"
	assert_output ''
	told h 2
	# (who released it: Redis's notice says; the others, what the store did)
	if on_redis; then
		grep -q "lease lost: released by .* (dlock release --token)" "$T/h.err" ||
			fail "stderr: $(cat "$T/h.err")"
	else
		grep -q "^dlock: $K: lease lost: " "$T/h.err" || fail "stderr: $(cat "$T/h.err")"
	fi
}

@test "--force breaks the lock, says whose it was; the holder exits 75 at once" {
	hold h -S "$U" -t 30 "$K"
	wait_ready h
	sleep 0.6
	local token; token=$(job_var h DLOCK_TOKEN)
	run -0 --separate-stderr dlock release -S "$U" --force "$K"
	local broke=$output
	assert_output --regexp "^broken: [^ ]+@$(hostname) pid $(<"$T/h.dlock") \($T/job $T/h exit\), acquired [0-9.]+s ago, (fence $(job_var h DLOCK_FENCE), )?token $(token_shown "$token")\$"
	told h 2
	# (who broke it: Redis's notice says; the others, what the store did)
	if on_redis; then
		grep -q "dlock: K: lease lost: broken by .*@$(hostname) pid [0-9]* (dlock release --force); stopping the job" "$T/h.err" ||
			fail "stderr: $(cat "$T/h.err")"
	else
		grep -q "^dlock: $K: lease lost: .*; stopping the job\$" "$T/h.err" || fail "stderr: $(cat "$T/h.err")"
	fi
	if_redis key_gone r dlock:K
	store_free "$K"
	if ! refused history "$K"; then
		run -0 dlock history -S "$U" -n 3 "$K"
		assert_line -n 1 --regexp ' lost .* 75 '
		assert_line -n 2 --regexp " broken .* [^ ]+@$(hostname) pid [0-9]+ "
	fi
	# nothing to break now
	run -1 --separate-stderr dlock release -S "$U" --force "$K"
	assert_equal "$stderr" "dlock: $K: not held"
	[[ $broke == *", fence $(job_var h DLOCK_FENCE), token "* ]] || fail "no fence: $broke"
}

@test "--force right after the job started: the notice waits for the holder" {
	hold h -S "$U" -t 30 "$K"
	wait_ready h
	run -0 dlock release -S "$U" --force "$K"	# before it listens (0.5 s)
	told h 2
}

@test "--force breaks every shared holder, each told" {
	needs -s
	hold a -S "$U" -s "$K"
	hold b -S "$U" -s "$K"
	wait_ready a
	wait_ready b
	run -0 dlock release -S "$U" --force "$K"
	assert_equal "${#lines[@]}" 2
	assert_output --regexp "token $(token_shown "$(job_var a DLOCK_TOKEN)")"
	assert_output --regexp "token $(token_shown "$(job_var b DLOCK_TOKEN)")"
	told a 2
	told b 2
	if_redis key_gone r dlock:K
	if_redis key_gone r '{dlock:K}:mode'
	store_free "$K"
	store_nothing_left
}

@test "--force breaks a --limit slot" {
	needs steps
	needs --limit
	local L; L=$(name L)
	run -0 dlock acquire -S "$U" --limit 3 "$L"
	run -0 dlock release -S "$U" --force "$L"
	store_free "$L"
	run -0 dlock acquire -S "$U" --limit 1 "$L"	# the slot is free again
}

@test "--force breaks a redis-py holder's lock, and a --limit slot" {
	redis_only "redis-py's Lock (the others: the test before)"
	"$PYTHON" -c 'import redis, sys
r = redis.Redis(unix_socket_path=sys.argv[1])
assert r.lock("dlock:K", timeout=20).acquire(blocking=False)' "$(sock r)"
	local value; value=$(rcli r get dlock:K)
	run -0 dlock release -S "$U" --force K
	assert_output --regexp "^broken: another client's lock, value '$value', [0-9.]+s left$"
	key_gone r dlock:K
	run -0 dlock acquire -S "$U" --limit 3 L
	run -0 dlock release -S "$U" --force L
	key_gone r '{dlock:L}:slots:0'
	run -0 dlock acquire -S "$U" --limit 1 L	# the slot is free again
}

@test "--force leaves a key without TTL, or of another type, alone: 70" {
	redis_only "keys another client SETs"
	rcli r set dlock:S forever >/dev/null
	rcli r hset dlock:H 8743c2f2-ab:1 1 >/dev/null
	rcli r pexpire dlock:H 30000 >/dev/null
	run -70 --separate-stderr dlock release -S "$U" --force S
	assert_equal "$stderr" "dlock: S: $U: dlock:S is a string without TTL, not a lease: left alone"
	run -70 --separate-stderr dlock release -S "$U" --force H
	assert_equal "$stderr" "dlock: H: $U: dlock:H is a hash, not a lock: left alone"
	assert_equal "$(rcli r get dlock:S)" forever
	assert_equal "$(rcli r hget dlock:H 8743c2f2-ab:1)" 1
}

@test "exit status: 69 unreachable, 77 credentials; --token and --force clash" {
	if ! on_redis; then	# (credentials: each engine's own file)
		local N; N=$(unreachable_url)
		run -69 --separate-stderr dlock release -S "$N" --force "$K"
		[[ $stderr == "dlock: $K: ${N%%://*}://"* ]] || fail "stderr: $stderr"
		run -64 --separate-stderr dlock release -S "$U" --force --token x "$K"
		return
	fi
	run -69 --separate-stderr dlock release -S "unix:$T/nothing" --force K
	run -69 --separate-stderr dlock release -S "unix:$T/nothing" --token x K
	start_redis p --requirepass s3cret
	DLOCK_PASSWORD=wrong run -77 --separate-stderr dlock release -S "$(sock_url p)" --force K
	run -64 --separate-stderr dlock release -S "$U" --force --token x K
}

@test "RedLock: --force on every server; the holder is told" {
	redis_only RedLock
	start_servers 3
	hold h "${SRV[@]}" K
	wait_ready h
	sleep 0.6
	run -0 dlock release "${SRV[@]}" --force K
	assert_output --regexp ' \(on 3 of 3 servers\)$'
	told h 2
	for s in r1 r2 r3; do key_gone "$s" dlock:K; done
	# one server down: broken on the majority that answers
	hold h2 "${SRV[@]}" K
	wait_ready h2
	kill_server r3
	run -0 --separate-stderr dlock release "${SRV[@]}" --force K
	assert_output --regexp ' \(on 2 of 3 servers\)$'
	told h2 3
	kill_server r2
	run -69 --separate-stderr dlock release "${SRV[@]}" --force K
}

@test "RedLock: --token needs a majority to say it held it" {
	redis_only RedLock
	start_servers 3
	run -0 dlock acquire "${SRV[@]}" K
	local token=$output
	rcli r1 del dlock:K >/dev/null
	rcli r2 del dlock:K >/dev/null
	run -1 --separate-stderr dlock release "${SRV[@]}" --token "$token" K
	assert_equal "$stderr" "dlock: K: not held by token $token: it was on 1 of 3 servers only (released there)"
	key_gone r3 dlock:K
}

n_brpop() { (($(rcli r client list | grep -c 'cmd=brpop') >= $1)); }

@test "-k: --force of any key reaches the holder at once, naming that key" {
	local A B; A=$(name A) B=$(name B)
	# B sorts after A: not the first key, once the only one watched
	hold h -S "$U" -t 30 -k "$A" -k "$B"
	wait_ready h
	if on_redis; then
		wait_until 5 n_brpop 2 || fail "the holder does not watch both keys: $(rcli r client list)"
	else
		sleep 0.6	# the holder watches by now
	fi
	run -0 dlock release -S "$U" --force "$B"
	told h 2
	if on_redis; then
		grep -q "dlock: $A: lease lost: $B: broken by .*@$(hostname) pid [0-9]* (dlock release --force); stopping the job" "$T/h.err" ||
			fail "stderr: $(cat "$T/h.err")"
	else	# (the store says what it did, not who)
		grep -q "^dlock: $A: lease lost: $B: .*; stopping the job\$" "$T/h.err" || fail "stderr: $(cat "$T/h.err")"
	fi
	wait_until 5 store_free "$A" || fail "A not released"
	store_nothing_left
}

# ---- the holder's own release, at the job's end ---------------------------

# The key deleted (or lapsed: a restart without persistence) between two
# renewals, another holder in: a job that ends before the next renewal
# never heard of it. Its release's compare-and-delete finds the lock gone:
# a lost lease, said as the renewal would have said it.
@test "a lease lost between renewals, found at the release: 75 and the usual line" {
	redis_only "a key another client DELs and SETs from inside the job"
	run -75 --separate-stderr dlock -S "$U" -t 30 K sh -c '
		redis-cli -s "$1" del dlock:K >/dev/null
		redis-cli -s "$1" set dlock:K other PX 60000 >/dev/null' sh "$(sock r)"
	assert_equal "$stderr" "dlock: K: lease lost: the lock was deleted or taken over on $U"
	assert_equal "$(rcli r get dlock:K)" other	# the other holder's, untouched
	run -0 dlock history -S "$U" -n 1 K
	assert_line -n 1 --regexp '^[0-9.]+s ago +lost +'
	# deleted and nobody else in: lost all the same
	rcli r del dlock:K >/dev/null
	run -75 --separate-stderr dlock -S "$U" K redis-cli -s "$(sock r)" del dlock:K
	assert_equal "$stderr" "dlock: K: lease lost: the lock was deleted or taken over on $U"
	# -k: the key that was lost is named
	run -75 --separate-stderr dlock -S "$U" -k A -k B redis-cli -s "$(sock r)" del dlock:B
	assert_equal "$stderr" "dlock: B: lease lost: the lock was deleted or taken over on $U"
	key_gone r dlock:A
}

@test "a release after the server restarted (persistent) goes to a fresh connection" {
	redis_only "a Redis started again with its append-only file"
	stop_all
	start_redis r --appendonly yes --appendfsync always
	hold h -S "$U" K
	wait_ready h
	# the server stops and comes back with its data: the lock is still
	# there, and dlock's connection is gone
	end_pids TERM "$(server_pid r)"
	start_redis r --appendonly yes --appendfsync always
	wait_until 5 key_exists r dlock:K || fail "the lock did not survive the restart"
	finish h
	assert_equal "$bg_status" 0
	run cat "$T/h.err"
	assert_output ""
	key_gone r dlock:K || fail "the lock was left for its TTL: $(rcli r pttl dlock:K) ms"
}

@test "--force: a foreign holder's lease left, where the store does not tell it, is no '0.0s left'" {
	redis_only "Redis, which tells a foreign lock's TTL, beside a PostgreSQL of its own"
	start_postgres || fail "PostgreSQL did not start"
	psql_hold dlock:K
	run -0 --separate-stderr dlock release -S "$PG_URL" --force K
	assert_output --regexp "^broken: another client's lock, value '[^']*'$"
	touch "$T/dlock:K.go"
	# where it tells, the time left
	rcli r set dlock:K other px 60000 >/dev/null
	run -0 --separate-stderr dlock release -S "$U" --force K
	assert_output --regexp "^broken: another client's lock, value 'other', [0-9]+s left$"
}
