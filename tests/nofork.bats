#!/usr/bin/env bats
# nofork.bats - -F/--no-fork: the command takes dlock's place and PID; a
# helper process keeps the lease, releases when that PID exits, and tells
# the command when the lease is lost. On every engine (DLOCK_TEST_ENGINE).

load helpers
load engine_helpers

setup_file() { engine_start; }
teardown_file() { engine_stop; }
setup() { engine_setup; }
teardown() { engine_teardown; }

@test "-F: the command keeps dlock's PID, and runs under the lock" {
	if on_redis; then
		start_bg h -F -S "$U" K sh -c 'echo $$ >"$0.pid"; redis-cli -s "$1" get dlock:K >"$0.val"' "$T/h" "$(sock r)"
	else	# the store asked from outside, while the command waits
		start_bg h -F -S "$U" "$K" sh -c 'echo $$ >"$0.pid"; : >"$0.ready"
			i=0; while [ ! -e "$0.release" ] && [ $i -lt 200 ]; do i=$((i + 1)); sleep 0.05; done' "$T/h"
		wait_until 5 test -e "$T/h.ready" || fail "no command: $(cat "$T/h.err")"
		store_held "$K" || fail "the lock was not held"
		touch "$T/h.release"
	fi
	reap h
	assert_equal "$bg_status" 0
	assert_equal "$(<"$T/h.pid")" "$(<"$T/h.dlock")"
	if on_redis; then
		[[ $(<"$T/h.val") =~ ^[0-9a-f]{32}$ ]] || fail "the lock was not held: $(cat "$T/h.val")"
	fi
	wait_until 5 store_free "$K" || fail "not released after the command exited"
	store_nothing_left
}

@test "-F: the lease is renewed while the command runs, released when it exits" {
	hold h -F -S "$U" -t 1 "$K"
	wait_ready h
	assert_equal "$(<"$T/h.pid")" "$(<"$T/h.dlock")"
	local token; token=$(job_var h DLOCK_TOKEN)
	sleep 2.5	# more than two TTLs: only renewal keeps it
	if_redis assert_equal "$(rcli r get dlock:K)" "$token"
	store_has_token "$K" "$token" || fail "the holder: $(store_token "$K")"
	assert_equal "$(store_fence "$K")" "$(job_var h DLOCK_FENCE)"
	finish h
	assert_equal "$bg_status" 0
	wait_until 5 store_free "$K" || fail "not released"
	store_nothing_left
}

@test "-F: the lease lost, the command is told, as it would be without -F" {
	hold h -F -S "$U" -t 1 "$K"
	wait_ready h
	store_break "$K"
	reap h 10
	assert_equal "$bg_status" 11	# the job's TERM trap: dlock is the job
	assert_equal "$(cat "$T/h.sig")" TERM
	grep -q 'lease lost' "$T/h.err" || fail "no lease-lost line: $(cat "$T/h.err")"
}

@test "-F: a command that cannot be run leaves no lock" {
	run -127 dlock -F -S "$U" "$K" /nonexistent/cmd
	if_redis key_gone r dlock:K
	wait_until 5 store_free "$K" || fail "left held"
	run -0 dlock -F -S "$U" "$K" true
	wait_until 5 store_free "$K" || fail "not released"
	store_nothing_left
}

@test "-F: the helper holds no descriptor of the command's (a reader gets EOF)" {
	# $(...) waits for EOF on stdout: a helper holding it would hang here.
	run -0 timeout 10 sh -c 'out=$("$0" -F -S "$1" "$2" echo hi); echo "$out"' "$DLOCK" "$U" "$K"
	assert_output hi
}

# (its stderr it keeps, for what it has to say: bats' run, which reads
# both, waits the minimum out)
@test "-F --min-hold: the helper that keeps the lock holds no stdout of the command's" {
	local t0 rc=0
	t0=$(now_ms)
	timeout 20 sh -c 'out=$("$0" -F -S "$1" --min-hold 5 "$2" echo hi); echo "$out" >"$3"' \
		"$DLOCK" "$U" "$K" "$T/out" || rc=$?
	assert_equal "$rc/$(cat "$T/out")" 0/hi
	(($(now_ms) - t0 < 4000)) || fail "the reader got EOF after $(($(now_ms) - t0)) ms: the helper kept stdout"
	store_held "$K" || fail "not kept"
}
