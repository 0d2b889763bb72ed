#!/usr/bin/env bats
# steps.bats - a lock held across separate processes: dlock acquire, extend
# and release, each its own process, as the steps of a pipeline; --export
# and re-entry; conflicts; modes. On every engine (DLOCK_TEST_ENGINE) that
# has the steps: where the lock lives and dies with a connection
# (PostgreSQL, MySQL), dlock refuses them (64), which each test checks
# before it skips.

load helpers
load engine_helpers

setup_file() { engine_start steps; }	# every test needs it
teardown_file() { engine_stop; }
setup() {
	engine_setup
	unset DLOCK_JOB
	needs steps
}
teardown() { engine_teardown; }

pttl() { rcli r pttl "$1"; }

@test "acquire prints the token the server holds, and exits 0" {
	run -0 --separate-stderr dlock acquire -S "$U" "$K"
	is_token "$output"
	assert_equal "$stderr" ''
	if_redis assert_equal "$(rcli r get dlock:K)" "$output"
	store_has_token "$K" "$output" || fail "the store's holder is $(store_token "$K"), not $output"
	# held: a job on the same lock finds it taken
	run -1 dlock -S "$U" -n "$K" touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
}

@test "acquire is not renewed: the lock lapses after --ttl" {
	local t=0.5
	! refused -t "$t" "$K" true || t=1	# etcd: whole seconds
	run -0 dlock acquire -S "$U" -t "$t" "$K"
	is_token "$output"
	if on_redis; then
		local ttl; ttl=$(pttl dlock:K)
		((ttl > 0 && ttl <= 500)) || fail "pttl $ttl"
	fi
	store_held "$K"
	# (etcd's leases are whole seconds, ZooKeeper's sessions 1 s at least)
	wait_until 3 store_free "$K" || fail "still held: $(store_ttl_ms "$K") ms left"
	run -0 dlock -S "$U" -n "$K" true
}

@test "acquire --ttl sets the lease; the default is 30 s" {
	local A B; A=$(name A) B=$(name B)
	run -0 dlock acquire -S "$U" "$A"
	ttl_within "$A" 29000 30000
	# (a ZooKeeper server grants 60 s at most here: its maxSessionTimeout)
	run -0 dlock acquire -S "$U" --ttl 50 "$B"
	ttl_within "$B" 49000 50000
}

@test "acquire and extend, each a process of its own" {
	local token ttl
	token=$(dlock acquire -S "$U" -t 2 "$K")
	is_token "$token"
	run -0 --separate-stderr dlock extend -S "$U" "$K" --token "$token" --ttl 60
	assert_output ''
	assert_equal "$stderr" ''
	ttl_within "$K" 59000 60000
	store_has_token "$K" "$token" || fail "the store's holder is $(store_token "$K")"
	run -1 dlock -S "$U" -n "$K" true
}

@test "the holder info names what acquired it and its parent's pid" {
	run -0 sh -c '"$1" acquire -S "$2" "$3"; echo "$$"' sh "$DLOCK" "$U" "$K"
	local token=${lines[0]} pid=${lines[1]} info
	is_token "$token"
	if on_redis; then
		info=$(holder_info r "$token")
		# host, pid, user, since, command (and what may follow)
		local f
		IFS=$'\t' read -r -a f <<<"$info"
		assert_equal "${f[1]}" "$pid"
		assert_equal "${f[4]}" "(dlock acquire)"
	fi
	# as dlock status reads it back from the store
	run -0 --separate-stderr dlock status -S "$U" --json "$K"
	assert_equal "$(jq -r '.locks[0].holders[0] | "\(.pid) \(.command)"' <<<"$output")" "$pid (dlock acquire)"
}

@test "acquire -n exits 1 silently, -E N with N, while the lock is held" {
	run -0 dlock acquire -S "$U" "$K"
	local token=$output
	run -1 --separate-stderr dlock acquire -S "$U" -n "$K"
	assert_output ''
	assert_equal "$stderr" ''
	run -3 --separate-stderr dlock acquire -S "$U" -n -E 3 "$K"
	assert_output ''
	run -1 --separate-stderr dlock acquire -S "$U" -n --verbose "$K"
	# (ZooKeeper says its session first)
	[[ $stderr == "dlock: $K: lock is held by "* || $ENGINE == zookeeper ]] || fail "stderr: $stderr"
	[[ ${stderr_lines[-1]} == "dlock: $K: lock is held by "* ]] || fail "stderr: $stderr"
	store_has_token "$K" "$token" || fail "the store's holder is $(store_token "$K")"
}

