#!/usr/bin/env bats
# engine.bats - the helpers the feature suites ask the store through
# (engine_helpers.bash) see what they claim, on every engine
# (DLOCK_TEST_ENGINE): a check that always passed would make every suite
# pass vacuously on that engine.

load helpers
load engine_helpers

setup_file() { engine_start; }
teardown_file() { engine_stop; }
setup() { engine_setup; }
teardown() { engine_teardown; }

fails() { ! (eval "$*") >/dev/null 2>&1; }	# fails CMD: CMD fails (in a subshell)

@test "held, holders, token, fence, waiters and leftovers as the store keeps them" {
	store_free "$K"
	store_nothing_left
	hold h -S "$U" "$K"
	wait_ready h
	store_held "$K"
	fails store_free "$K"
	assert_equal "$(store_holders "$K")" 1
	store_has_token "$K" "$(job_var h DLOCK_TOKEN)" || fail "token: $(store_token "$K")"
	fails store_has_token "$K" 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
	assert_equal "$(store_fence "$K")" "$(job_var h DLOCK_FENCE)"
	fails store_nothing_left 1
	assert_equal "$(store_waiters "$K")" 0
	start_bg w -S "$U" "$K" true
	wait_until 5 waiting "$K" 1 || fail "no waiter seen: $(cat "$T/w.err")"
	assert_equal "$(store_holders "$K")" 1
	finish h
	assert_equal "$bg_status" 0
	reap w
	assert_equal "$bg_status" 0
	store_free "$K"
	store_nothing_left
}

@test "store_break ends the holder's lock (75); server_pause stops the store" {
	hold h -S "$U" "$K"
	wait_ready h
	store_break "$K"
	reap h 10
	assert_equal "$bg_status" 75
	store_nothing_left
	server_pause
	run timeout 10 "$DLOCK" -S "$U" -n -w 0.5 --node-timeout 0.3 "$K" touch "$T/ran"
	server_resume
	((status != 0)) || fail "a stopped server gave the lock"
	[[ ! -e $T/ran ]] || fail "the command ran"
	run -0 dlock -S "$U" -w 10 "$K" true
	store_nothing_left
}

@test "the lease left as the store keeps it" {
	needs steps
	run -0 dlock acquire -S "$U" -t 20 "$K"
	ttl_within "$K" 15000 20000
	fails ttl_within "$K" 1 10000
}
