#!/usr/bin/env bats
# nofork.bats - -F/--no-fork: the command takes dlock's place and PID; a
# helper process keeps the lease, releases when that PID exits, and tells
# the command when the lease is lost.

load helpers

setup() {
	common_setup
	start_redis r
	U=$(sock_url r)
}

@test "-F: the command keeps dlock's PID, and runs under the lock" {
	start_bg h -F -S "$U" K sh -c 'echo $$ >"$0.pid"; redis-cli -s "$1" get dlock:K >"$0.val"' "$T/h" "$(sock r)"
	reap h
	assert_equal "$bg_status" 0
	assert_equal "$(<"$T/h.pid")" "$(<"$T/h.dlock")"
	[[ $(<"$T/h.val") =~ ^[0-9a-f]{32}$ ]] || fail "the lock was not held: $(cat "$T/h.val")"
	wait_until 5 key_gone r dlock:K || fail "not released after the command exited"
}

@test "-F: the lease is renewed while the command runs, released when it exits" {
	hold h -F -S "$U" -t 1 K
	wait_ready h
	assert_equal "$(<"$T/h.pid")" "$(<"$T/h.dlock")"
	local token; token=$(job_var h DLOCK_TOKEN)
	sleep 2.5	# more than two TTLs: only renewal keeps it
	assert_equal "$(rcli r get dlock:K)" "$token"
	finish h
	assert_equal "$bg_status" 0
	wait_until 5 key_gone r dlock:K || fail "not released"
}

@test "-F: the lease lost, the command is told, as it would be without -F" {
	hold h -F -S "$U" -t 1 K
	wait_ready h
	rcli r del dlock:K >/dev/null
	reap h 10
	assert_equal "$bg_status" 11	# the job's TERM trap: dlock is the job
	assert_equal "$(cat "$T/h.sig")" TERM
	grep -q 'lease lost' "$T/h.err" || fail "no lease-lost line: $(cat "$T/h.err")"
}

@test "-F: a command that cannot be run leaves no lock" {
	run -127 dlock -F -S "$U" K /nonexistent/cmd
	key_gone r dlock:K
	run -0 dlock -F -S "$U" K true
	wait_until 5 key_gone r dlock:K || fail "not released"
}

@test "-F: the helper holds no descriptor of the command's (a reader gets EOF)" {
	# $(...) waits for EOF on stdout: a helper holding it would hang here.
	run -0 timeout 10 sh -c 'out=$("$0" -F -S "$1" K echo hi); echo "$out"' "$DLOCK" "$U"
	assert_output hi
}