@test "acquire -w gives up with 1, not before the time" {
	run -0 dlock acquire -S "$U" "$K"
	local t0 ms
	t0=$(now_ms)
	run -1 --separate-stderr dlock acquire -S "$U" -w 0.5 "$K"
	ms=$(($(now_ms) - t0))
	((ms >= 500)) || fail "gave up after $ms ms"
	assert_output ''
	wait_until 5 waiting "$K" 0 || fail "the waiter is still in the store"
}

@test "acquire -w gets the lock once the holder's lease lapses" {
	local first
	first=$(dlock acquire -S "$U" -t 1 "$K")
	start_bg w acquire -S "$U" -w 10 "$K"
	wait_until 5 waiting "$K" 1 || fail "the waiter never waited: $(cat "$T/w.err")"
	reap w 5
	assert_equal "$bg_status" 0
	is_token "$(<"$T/w.out")"
	[[ $(<"$T/w.out") != "$first" ]] || fail "the same token twice"
	store_has_token "$K" "$(<"$T/w.out")" || fail "the store's holder is $(store_token "$K")"
}

@test "acquire interrupted while waiting exits 128+N and leaves no waiter" {
	run -0 dlock acquire -S "$U" "$K"
	start_bg w acquire -S "$U" "$K"
	wait_until 5 waiting "$K" 1 || fail "the waiter never waited: $(cat "$T/w.err")"
	kill -TERM "$(<"$T/w.dlock")"
	reap w 5
	assert_equal "$bg_status" 143
	assert_equal "$(<"$T/w.out")" ''
	if_redis assert_equal "$(rcli r zcard '{dlock:K}:alive')" 0
	wait_until 5 waiting "$K" 0 || fail "the waiter is still in the store"
	assert_equal "$(store_holders "$K")" 1
}

@test "--export lines re-enter: a later step runs at once under the lock" {
	local out
	out=$(dlock acquire -S "$U" --export "$K") || fail "acquire: $?"
	[[ $out != *DLOCK_JOB=* ]] || fail "--export sets DLOCK_JOB: $out"
	eval "$out"
	assert_equal "$DLOCK_KEY" "$(key_of "$K")"
	is_token "$DLOCK_TOKEN"
	[[ $DLOCK_FENCE =~ ^[0-9]+$ ]] || fail "DLOCK_FENCE=$DLOCK_FENCE"
	store_has_token "$K" "$DLOCK_TOKEN" || fail "the store's holder is $(store_token "$K")"
	assert_equal "$(store_fence "$K")" "$DLOCK_FENCE"
	# -n: a step that did not re-enter would find the lock held and exit 1
	run -0 dlock -S "$U" -n "$K" sh -c 'echo "$DLOCK_TOKEN $DLOCK_FENCE"'
	assert_output "$DLOCK_TOKEN $DLOCK_FENCE"
	# the step neither released nor renewed it: the lock is still ours
	store_has_token "$K" "$DLOCK_TOKEN" || fail "the store's holder is $(store_token "$K")"
	# exported: a plain child process sees them too
	run -0 sh -c 'echo "$DLOCK_KEY $DLOCK_TOKEN"'
	assert_output "$(key_of "$K") $DLOCK_TOKEN"
}

@test "--export quotes a lock name with quotes, blanks and \$ for eval" {
	local name=$'it\'s a $HOME `x` \\ "y"\nz' out
	name=$(name "$name")
	# ZooKeeper refuses control characters in a name (64)
	! refused -n "$name" true || name=${name%$'\n'z}
	out=$(dlock acquire -S "$U" --export "$name") || fail "acquire: $?"
	DLOCK_KEY=unset
	eval "$out"
	assert_equal "$DLOCK_KEY" "$(key_of "$name")"
	if_redis assert_equal "$(rcli r get "dlock:$name")" "$DLOCK_TOKEN"
	run -0 dlock -S "$U" -n "$name" sh -c 'echo "$DLOCK_TOKEN"'
	assert_output "$DLOCK_TOKEN"
}

