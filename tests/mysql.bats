#!/usr/bin/env bats
# mysql.bats - the MySQL/MariaDB engine on a real MariaDB 10.11, started
# once for the file (tests/mysql_helpers.bash): GET_LOCK taken and given
# back, interop both ways with the mariadb client and PyMySQL, waiting
# (woken by the release, -w, signals, the grant that comes as the wait is
# cancelled), loss (KILL CONNECTION, the server killed or stopped, a
# stopped dlock dropped by wait_timeout), fences across restarts, the
# refusals (64, 69, 77), status, history, --force, TLS, passwords.

load helpers
load mysql_helpers

setup_file() {
	command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null ||
		skip "no mariadb-server here"
	/usr/bin/python3 -c 'import pymysql' 2>/dev/null || skip "no python3-pymysql"
	my_start_server || { my_stop_server; false; }
}

teardown_file() { my_stop_server; }

setup() { my_setup; }
teardown() { stop_all; }

# ---- the lock -----------------------------------------------------------

@test "a plain run takes GET_LOCK('dlock:K'), runs the command, gives it back" {
	run -0 --separate-stderr dlock -S "$U" K sh -c \
		"mariadb -S $MY_DIR/sock -uroot -N -B -e \"SELECT IS_USED_LOCK('dlock:K') IS NOT NULL\"; echo \$DLOCK_KEY"
	assert_equal "$stderr" ''
	assert_output $'1\ndlock:K'
	nothing_left
	# the command's status passes through
	run -3 dlock -S "$U" K sh -c 'exit 3'
	nothing_left
}

@test "mariadb:// is the same engine; DLOCK_TOKEN is 128 random bits" {
	run -0 dlock -S "mariadb://dl:secret@127.0.0.1:$MY_PORT/dlock" K sh -c 'echo $DLOCK_TOKEN'
	assert_output --regexp '^[0-9a-f]{32}$'
	nothing_left
}

@test "interop: a mariadb client's GET_LOCK('dlock:K') excludes dlock, and dlock's excludes it" {
	# the client holds: dlock -n refuses, status names the client
	mariadb -h127.0.0.1 -P"$MY_PORT" -udl -psecret dlock \
		-e "SELECT GET_LOCK('dlock:K', 0); SELECT SLEEP(30)" >/dev/null 3>&- &
	local client=$!
	track $client
	wait_until 5 is_held dlock:K
	run -1 --separate-stderr dlock -S "$U" -n K touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
	run -0 dlock status -S "$U" K
	assert_output --partial "held, foreign"
	assert_output --partial "another client: value 'connection $(holder_id dlock:K) (dl@"
	kill $client
	wait $client || true
	my "KILL $(holder_id dlock:K)"
	wait_until 5 is_free dlock:K
	# dlock holds: the client's GET_LOCK answers 0, then 1 once it is over
	hold h -S "$U" K
	wait_ready h
	run -0 mariadb -h127.0.0.1 -P"$MY_PORT" -udl -psecret -N -B -e "SELECT GET_LOCK('dlock:K', 0)"
	assert_output 0
	finish h
	assert_equal "$bg_status" 0
	run -0 mariadb -h127.0.0.1 -P"$MY_PORT" -udl -psecret -N -B -e "SELECT GET_LOCK('dlock:K', 0)"
	assert_output 1
	nothing_left
}

@test "interop: PyMySQL holds, dlock waits and is woken by its RELEASE_LOCK; and back" {
	pyhold p dlock:K
	wait_until 5 test -e "$T/p.held"
	start_bg w -S "$U" K touch "$T/ran"
	wait_until 5 has_waiter || fail "dlock is not waiting in GET_LOCK"
	# past the core's first pauses: a timed retry would be 2-4 s away
	sleep 1.5
	[[ ! -e $T/ran ]] || fail "ran while PyMySQL held the lock"
	local t0
	t0=$(now_ms)
	touch "$T/p.release"
	reap w 5
	assert_equal "$bg_status" 0
	[[ -e $T/ran ]] || fail "the command did not run"
	(($(now_ms) - t0 < 1500)) || fail "woken after $(($(now_ms) - t0)) ms: not by the release"
	# dlock holds: PyMySQL gets 0 at once, 1 after
	hold h -S "$U" K
	wait_ready h
	run -0 pytry dlock:K 0
	assert_output 0
	finish h
	run -0 pytry dlock:K 0
	assert_output 1
	nothing_left
}