@test "--export drops a DLOCK_JOB inherited from an outer job" {
	# Inside a job of lock O, DLOCK_JOB confines re-entry to O's process
	# group and session; the lock acquired there belongs to no job, so a
	# step started in a session of its own still re-enters it.
	run -0 dlock -S "$U" "$(name O)" sh -c '
		eval "$("$0" acquire -S "$1" --export "$2")" || exit 90
		[ -z "${DLOCK_JOB+set}" ] || exit 91
		setsid -w "$0" -S "$1" -n "$2" true; echo "setsid:$?"' "$DLOCK" "$U" "$K"
	assert_output setsid:0
}

@test "acquire re-enters a lock its environment holds: the same token" {
	eval "$(dlock acquire -S "$U" --export "$K")"
	run -0 dlock acquire -S "$U" -n "$K"
	assert_output "$DLOCK_TOKEN"
	run -0 dlock acquire -S "$U" -n --export "$K"
	refute_line 'unset DLOCK_JOB'
	assert_line "export DLOCK_TOKEN=$DLOCK_TOKEN"
}

@test "extend takes the token from DLOCK_TOKEN when DLOCK_KEY names the lock" {
	local L; L=$(name L)
	eval "$(dlock acquire -S "$U" -t 2 --export "$K")"
	run -0 dlock extend -S "$U" -t 60 "$K"
	ttl_within "$K" 59000 60000
	# another lock: DLOCK_TOKEN is not its token, and there is no other
	run -0 dlock acquire -S "$U" "$L"
	run -64 --separate-stderr dlock extend -S "$U" "$L"
	[[ $stderr == "dlock: $L: no token"* ]] || fail "stderr: $stderr"
}

@test "extend without --ttl renews for the default 30 s" {
	local token ttl
	token=$(dlock acquire -S "$U" -t 1 "$K")
	run -0 dlock extend -S "$U" "$K" --token "$token"
	ttl_within "$K" 29000 30000
}

@test "extend after the lock lapsed exits 1 and says so" {
	local token t=0.2
	! refused -t "$t" "$K" true || t=1	# etcd: whole seconds
	token=$(dlock acquire -S "$U" -t "$t" "$K")
	wait_until 3 store_free "$K"
	run -1 --separate-stderr dlock extend -S "$U" "$K" --token "$token"
	assert_output ''
	[[ $stderr == "dlock: $K: not extended: the lock is not held with that token"* ]] ||
		fail "stderr: $stderr"
	store_free "$K"	# and it was not taken again
	store_nothing_left
}

@test "extend with another holder's token exits 1 and leaves the lease" {
	local token ttl other=0123456789abcdef0123456789abcdef
	[[ $ENGINE != zookeeper ]] || other=$other$other
	token=$(dlock acquire -S "$U" -t 5 "$K")
	run -1 dlock extend -S "$U" "$K" --token "$other" -t 50
	ttl_within "$K" 0 5000	# not extended
	store_has_token "$K" "$token" || fail "the store's holder is $(store_token "$K")"
}

@test "extend without a token, or with a malformed one, exits 64" {
	run -64 dlock extend -S "$U" "$K"
	run -64 dlock extend -S "$U" "$K" --token ''
	run -64 dlock extend -S "$U" "$K" --token "$(printf '%040d' 0)"
}

@test "--limit 2: two acquire, the third is refused; extend one of them" {
	needs --limit
	local a b
	a=$(dlock acquire -S "$U" --limit 2 -t 1 "$K")
	b=$(dlock acquire -S "$U" --limit 2 -t 5 "$K")
	is_token "$a"
	is_token "$b"
	[[ $a != "$b" ]] || fail "one token for two holders"
	assert_equal "$(store_holders "$K")" 2
	run -1 dlock acquire -S "$U" --limit 2 -n "$K"
	run -1 dlock -S "$U" -n "$K" true	# exclusive
	run -0 dlock extend -S "$U" "$K" --token "$b" -t 50
	if on_redis; then
		(($(rcli r zscore dlock:K "$b") - $(rcli r zscore dlock:K "$a") > 40000)) ||
			fail "b's lease was not extended: $(rcli r zrange dlock:K 0 -1 withscores)"
	fi
	# a's lease lapses, not b's: a slot is free again, and only one
	wait_until 3 dlock acquire -S "$U" --limit 2 -n "$K" >/dev/null ||
		fail "a's slot never came free"
	run -1 dlock acquire -S "$U" --limit 2 -n "$K"
	run -0 dlock extend -S "$U" "$K" --token "$b"
}

@test "--shared: shared acquire together, an exclusive one is refused" {
	needs -s
	local a b
	a=$(dlock acquire -S "$U" -s "$K")
	b=$(dlock acquire -S "$U" --shared "$K")
	is_token "$a"
	is_token "$b"
	if_redis assert_equal "$(rcli r zcard dlock:K)" 2
	assert_equal "$(store_holders "$K")" 2
	run -1 dlock acquire -S "$U" -n "$K"
	run -0 dlock extend -S "$U" "$K" --token "$a"
}

@test "an exclusive acquire keeps a shared one out" {
	needs -s
	run -0 dlock acquire -S "$U" -x "$K"
	run -1 dlock acquire -S "$U" -s -n "$K"
}

@test "acquire over three servers: a majority holds it, extend needs one" {
	redis_only RedLock
	start_redis r2
	start_redis r3
	local S=(-S "$U" -S "$(sock_url r2)" -S "$(sock_url r3)") token
	token=$(dlock acquire "${S[@]}" -t 5 K) || fail "acquire: $?"
	assert_equal "$(rcli r2 get dlock:K)" "$token"
	kill -STOP "$(server_pid r3)"
	run -0 dlock extend "${S[@]}" --node-timeout 0.3 -t 60 K --token "$token"
	local ttl; ttl=$(rcli r2 pttl dlock:K)
	((ttl > 59000)) || fail "pttl $ttl"
	kill -STOP "$(server_pid r2)"
	run -69 --separate-stderr dlock extend "${S[@]}" --node-timeout 0.3 K --token "$token"
	[[ $stderr == "dlock: K: "* ]] || fail "stderr: $stderr"
	kill -CONT "$(server_pid r2)" "$(server_pid r3)"
}

@test "acquire and extend with no server answering exit 69" {
	local nowhere token=0123456789abcdef0123456789abcdef
	nowhere=$(unreachable_url)
	[[ $ENGINE != zookeeper ]] || token=$token$token
	run -69 --separate-stderr dlock acquire -S "$nowhere" -n "$K"
	assert_output ''
	[[ $stderr == "dlock: $K: ${nowhere%%\?*}"* ]] || fail "stderr: $stderr"
	run -69 dlock extend -S "$nowhere" "$K" --token "$token"
}

@test "acquire and extend with a refused password exit 77" {
	redis_only "credentials (each engine's own file tests its)"
	start_redis p --requirepass sesame
	local P; P=$(sock_url p)
	run -77 dlock acquire -S "$P" -n K
	DLOCK_PASSWORD=wrong run -77 dlock extend -S "$P" K --token 0123456789abcdef0123456789abcdef
}

@test "a token that cannot be written is not kept: 74, lock given back" {
	[[ -w /dev/full ]] || skip_unless_strict "no /dev/full"
	local rc=0
	dlock acquire -S "$U" "$K" >/dev/full 2>"$T/err" || rc=$?
	assert_equal "$rc" 74
	grep -q "^dlock: $K: cannot write the token: " "$T/err" || fail "stderr: $(cat "$T/err")"
	store_free "$K"
	store_nothing_left
}

@test "a token printed to a closed stdout is not kept: 74, lock given back" {
	local rc=0
	dlock acquire -S "$U" "$K" >&- 2>"$T/err" || rc=$?
	assert_equal "$rc" 74
	grep -q "^dlock: $K: cannot write the token: bad file descriptor; lock given back\$" "$T/err" ||
		fail "stderr: $(cat "$T/err")"
	store_free "$K"
	rc=0
	dlock acquire -S "$U" --export "$K" >&- 2>/dev/null || rc=$?
	assert_equal "$rc" 74
	store_free "$K"
	store_nothing_left
}
