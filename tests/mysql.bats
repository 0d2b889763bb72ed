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

@test "a nested dlock in the job re-enters (the row names its token); another token waits" {
	run -0 dlock -S "$U" K sh -c "\"\$DLOCK\" -S '$U' -n K sh -c 'echo \$DLOCK_FENCE \$DLOCK_TOKEN'; echo \$DLOCK_FENCE \$DLOCK_TOKEN"
	assert_equal "${lines[0]}" "${lines[1]}"
	run -1 dlock -S "$U" K sh -c "DLOCK_TOKEN=0123456789abcdef0123456789abcdef \"\$DLOCK\" -S '$U' -n K true"
	assert_output ''
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
	# past the core's first pauses (0.25, 0.5, 1 and 2 s, each within a
	# third): the next timed try is at least 1.6 s away, the release
	# wakes the server's GET_LOCK at once
	sleep 4
	[[ ! -e $T/ran ]] || fail "ran while PyMySQL held the lock"
	local t0
	t0=$(now_ms)
	touch "$T/p.release"
	reap w 5
	assert_equal "$bg_status" 0
	[[ -e $T/ran ]] || fail "the command did not run"
	(($(now_ms) - t0 < 1000)) || fail "woken after $(($(now_ms) - t0)) ms: not by the release"
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

# ---- waiting --------------------------------------------------------------

@test "-w 0.5 gives up with 1, not before 0.5 s, and leaves no waiter in the server" {
	hold h -S "$U" K
	wait_ready h
	local t0
	t0=$(now_ms)
	run -1 --separate-stderr dlock -S "$U" -w 0.5 K touch "$T/ran"
	(($(now_ms) - t0 >= 500)) || fail "gave up after $(($(now_ms) - t0)) ms"
	assert_equal "$stderr" ''
	[[ ! -e $T/ran ]] || fail "the command ran"
	no_waiters || fail "a GET_LOCK still waits in the server"
	# -n: no blocking GET_LOCK at all
	run -1 dlock -S "$U" -n K touch "$T/ran"
	finish h
	assert_equal "$bg_status" 0
	nothing_left
}

@test "a waiter gives up at -w while the server is stopped, within a node timeout" {
	hold h -S "$U" K
	wait_ready h
	local t0 w rc=0
	"$DLOCK" -S "$U" -w 2 --node-timeout 1 K touch "$T/ran" 3>&- &
	w=$!
	track $w
	wait_until 5 has_waiter || fail "dlock is not waiting in GET_LOCK"
	kill -STOP "$(cat "$MY_DIR/pid.mine")"
	t0=$(now_ms)
	wait "$w" || rc=$?
	kill -CONT "$(cat "$MY_DIR/pid.mine")"
	assert_equal "$rc" 1
	# the deadline came about 2 s after t0, plus one node timeout at most
	(($(now_ms) - t0 < 3800)) || fail "gave up after $(($(now_ms) - t0)) ms"
	[[ ! -e $T/ran ]] || fail "the command ran"
	finish h
	assert_equal "$bg_status" 0
	wait_until 10 no_waiters
	nothing_left
}

@test "a signal while waiting: 143, the server's GET_LOCK cancelled, nothing left" {
	hold h -S "$U" K
	wait_ready h
	start_bg w -S "$U" K touch "$T/ran"
	wait_until 5 has_waiter || fail "dlock is not waiting in GET_LOCK"
	kill -TERM "$(<"$T/w.dlock")"
	reap w 5
	assert_equal "$bg_status" 143
	# KILL QUERY, not the end of a 60 s GET_LOCK
	wait_until 3 no_waiters || fail "the GET_LOCK still waits in the server"
	[[ ! -e $T/ran ]] || fail "the command ran"
	finish h
	nothing_left
}

# A DBA kills what looks like a stuck query (KILL QUERY): the waiter's
# GET_LOCK ends; it waits on, as psql's users would expect of a waiter.
@test "KILL QUERY of a waiter's GET_LOCK: it waits on, and runs once the holder is done" {
	hold h -S "$U" K
	wait_ready h
	start_bg w -S "$U" -w 30 K sh -c 'echo ran'
	wait_until 5 has_waiter || fail "dlock is not waiting in GET_LOCK"
	my "KILL QUERY $(my "SELECT ID FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'")"
	wait_until 5 has_waiter || fail "the waiter does not wait again: $(cat "$T/w.err")"
	[[ ! -s $T/w.out ]] || fail "the waiter ran beside the holder"
	finish h
	assert_equal "$bg_status" 0
	reap w 10
	assert_equal "$bg_status" 0
	assert_equal "$(<"$T/w.out")" ran
	assert_equal "$(cat "$T/w.err")" ""
	nothing_left
}

@test "a grant that comes as the wait is cancelled is given back, its event forgotten" {
	hold h -S "$U" K
	wait_ready h
	start_bg w -S "$U" K touch "$T/ran"
	wait_until 5 has_waiter || fail "dlock is not waiting in GET_LOCK"
	local w
	w=$(<"$T/w.dlock")
	# the server grants the stopped waiter's GET_LOCK (and writes its
	# fence row), then the waiter wakes to a signal and the grant at once
	kill -STOP "$w"
	finish h
	wait_until 5 is_held dlock:K || fail "the waiter was not granted the lock"
	kill -TERM "$w"
	kill -CONT "$w"
	reap w 5
	assert_equal "$bg_status" 143
	[[ ! -e $T/ran ]] || fail "the command ran"
	nothing_left
	run -0 dlock history -S "$U" --json K
	/usr/bin/python3 -c '
import json, sys
ev = json.loads(sys.argv[1])["events"]
assert ev[0]["event"] == "released", ev[0]
' "$output" || fail "an acquired event left by the grant given back: $output"
}

# ---- losing the lock ------------------------------------------------------

@test "KILL CONNECTION of the holder: the job is told at once, dlock exits 75" {
	hold h -S "$U" -t 30 K
	wait_ready h
	sleep 0.6	# the watch starts half a second into the job
	my "KILL CONNECTION $(holder_id dlock:K)"
	reap h 5	# not the 30 s of the TTL
	assert_equal "$bg_status" 75
	grep -q TERM "$T/h.sig" || fail "the job was not signalled"
	assert_regex "$(cat "$T/h.err")" "dlock: K: .*mysql://127\.0\.0\.1:$MY_PORT: "
	nothing_left
	run -0 dlock history -S "$U" K
	assert_line --index 1 --regexp '^[0-9.]+s ago +lost '
}

@test "the server killed while holding: 75; while acquiring: 69 naming host:port" {
	hold h -S "$U" -t 30 K
	wait_ready h
	sleep 0.6
	my_kill_server KILL
	reap h 5
	assert_equal "$bg_status" 75
	grep -q TERM "$T/h.sig" || fail "the job was not signalled"
	run -69 --separate-stderr dlock -S "$U" -w 0.5 K touch "$T/ran"
	assert_regex "$stderr" "^dlock: K: mysql://127\.0\.0\.1:$MY_PORT: .*(connect|server)"
	[[ ! -e $T/ran ]] || fail "the command ran"
	my_run_server || fail "mariadbd does not come back"
	nothing_left
}

@test "the fence increases across a crash right after the grant, also where commits are not flushed" {
	# innodb_flush_log_at_trx_commit = 0: a crash loses the counter row's
	# last update (a failover to a replica that lagged does the same);
	# the server's clock is the fence's floor
	local round fence prev=0
	for round in 1 2 3; do
		my "SET GLOBAL innodb_flush_log_at_trx_commit = 0"
		# the job reads its fence, then the server dies at once
		fence=$(dlock -S "$U" -t 5 K sh -c "echo \$DLOCK_FENCE; kill -KILL \$(cat $MY_DIR/pid.mine)" 2>/dev/null) || true
		wait_until 10 dead "$(cat "$MY_DIR/pid.mine")"
		my_run_server || fail "mariadbd does not come back"
		[[ $fence =~ ^[0-9]+$ ]] || fail "round $round: no fence: '$fence'"
		((fence > prev)) || fail "round $round: fence $fence after $prev"
		prev=$fence
	done
}

@test "the server stopped (SIGSTOP) while holding: not renewed in time, 75; while acquiring: 69" {
	# -t 4: dlock's SIGKILL follows its TERM by a twentieth of the TTL,
	# 100 ms at -t 2, too short for the job's sh to record the TERM under
	# load (see job.bats, "the job is stopped before the lease lapses")
	hold h -S "$U" -t 4 K
	wait_ready h
	kill -STOP "$(cat "$MY_DIR/pid.mine")"
	reap h 10
	# acquiring: the handshake gets no answer within --node-timeout
	run -69 --separate-stderr dlock -S "$U" -n --node-timeout 0.3 K touch "$T/ran"
	kill -CONT "$(cat "$MY_DIR/pid.mine")"
	assert_equal "$stderr" "dlock: K: mysql://127.0.0.1:$MY_PORT: no answer in time (connecting)"
	[[ ! -e $T/ran ]] || fail "the command ran"
	assert_equal "$bg_status" 75
	grep -q TERM "$T/h.sig" || fail "the job was not signalled"
	nothing_left
}

@test "wait_timeout is the TTL: a stopped dlock's lock is freed, and the woken dlock stops its job" {
	# -t 4: the watchdog's SIGKILL follows its TERM by a twentieth of the
	# TTL, 100 ms at -t 2, too short for the job's sh to record the TERM
	# under load (see job.bats, "the job is stopped before the lease
	# lapses")
	hold h -S "$U" -t 4 K
	wait_ready h
	local d
	d=$(<"$T/h.dlock")
	kill -STOP "$d"
	# the server drops the silent connection about 4 s after its last
	# probe: not the default 8 hours
	wait_until 10 is_free dlock:K || { kill -CONT "$d"; fail "still held by the stopped dlock"; }
	run -0 dlock -S "$U" -n K true
	kill -CONT "$d"
	reap h 5
	assert_equal "$bg_status" 75
	grep -q TERM "$T/h.sig" || fail "the job was not signalled"
	nothing_left
}

@test "dlock killed with SIGKILL: the lock goes with its connection (the job keeps no socket)" {
	hold h -S "$U" -t 30 K
	wait_ready h
	kill -KILL "$(<"$T/h.dlock")"
	wait_until 3 is_free dlock:K || fail "the lock outlived dlock: its socket leaked into the job?"
	nothing_left
}

killed_in_history() {
	dlock history -S "$U" --json K | /usr/bin/python3 -c '
import json, sys
ev = json.load(sys.stdin)["events"]
sys.exit(0 if ev and ev[0]["event"] == "killed" else 1)'
}

@test "dlock killed with SIGKILL: its watchdog writes the 'killed' event" {
	hold h -S "$U" -t 30 K
	wait_ready h
	local pid fence
	pid=$(<"$T/h.dlock")
	fence=$(job_var h DLOCK_FENCE)
	sleep 0.3
	kill -KILL "$pid"
	wait_until 5 killed_in_history || fail "no killed event: $(dlock history -S "$U" K)"
	run -0 dlock history -S "$U" --json K
	/usr/bin/python3 -c '
import json, sys
ev = json.loads(sys.argv[1])["events"]
k, a = ev[0], ev[1]
assert k["event"] == "killed" and a["event"] == "acquired", ev
assert k["pid"] == a["pid"] == int(sys.argv[2]), ev
assert k["fence"] == a["fence"] == int(sys.argv[3]), ev
assert k["held_ms"] >= 300 and k["token"] == a["token"], ev
' "$output" "$pid" "$fence" || fail "$output"
	nothing_left
	# --history 0: none
	local last
	last=$(my "SELECT MAX(id) FROM dlock_history")
	hold h2 -S "$U" -t 30 --history 0 K
	wait_ready h2
	kill -KILL "$(<"$T/h2.dlock")"
	wait_until 5 is_free dlock:K
	sleep 0.5	# the watchdog's writer would be done by now
	assert_equal "$(my "SELECT MAX(id) FROM dlock_history")" "$last"
	nothing_left
}

# ---- fences and names -----------------------------------------------------

@test "fences strictly increase, also across a server restart; the history table repaired on the way" {
	local f prev=0 i
	for i in 1 2 3; do
		f=$(dlock -S "$U" K sh -c 'echo $DLOCK_FENCE') || fail "run $i failed"
		[[ $f =~ ^[0-9]+$ ]] && ((f > prev)) || fail "fence '$f' after $prev"
		prev=$f
	done
	# a plain client's GET_LOCK in between takes no number
	run -0 pytry dlock:K 0
	my_kill_server KILL
	my_run_server || fail "mariadbd does not come back"
	# dlock_history was not closed: the server checks and repairs it
	# when it opens it, and the history goes on (no warning)
	run -0 --separate-stderr dlock -S "$U" K sh -c 'echo $DLOCK_FENCE'
	f=$output
	assert_equal "$stderr" ''
	((f > prev)) || fail "fence $f after the restart, $prev before"
	[[ $(my "SELECT fence FROM dlock_locks WHERE name = 'dlock:K'") == "$f" ]] ||
		fail "the counter row is not the fence"
	run -0 dlock history -S "$U" --json K
	/usr/bin/python3 -c '
import json, sys
ev = json.loads(sys.argv[1])["events"]
assert [e["event"] for e in ev[:2]] == ["released", "acquired"], ev
assert ev[0]["fence"] == int(sys.argv[2]) and ev[2]["fence"] == int(sys.argv[3]), ev
' "$output" "$f" "$prev" || fail "$output"
	nothing_left
}

@test "long and non-ASCII keys: the name dlock(1)'s SQL computes; names of 64 bytes kept" {
	local k64 long1 long2 utf name
	k64=dlock:$(printf 'a%.0s' {1..58})	# 64 bytes with the prefix
	long1=$(printf 'x%.0s' {1..70})-one
	long2=$(printf 'x%.0s' {1..70})-two
	utf='nightly-ß-backup'
	for k in "${k64#dlock:}" "$long1" "$utf"; do
		name=$(sql_name dlock: "$k")
		run -0 dlock -S "$U" "$k" sh -c "echo \"\$DLOCK_KEY\"; mariadb -S $MY_DIR/sock -uroot -N -B -e \"SELECT IS_USED_LOCK('$name') IS NOT NULL\""
		assert_output "$name"$'\n1'
		((${#name} <= 64)) || fail "'$name' is longer than MySQL takes"
	done
	assert_equal "$(sql_name dlock: "${k64#dlock:}")" "$k64"
	# '#' marks hashed names: a key with one is hashed too
	name=$(sql_name dlock: 'a#b')
	run -0 dlock -S "$U" 'a#b' sh -c 'echo "$DLOCK_KEY"'
	assert_output "$name"
	[[ $name == dlock:a_b#* ]] || fail "'a#b' named $name"
	# two long names with the same first 31 bytes are two locks
	hold h -S "$U" "$long1"
	wait_ready h
	run -0 dlock -S "$U" -n "$long2" true
	run -1 dlock -S "$U" -n "$long1" true
	finish h
	nothing_left "$(sql_name dlock: "$long1")"
}

@test "a key equal to a long key's hashed name is another lock" {
	local long hashed
	long=$(printf 'x%.0s' {1..70})
	hold h -S "$U" "$long"
	wait_ready h
	hashed=$(job_var h DLOCK_KEY)
	((${#hashed} == 64)) || fail "hashed name '$hashed'"
	# the hashed name, less the prefix, as a key of its own
	run -0 --separate-stderr dlock -S "$U" -n "${hashed#dlock:}" sh -c 'echo "$DLOCK_KEY"'
	[[ $output != "$hashed" ]] || fail "the crafted key took the long key's lock"
	finish h
	nothing_left "$hashed"
}

@test "names and tokens are hex literals: under NO_BACKSLASH_ESCAPES a key with \\ and ' is the mariadb client's lock" {
	my "SET GLOBAL sql_mode = CONCAT(@@GLOBAL.sql_mode, ',NO_BACKSLASH_ESCAPES')"
	local key="a\\b'c" held
	# the client writes the name as that sql_mode reads it
	held="mariadb -S $MY_DIR/sock -uroot -N -B -e \"SELECT @@sql_mode LIKE '%NO_BACKSLASH_ESCAPES%', GET_LOCK('dlock:a\\b''c', 0)\""
	run -0 dlock -S "$U" "$key" sh -c "$held"
	assert_output $'1\t0'
	# and the other way: the client holds, dlock does not get in
	pyhold p "dlock:$key"
	wait_until 5 test -e "$T/p.held"
	run -1 dlock -S "$U" -n "$key" touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "dlock took the client's lock"
	touch "$T/p.release"
	wait_until 5 is_free_literal
	# status and history under that mode
	hold h -S "$U" "$key"
	wait_ready h
	run -0 dlock status -S "$U" "$key"
	assert_line --index 0 --regexp '^a.+c: held, exclusive, fencing counter [0-9]+'
	finish h
	run -0 dlock history -S "$U" "$key"
	assert_line --index 1 --regexp '^[0-9.]+s ago +released '
	my "SET GLOBAL sql_mode = DEFAULT"
	wait_until 5 no_conns || fail "connections of dl left"
	is_free_literal || fail "still held"
}

# IS_USED_LOCK of dlock:a\b'c, typed without escapes
is_free_literal() { [[ $(my "SELECT IFNULL(IS_USED_LOCK(X'646c6f636b3a615c622763'), 'NULL')") == NULL ]]; }

@test "a SHA-256 that fails is an error (70), never a name: a long key with OpenSSL's default provider off" {
	printf 'openssl_conf = init\n[init]\nproviders = p\n[p]\nnull = n\n[n]\nactivate = 1\n' >"$T/openssl.cnf"
	local long
	long=$(printf 'x%.0s' {1..70})
	OPENSSL_CONF=$T/openssl.cnf run -70 --separate-stderr dlock -S "$U" "$long" touch "$T/ran"
	assert_equal "$stderr" "dlock: $long: mysql://127.0.0.1:$MY_PORT: cannot compute the SHA-256 that names a long or non-ASCII key (libcrypto failed)"
	[[ ! -e $T/ran ]] || fail "the command ran"
	# a plain name needs no digest
	OPENSSL_CONF=$T/openssl.cnf run -0 dlock -S "$U" K true
	nothing_left
}

@test "counter rows are the names' byte for byte: 'k' and 'k ' count apart" {
	local a b c
	a=$(dlock -S "$U" k sh -c 'echo $DLOCK_FENCE')
	b=$(dlock -S "$U" 'k ' sh -c 'echo $DLOCK_FENCE')
	c=$(dlock -S "$U" k sh -c 'echo $DLOCK_FENCE')
	# each name its own row: 'k ' is no later holder of 'k'
	[[ $(my "SELECT fence FROM dlock_locks WHERE name = 'dlock:k '") == "$b" ]] ||
		fail "'k ' fenced by another row"
	((c > a)) || fail "k: $c after $a"
	[[ $(my "SELECT COUNT(*) FROM dlock_locks WHERE name IN ('dlock:k', 'dlock:k ')") == 2 ]] ||
		fail "one row: $(my "SELECT HEX(name), fence FROM dlock_locks")"
	# and their histories
	run -0 dlock history -S "$U" --json 'k '
	[[ $(/usr/bin/python3 -c 'import json, sys; print(len(json.loads(sys.argv[1])["events"]))' "$output") == 2 ]] ||
		fail "'k ' has k's events: $output"
}

# ---- refusals -------------------------------------------------------------

@test "refused before anything is taken (64): -s, --limit, --fair, two URLs, acquire, extend, release --token" {
	local args
	for args in "-s K" "--limit 2 K" "--fair K"; do
		# shellcheck disable=SC2086
		run -64 --separate-stderr dlock -S "$U" $args touch "$T/ran"
		assert_regex "$stderr" '^dlock: MySQL cannot (-s|--limit|--fair)[^:]*: .+'
	done
	run -64 --separate-stderr dlock -S "$U" --fair K true
	assert_equal "$stderr" "dlock: MySQL cannot --fair: the server grants GET_LOCK's waiters in no defined order"
	run -64 --separate-stderr dlock -S "$U" -S "mysql://dl:secret@127.0.0.2:$MY_PORT/dlock" K touch "$T/ran"
	assert_output ''
	[[ $stderr == *"MySQL takes one server URL (2 given)"* ]] || fail "stderr: $stderr"
	run -64 --separate-stderr dlock acquire -S "$U" K
	assert_equal "$stderr" "dlock: MySQL cannot dlock acquire: the lock lives and dies with the connection of the dlock that took it"
	run -64 dlock extend -S "$U" K --token x
	run -64 dlock release -S "$U" K --token x
	[[ ! -e $T/ran ]] || fail "a command ran"
	nothing_left
}

@test "bad URLs are usage errors (64) that never echo the password" {
	local url
	for url in "mysql://dl:hunter2@127.0.0.1:99999/dlock" "mysql://dl:hunter2@127.0.0.1/dlock?tls=maybe" \
		"mysql://dl:hunter2@127.0.0.1/dlock?charset=utf8" "mysql:///dlock" \
		"mysql://dl:hunter2@/dlock" "mysql://127.0.0.1:$MY_PORT/dlock?socket=relative" \
		"mysql://dl:hunter2@127.0.0.1/db%zz"; do
		run -64 --separate-stderr dlock -S "$url" K touch "$T/ran"
		[[ $stderr == "dlock: --server: bad server URL"* ]] || fail "$url: $stderr"
		[[ $stderr != *hunter2* ]] || fail "the password in: $stderr"
	done
	[[ ! -e $T/ran ]] || fail "a command ran"
}

@test "wrong password, unknown user: 77 naming lock and host:port; unreachable: 69" {
	run -77 --separate-stderr dlock -S "mysql://dl:wrong@127.0.0.1:$MY_PORT/dlock" K touch "$T/ran"
	assert_equal "$stderr" "dlock: K: mysql://127.0.0.1:$MY_PORT: access denied for user 'dl'@'127.0.0.1' (using password: YES)"
	run -77 --separate-stderr dlock -S "mysql://nobody:x@127.0.0.1:$MY_PORT/dlock" K touch "$T/ran"
	[[ $stderr == "dlock: K: mysql://127.0.0.1:$MY_PORT: access denied for user 'nobody'"* ]] || fail "$stderr"
	local port
	port=$(my_free_port)
	run -69 --separate-stderr dlock -S "mysql://dl:secret@127.0.0.1:$port/dlock" -n K touch "$T/ran"
	[[ $stderr == "dlock: K: mysql://127.0.0.1:$port: "*"connect"* ]] || fail "$stderr"
	[[ $stderr != *secret* ]] || fail "the password in: $stderr"
	[[ ! -e $T/ran ]] || fail "a command ran"
	nothing_left
}

@test "no database in the URL: 64 before anything is contacted, unless --no-fence; one that does not exist: 64" {
	local port
	port=$(my_free_port)	# nobody listens: nothing is contacted
	run -64 --separate-stderr dlock -S "mysql://dl:secret@127.0.0.1:$port" K touch "$T/ran"
	assert_equal "$stderr" "dlock: K: mysql://127.0.0.1:$port: no database in the URL, where the fencing counter's table is: name one (mysql://HOST/DATABASE), or --no-fence"
	run -64 dlock -S "mysql://dl:secret@127.0.0.1:$MY_PORT/" K touch "$T/ran"
	run -0 dlock -S "mysql://dl:secret@127.0.0.1:$MY_PORT" --no-fence K sh -c 'echo "${DLOCK_FENCE-unset}"'
	assert_output unset
	# status needs no database; history does
	run -1 dlock status -S "mysql://dl:secret@127.0.0.1:$MY_PORT" K
	run -64 dlock history -S "mysql://dl:secret@127.0.0.1:$MY_PORT" K
	# a database the server says does not exist (an account that may see
	# them all: root over the socket)
	run -64 --separate-stderr dlock -S "mysql://root@localhost/nosuch?socket=$MY_DIR/sock" K touch "$T/ran"
	assert_equal "$stderr" "dlock: K: mysql://localhost?socket=$MY_DIR/sock: unknown database 'nosuch'"
	# one the account may not see, whether or not it exists: access denied
	run -77 --separate-stderr dlock -S "mysql://dl:secret@127.0.0.1:$MY_PORT/nosuch" K touch "$T/ran"
	assert_equal "$stderr" "dlock: K: mysql://127.0.0.1:$MY_PORT: access denied for user 'dl'@'%' to database 'nosuch'"
	[[ ! -e $T/ran ]] || fail "a command ran"
	nothing_left
}

# fill_server SECONDS: max_connections 10, all taken by a client that
# lets go after SECONDS; its PID in $py
fill_server() {
	my "SET GLOBAL max_connections = 10"
	/usr/bin/python3 - "$MY_PORT" "$T/full" "$1" <<'EOF' 3>&- &
import os, sys, time, pymysql
cs = []
try:
    while len(cs) < 20:
        cs.append(pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="ro", password="ropass"))
except pymysql.err.OperationalError:
    pass
open(sys.argv[2], "w").write("%d\n" % len(cs))
time.sleep(float(sys.argv[3]))
EOF
	py=$!
	track $py
	wait_until 10 test -e "$T/full"
}

@test "too many connections (1040): tried again within --connect-budget, then 69 naming it" {
	local py t0 took
	fill_server 30
	t0=$(now_ms)
	run -69 --separate-stderr dlock -S "$U" -n --connect-budget 1 K touch "$T/ran"
	took=$(($(now_ms) - t0))
	kill "$py"
	my "SET GLOBAL max_connections = DEFAULT"
	assert_equal "$stderr" "dlock: K: mysql://127.0.0.1:$MY_PORT: too many connections"
	((took >= 500)) || fail "gave up after $took ms, before --connect-budget (its second half)"
	[[ ! -e $T/ran ]] || fail "the command ran"
	nothing_left
}

@test "too many connections (1040) under -n: a connection freed within --connect-budget gives the lock, not 69" {
	local py
	fill_server 1.5
	run -0 --separate-stderr dlock -S "$U" -n --connect-budget 10 K touch "$T/ran"
	my "SET GLOBAL max_connections = DEFAULT"
	[[ -e $T/ran ]] || fail "the command did not run: $stderr"
	nothing_left
}

@test "no right to write the fence row, or no database right: 77 naming what is missing, nothing left" {
	run -0 dlock -S "$U" K true	# the tables exist
	run -77 --separate-stderr dlock -S "mysql://ro:ropass@127.0.0.1:$MY_PORT/dlock" K touch "$T/ran"
	[[ $stderr == "dlock: K: mysql://127.0.0.1:$MY_PORT: writing the fencing counter in dlock.dlock_locks"*"INSERT, UPDATE command denied to user 'ro'"* ]] ||
		fail "$stderr"
	run -77 --separate-stderr dlock -S "mysql://nodb:nodbpass@127.0.0.1:$MY_PORT/dlock" K touch "$T/ran"
	[[ $stderr == *"access denied for user 'nodb'"*"to database 'dlock'" ]] || fail "$stderr"
	[[ ! -e $T/ran ]] || fail "a command ran"
	nothing_left
	[[ $(conns_of ro) == 0 ]] || fail "ro's connection left"
}

@test "a server older than MySQL 5.7.5 or MariaDB 10.1.2, by its handshake: 69 in one line" {
	local v port
	for v in 5.5.5-10.1.1-MariaDB 5.5.5-10.0.38-MariaDB-log 5.7.4-m14 5.6.51-log; do
		start_relay version "$v"
		port=$(<"$T/relay.port")
		run -69 --separate-stderr dlock -S "mysql://dl:secret@127.0.0.1:$port/dlock" -n K touch "$T/ran"
		[[ $stderr =~ ^"dlock: K: mysql://127.0.0.1:$port: ""the server is "(MariaDB|MySQL)" "[0-9.]+", too old: dlock needs MySQL 5.7.5 or MariaDB 10.1.2 or later"$ ]] ||
			fail "$v: $stderr"
		rm "$T/relay.port"
	done
	[[ ! -e $T/ran ]] || fail "a command ran"
	start_relay version 5.5.5-10.1.2-MariaDB
	run -0 dlock -S "mysql://dl:secret@127.0.0.1:$(<"$T/relay.port")/dlock" K true
	nothing_left
}

@test "what dlock does where the handshake says MySQL 8.0 (whole-second waits, PROCESSLIST without TIME_MS)" {
	start_relay version 8.0.36
	local u="mysql://dl:secret@127.0.0.1:$(<"$T/relay.port")/dlock" t0
	hold h -S "$u" K
	wait_ready h
	run -0 dlock status -S "$u" K
	assert_line --index 0 --regexp '^K: held, exclusive, fencing counter [0-9]+'
	# -w 0.3: a GET_LOCK of the second begun, cancelled at the deadline
	t0=$(now_ms)
	run -1 dlock -S "$u" -w 0.3 K touch "$T/ran"
	(($(now_ms) - t0 >= 300 && $(now_ms) - t0 < 900)) || fail "gave up after $(($(now_ms) - t0)) ms"
	no_waiters || fail "a GET_LOCK still waits in the server"
	finish h
	assert_equal "$bg_status" 0
	[[ ! -e $T/ran ]] || fail "the command ran"
	nothing_left
}

@test "refused at connect (69): a read-only server, a pooler that moves the session" {
	my "SET GLOBAL read_only = 1"
	run -69 --separate-stderr dlock -S "$U" -n K touch "$T/ran"
	my "SET GLOBAL read_only = 0"
	[[ $stderr == "dlock: K: mysql://127.0.0.1:$MY_PORT: the server is read-only (@@read_only = 1)"* ]] || fail "$stderr"
	start_id_relay
	run -69 --separate-stderr dlock -S "mysql://dl:secret@127.0.0.1:$(<"$T/relay.port")/dlock" -n K touch "$T/ran"
	[[ $stderr == *"the session moved"*"pooler"* ]] || fail "$stderr"
	[[ ! -e $T/ran ]] || fail "a command ran"
	nothing_left
}

# ---- inspection ------------------------------------------------------------

@test "status: free, held by dlock (pid, fence, connection), --json, the list; exit 0 held, 1 free" {
	run -1 dlock status -S "$U" K
	assert_output --regexp '^K: free'
	hold h -S "$U" K
	wait_ready h
	local pid fence id
	pid=$(<"$T/h.dlock")	# the holder info's pid is dlock's
	fence=$(job_var h DLOCK_FENCE)
	id=$(holder_id dlock:K)
	run -0 dlock status -S "$U" K
	assert_line --index 0 "K: held, exclusive, fencing counter $fence"
	assert_line --index 2 --regexp " $pid +root "
	assert_output --partial "[connection $id]"
	run -0 dlock status -S "$U" --json K
	/usr/bin/python3 -c '
import json, sys
l = json.loads(sys.argv[1])["locks"][0]
h = l["holders"][0]
assert l["state"] == "held" and l["key"] == "dlock:K", l
assert h["fence"] == int(sys.argv[2]) and not h["foreign"], h
assert h["token"] == sys.argv[3], h
assert 0 < h["ttl_ms"] <= 30000, h
' "$output" "$fence" "$(job_var h DLOCK_TOKEN)" || fail "$output"
	run -0 dlock status -S "$U"
	assert_line --index 1 --regexp '^K +held +exclusive +1 '
	# a waiter, in the server's blocking GET_LOCK
	start_bg w -S "$U" K true
	wait_until 5 has_waiter || fail "dlock is not waiting in GET_LOCK"
	run -0 dlock status -S "$U" K
	assert_line --index 0 "K: held, exclusive, 1 waiting, fencing counter $fence"
	finish h
	reap w
	assert_equal "$bg_status" 0
	# the waiter's fence: larger (the counter, or the server's clock)
	local next; next=$(my "SELECT fence FROM dlock_locks WHERE name = 'dlock:K'")
	((next > fence)) || fail "fence $next after $fence"
	run -1 dlock status -S "$U" K
	assert_output --regexp "^K: free, fencing counter $next"
	nothing_left
}

@test "history: acquired, released with exit status and hold time; trimmed to --history" {
	my "DELETE FROM dlock_history WHERE name = 'dlock:H'" 2>/dev/null || true
	run -0 dlock -S "$U" H true
	run -3 dlock -S "$U" H sh -c 'exit 3'
	run -0 dlock history -S "$U" --json H
	/usr/bin/python3 -c '
import json, sys
ev = json.loads(sys.argv[1])["events"]
assert [e["event"] for e in ev] == ["released", "acquired", "released", "acquired"], ev
assert ev[0]["exit"] == 3 and ev[2]["exit"] == 0, ev
assert ev[0]["fence"] == ev[1]["fence"] > ev[2]["fence"], ev
assert ev[0]["held_ms"] >= 0 and ev[0]["host"], ev
' "$output" || fail "$output"
	local i
	for i in 1 2 3; do	# from 4 events to 3; then 3 + 2 to 3 again
		run -0 dlock -S "$U" --history 3 H true
		[[ $(my "SELECT COUNT(*) FROM dlock_history WHERE name = 'dlock:H'") == 3 ]] ||
			fail "not trimmed to 3: $(my "SELECT COUNT(*) FROM dlock_history WHERE name = 'dlock:H'")"
	done
	run -0 dlock history -S "$U" --json H
	/usr/bin/python3 -c '
import json, sys
ev = json.loads(sys.argv[1])["events"]
assert [e["event"] for e in ev] == ["released", "acquired", "released"], ev
assert ev[0]["fence"] == ev[1]["fence"] > ev[2]["fence"], ev
' "$output" || fail "not the newest kept: $output"
	run -0 dlock -S "$U" --history 0 H true
	[[ $(my "SELECT COUNT(*) FROM dlock_history WHERE name = 'dlock:H'") == 3 ]] ||
		fail "--history 0 wrote events"
	# --history 16: trimmed at every second release (past 18 events), so
	# 16 or 18 events once full
	local n r
	for r in 1 2 3 4 5 6 7 8 9 10 11; do
		run -0 dlock -S "$U" --history 16 H true
		n=$(my "SELECT COUNT(*) FROM dlock_history WHERE name = 'dlock:H'")
		((n == 3 + 2 * r || n == 16 || n == 18)) || fail "$n events after run $r"
	done
	((n <= 18)) || fail "$n events kept"
	nothing_left dlock:H
}

# Innodb_data_fsyncs: the redo log's flushes (and the data files')
fsyncs() { my "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_DATA_FSYNCS'"; }
engine_of() { my "SELECT CONCAT(ENGINE, ' ', CREATE_OPTIONS) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$1' AND TABLE_NAME = '$2'"; }

@test "history: its table flushes nothing: a run flushes the redo log once, for the fence row" {
	run -0 dlock -S "$U" K true	# the tables exist
	[[ $(engine_of dlock dlock_history) == "Aria transactional=0" ]] ||
		fail "dlock_history is $(engine_of dlock dlock_history)"
	[[ $(engine_of dlock dlock_locks) == InnoDB* ]] || fail "dlock_locks is $(engine_of dlock dlock_locks)"
	local before i
	before=$(fsyncs)
	for i in 1 2 3 4 5 6 7 8 9 10; do
		dlock -S "$U" K true || fail "run $i failed"
	done
	# one flush a run (the fence's commit; the server's own, seldom,
	# besides); an InnoDB history flushes twice a run
	(($(fsyncs) - before >= 10 && $(fsyncs) - before <= 14)) ||
		fail "$(($(fsyncs) - before)) flushes for 10 runs"
	run -0 dlock history -S "$U" --json K
	[[ $output == *'"event":"released"'*'"event":"acquired"'* ]] || fail "$output"
	nothing_left
}

@test "history: an older dlock's InnoDB dlock_history keeps working; dlock(1)'s ALTER TABLE converts it" {
	local u="mysql://dl:secret@127.0.0.1:$MY_PORT/old" alter
	run -0 dlock -S "$U" K true	# dlock's tables, to copy
	my "DROP DATABASE IF EXISTS old; CREATE DATABASE old;
		GRANT ALL ON old.* TO 'dl'@'%';
		CREATE TABLE old.dlock_locks LIKE dlock.dlock_locks;
		CREATE TABLE old.dlock_history LIKE dlock.dlock_history;
		ALTER TABLE old.dlock_history ENGINE=InnoDB"
	run -0 dlock -S "$u" K true
	run -3 dlock -S "$u" K sh -c 'exit 3'
	[[ $(engine_of old dlock_history) == InnoDB* ]] || fail "dlock_history is $(engine_of old dlock_history)"
	# the statement dlock(1) gives, as written there
	alter=$(awk '/^## MySQL and MariaDB/ { m = 1 } m && /^## etcd/ { exit } m' \
		"$BATS_TEST_DIRNAME/../man/dlock.1.scd" | tr '\n' ' ' | tr -d '*' |
		grep -o 'ALTER TABLE dlock_history ENGINE=Aria TRANSACTIONAL=0')
	[[ $alter ]] || fail "dlock(1) gives no ALTER TABLE for an InnoDB dlock_history"
	mariadb -S "$MY_DIR/sock" -uroot old -e "$alter" || fail "'$alter' does not run"
	[[ $(engine_of old dlock_history) == "Aria transactional=0" ]] || fail "$(engine_of old dlock_history)"
	run -0 --separate-stderr dlock -S "$u" K true
	assert_equal "$stderr" ''
	run -0 dlock history -S "$u" --json K
	/usr/bin/python3 -c '
import json, sys
ev = json.loads(sys.argv[1])["events"]
assert [e["event"] for e in ev] == ["released", "acquired"] * 3, ev
assert [e["exit"] for e in ev if e["event"] == "released"] == [0, 3, 0], ev
assert ev[0]["fence"] > ev[2]["fence"] > ev[4]["fence"], ev
' "$output" || fail "$output"
	my "DROP DATABASE old"
	nothing_left
}

@test "history: where the server refuses Aria (enforce_storage_engine), dlock_history is InnoDB" {
	local u="mysql://dl:secret@127.0.0.1:$MY_PORT/enf"
	my "DROP DATABASE IF EXISTS enf; CREATE DATABASE enf; GRANT ALL ON enf.* TO 'dl'@'%';
		SET GLOBAL enforce_storage_engine = InnoDB"
	run -0 --separate-stderr dlock -S "$u" K true
	my "SET GLOBAL enforce_storage_engine = NULL"
	assert_equal "$stderr" ''
	[[ $(engine_of enf dlock_history) == InnoDB* ]] || fail "dlock_history is $(engine_of enf dlock_history)"
	run -0 dlock history -S "$u" --json K
	[[ $output == *'"event":"released"'*'"event":"acquired"'* ]] || fail "$output"
	my "DROP DATABASE enf"
	nothing_left
}

@test "history: a damaged dlock_history: the lock, its fence and the job go on, one warning; REPAIR TABLE brings it back" {
	local u="mysql://dl:secret@127.0.0.1:$MY_PORT/dmg" f0 f1
	run -0 dlock -S "$U" K true	# dlock's tables, to copy
	# the tables as dlock(1) gives them
	my "DROP DATABASE IF EXISTS dmg; CREATE DATABASE dmg; GRANT ALL ON dmg.* TO 'dl'@'%';
		CREATE TABLE dmg.dlock_locks LIKE dlock.dlock_locks;
		CREATE TABLE dmg.dlock_history LIKE dlock.dlock_history;
		ALTER TABLE dmg.dlock_history ENGINE=Aria TRANSACTIONAL=0"
	f0=$(dlock -S "$u" K sh -c 'echo $DLOCK_FENCE') || fail "the first run failed"
	# its index file cut short, as a crash of the disk might leave it
	my "FLUSH TABLES dmg.dlock_history"
	truncate -s 100 "$MY_DIR/data/dmg/dlock_history.MAI"
	run -70 dlock history -S "$u" K
	run -0 --separate-stderr dlock -S "$u" K sh -c 'echo $DLOCK_FENCE'
	f1=$output
	((f1 > f0)) || fail "fence $f1 after $f0"
	assert_equal "$(my "SELECT fence FROM dmg.dlock_locks")" "$f1"
	[[ $stderr =~ ^"dlock: K: warning: mysql://127.0.0.1:$MY_PORT: no history of this run: writing dmg.dlock_history: "[^$'\n']+$ ]] ||
		fail "$stderr"
	nothing_left
	my "REPAIR TABLE dmg.dlock_history USE_FRM" >/dev/null
	run -0 --separate-stderr dlock -S "$u" K true
	assert_equal "$stderr" ''
	run -0 dlock history -S "$u" --json K
	[[ $output == *'"event":"released"'*'"event":"acquired"'* ]] || fail "$output"
	my "DROP DATABASE dmg"
	nothing_left
}

@test "history: the 'acquired' event is the server's to write while the job starts; a dropped dlock_history is made again" {
	run -0 dlock -S "$U" K true	# the tables exist
	# the job sees its own event (written after the fence row, which
	# the job waited for; the event, not)
	run -0 dlock -S "$U" K sh -c "
		for i in \$(seq 100); do
			n=\$(mariadb -S $MY_DIR/sock -uroot -N -B dlock -e \"SELECT COUNT(*) FROM dlock_history WHERE name = 'dlock:K' AND event = 'acquired' AND fence = \$DLOCK_FENCE\")
			[ \"\$n\" = 1 ] && exit 0
			sleep 0.05
		done
		exit 9"
	my "DROP TABLE dlock_history"
	run -0 --separate-stderr dlock -S "$U" K sh -c 'echo $DLOCK_FENCE'
	assert_equal "$stderr" ''
	local f=$output
	run -0 dlock history -S "$U" --json K
	/usr/bin/python3 -c '
import json, sys
ev = json.loads(sys.argv[1])["events"]
assert [e["event"] for e in ev] == ["released", "acquired"], ev
assert ev[0]["fence"] == ev[1]["fence"] == int(sys.argv[2]), ev
' "$output" "$f" || fail "$output"
	nothing_left
}

@test "history: an account without rights on dlock_history takes locks and fences, with one warning a run" {
	run -0 dlock -S "$U" K true	# the tables exist
	my "DROP USER IF EXISTS 'nohist'@'%'; CREATE USER 'nohist'@'%' IDENTIFIED BY 'nohistpass';
		GRANT SELECT, INSERT, UPDATE ON dlock.dlock_locks TO 'nohist'@'%';
		GRANT SELECT ON dlock.dlock_history TO 'nohist'@'%'"
	local u="mysql://nohist:nohistpass@127.0.0.1:$MY_PORT/dlock" f0 f1
	f0=$(my "SELECT fence FROM dlock_locks WHERE name = 'dlock:K'")
	run -0 --separate-stderr dlock -S "$u" K sh -c 'echo $DLOCK_FENCE'
	f1=$output
	((f1 > f0)) || fail "fence $f1 after $f0"
	[[ $stderr =~ ^"dlock: K: warning: mysql://127.0.0.1:$MY_PORT: no history of this run: writing dlock.dlock_history: "[^$'\n']*"command denied to user 'nohist'"[^$'\n']*$ ]] ||
		fail "$stderr"
	[[ $(my "SELECT COUNT(*) FROM dlock_history WHERE fence = $f1 AND name = 'dlock:K'") == 0 ]] ||
		fail "events written"
	my "DROP USER 'nohist'@'%'"
	nothing_left
}

@test "release --force: KILL CONNECTION of the holder, which exits 75; 77 where the account may not" {
	hold h -S "$U" -t 30 K
	wait_ready h
	sleep 0.6
	run -77 --separate-stderr dlock release -S "mysql://ro:ropass@127.0.0.1:$MY_PORT/dlock" --force K
	# nothing was broken: no broken line, one error line naming lock and server
	assert_output ''
	[[ $stderr == "dlock: K: mysql://127.0.0.1:$MY_PORT: KILL CONNECTION"*"CONNECTION ADMIN"*"not owner of thread"* ]] || fail "$stderr"
	[[ $stderr != *$'\n'* ]] || fail "more than one line: $stderr"
	is_held dlock:K || fail "the lock was broken anyway"
	run -0 dlock release -S "$U" --force K
	assert_output --regexp "^broken: root@.* pid $(<"$T/h.dlock") .*, fence $(job_var h DLOCK_FENCE), token $(job_var h DLOCK_TOKEN)"
	reap h 5
	assert_equal "$bg_status" 75
	run -1 --separate-stderr dlock release -S "$U" --force K
	assert_equal "$stderr" "dlock: K: not held"
	run -0 dlock history -S "$U" --json K
	[[ $output == *'"event":"broken"'* ]] || fail "no broken event: $output"
	nothing_left
}

@test "release --force of another client's lock says no '0.0s left': it lasts with its session" {
	pyhold c dlock:K
	wait_until 10 test -e "$T/c.held" || fail "the client did not get the lock: $(cat "$T/c.out")"
	run -0 --separate-stderr dlock release -S "$U" --force K
	assert_output --regexp "^broken: another client's lock, value '[^']*', no TTL$"
	wait_until 5 is_free dlock:K
}

# ---- connections ------------------------------------------------------------

@test "TLS: verify-full with the test CA, required, a wrong CA refused (69), TLS-only account" {
	local base="127.0.0.1:$MY_PORT/dlock"
	run -0 --separate-stderr dlock -S "mysql://tlsonly:tlspass@$base?tls=verify-full" \
		--tls-ca "$MY_TLS/ca.pem" K true
	assert_equal "$stderr" ''
	run -0 dlock -S "mysql://tlsonly:tlspass@$base?tls=required" K true
	run -0 dlock -S "mysql://tlsonly:tlspass@$base?tls=verify-ca" --tls-ca "$MY_TLS/ca.pem" K true
	local mode
	for mode in verify-full verify-ca; do
		run -69 --separate-stderr dlock -S "mysql://tlsonly:tlspass@$base?tls=$mode" \
			--tls-ca "$MY_TLS/other-ca.pem" -n K touch "$T/ran"
		[[ $stderr == "dlock: K: mysql://127.0.0.1:$MY_PORT: "*"certificate"* ]] || fail "$mode: $stderr"
	done
	run -77 dlock -S "mysql://tlsonly:tlspass@$base" K touch "$T/ran"
	run -64 --separate-stderr dlock -S "$U" --tls-ca "$MY_TLS/ca.pem" K touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "a command ran"
	nothing_left
	[[ $(conns_of tlsonly) == 0 ]] || fail "a TLS connection left"
}

@test "TLS: a server that offers none (a man in the middle strips it) is refused before the login (69), in every tls= mode" {
	start_relay no-tls
	local port mode
	port=$(<"$T/relay.port")
	for mode in required verify-ca verify-full; do
		run -69 --separate-stderr dlock -S "mysql://dl:secret@127.0.0.1:$port/dlock?tls=$mode" \
			--tls-ca "$MY_TLS/ca.pem" -n K touch "$T/ran"
		assert_equal "$stderr" "dlock: K: mysql://127.0.0.1:$port: the server offers no TLS (tls= in the URL): refused before logging in"
	done
	[[ ! -e $T/ran ]] || fail "a command ran"
	# not a byte sent to the server: no login in clear text
	wait_until 5 test "$(wc -l <"$T/relay.sent" 2>/dev/null)" -ge 3 ||
		fail "the relay saw $(cat "$T/relay.sent" 2>/dev/null | wc -l) connections end"
	assert_equal "$(sort -u "$T/relay.sent")" 0
	# without tls= the same relay is a server like any other
	run -0 dlock -S "mysql://dl:secret@127.0.0.1:$port/dlock" K true
	nothing_left
}

@test "passwords: --password-file, DLOCK_PASSWORD, MYSQL_PWD, ~/.my.cnf [client] and [dlock]; never in ps" {
	local u="mysql://dl@127.0.0.1:$MY_PORT/dlock"
	echo secret >"$T/pw"
	chmod 600 "$T/pw"
	run -0 dlock -S "$u" --password-file "$T/pw" K true
	DLOCK_PASSWORD=secret run -0 dlock -S "$u" K true
	MYSQL_PWD=secret run -0 dlock -S "$u" K true
	printf '[client]\npassword=secret\n' >"$T/.my.cnf"
	HOME=$T run -0 dlock -S "$u" K true
	printf '[client]\npassword=wrong\n[dlock]\npassword=secret\n' >"$T/.my.cnf"
	HOME=$T run -0 dlock -S "$u" K true
	# the URL's password first
	DLOCK_PASSWORD=secret run -77 dlock -S "mysql://dl:wrong@127.0.0.1:$MY_PORT/dlock" K true
	run -77 dlock -S "$u" K true
	# masked in ps while it runs
	hold h -S "$U" K
	wait_ready h
	tr '\0' ' ' <"/proc/$(<"$T/h.dlock")/cmdline" >"$T/cmdline"
	grep -q secret "$T/cmdline" && fail "the password in ps: $(cat "$T/cmdline")"
	grep -q 'dl:\*\*\*\*\*\*@' "$T/cmdline" || fail "not masked: $(cat "$T/cmdline")"
	finish h
	nothing_left
}

@test "-k A -k B: each on its own connection, taken all or none" {
	run -0 dlock -S "$U" -k A -k B sh -c "echo \$DLOCK_KEYS; mariadb -S $MY_DIR/sock -uroot -N -B -e \"SELECT IS_USED_LOCK('dlock:A') <> IS_USED_LOCK('dlock:B')\""
	assert_output $'dlock:A dlock:B\n1'
	hold h -S "$U" B
	wait_ready h
	run -1 dlock -S "$U" -n -k A -k B touch "$T/ran"
	is_free dlock:A || fail "A kept while B was refused"
	finish h
	[[ ! -e $T/ran ]] || fail "the command ran"
	nothing_left dlock:A
	nothing_left dlock:B
}

@test "-k: every key's fence only grows: each row is raised to the job's fence" {
	local job a b
	# B's counter ahead of A's
	for n in 1 2 3; do dlock -S "$U" B true; done
	job=$(dlock -S "$U" -k A -k B sh -c 'echo $DLOCK_FENCE')
	b=$(dlock -S "$U" B sh -c 'echo $DLOCK_FENCE')
	a=$(dlock -S "$U" A sh -c 'echo $DLOCK_FENCE')
	((a > job && b > job)) || fail "after the -k job's fence $job: A got $a, B got $b"
}

@test "the man page's tables and grants: an account without CREATE takes locks, fences and history" {
	local ddl
	ddl=$(man_block '*The fence.*')
	[[ $ddl == *"CREATE TABLE dlock_locks"*"CREATE TABLE dlock_history"*GRANT* ]] || fail "no DDL in dlock(1): $ddl"
	my "DROP DATABASE IF EXISTS app; CREATE DATABASE app;
		DROP USER IF EXISTS 'cron'@'%'; CREATE USER 'cron'@'%' IDENTIFIED BY 'cronpass'"
	mariadb -S "$MY_DIR/sock" -uroot app -e "$ddl" || fail "the DDL does not run"
	local u="mysql://cron:cronpass@127.0.0.1:$MY_PORT/app"
	local f1
	f1=$(dlock -S "$u" K sh -c 'echo $DLOCK_FENCE') || fail "no lock"
	[[ $f1 =~ ^[1-9][0-9]*$ ]] || fail "fence '$f1'"
	run -0 dlock -S "$u" K sh -c 'echo $DLOCK_FENCE'
	((output > f1)) || fail "fence $output after $f1"
	run -0 dlock history -S "$u" K
	assert_line --index 1 --regexp '^[0-9.]+s ago +released '
	run -0 dlock -S "$u" --history 1 K true
	[[ $(my "SELECT COUNT(*) FROM app.dlock_history") == 1 ]] || fail "not trimmed"
	[[ $(engine_of app dlock_history) == "Aria transactional=0" ]] ||
		fail "the history table is $(engine_of app dlock_history)"
	my "DROP DATABASE app; DROP USER 'cron'@'%'"
	nothing_left
}

@test "dlock killed (kill -9): the lock is kept until the watchdog has stopped the job" {
	"$DLOCK" -S "$U" -t 30 --kill-after 2 held "$T/job" "$T/h" deaf 2>"$T/err" &
	local pid=$! jobpid
	track $pid
	wait_until 10 test -e "$T/h.ready"
	jobpid=$(<"$T/h.pid")
	"$DLOCK" -S "$U" held touch "$T/ran" &
	track $!
	wait_until 5 has_waiter || fail "the second dlock is not waiting in GET_LOCK"
	kill -KILL "$pid"
	# the job ignores SIGTERM: it lives until the SIGKILL 2 s later, and
	# all that time the waiter must stay out
	while alive "$jobpid"; do
		[[ ! -e $T/ran ]] || fail "the waiter ran while the job still ran"
		sleep 0.02
	done
	wait_until 10 test -e "$T/ran" || fail "the waiter never got the lock"
	grep -q 'dlock was killed' "$T/err"
}

@test "a fence past 2^63 - 1 (a row edited by hand): 70, one line, nothing run, the lock given back" {
	run -0 dlock -S "$U" -n K true	# the row exists
	my "UPDATE dlock_locks SET fence = 9223372036854775807 WHERE name = 'dlock:K'"
	run -70 --separate-stderr dlock -S "$U" -n K sh -c 'echo "fence=[$DLOCK_FENCE]"'
	assert_output ''	# not started
	[[ ${#stderr_lines[@]} == 1 && $stderr == *"past 2^63-1"* ]] || fail "stderr: $stderr"
	nothing_left
	my "DELETE FROM dlock_locks WHERE name = 'dlock:K'"
}

# ---- dlock_wait=poll: waiters that hold no connection ---------------------

# poll_account: an account of its own for the polling waiters, so that
# their connections are counted apart (the server's user statistics on)
poll_account() {
	my "CREATE USER IF NOT EXISTS 'poller'@'%' IDENTIFIED BY 'pp'; GRANT ALL ON dlock.* TO 'poller'@'%'; SET GLOBAL userstat = 1"
	PU="mysql://poller:pp@127.0.0.1:$MY_PORT/dlock?dlock_wait=poll"
}
# poller_tries: the connections poller began (its tries)
poller_tries() {
	my "SELECT IFNULL(SUM(TOTAL_CONNECTIONS), 0) FROM information_schema.USER_STATISTICS WHERE USER = 'poller'"
}
poller_tries_past() { (($(poller_tries) >= $1)); }
# poller_peak SECONDS: the most connections of poller seen at once,
# sampled every 0.05 s for SECONDS by one client connection
poller_peak() {
	local i sql=''
	for ((i = 0; i < $1 * 20; i++)); do
		sql+="SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'poller'; DO SLEEP(0.05);"
	done
	my "$sql" | sort -n | tail -n 1
}

@test "dlock_wait=poll: waiters hold no connection between tries; each runs once, one at a time, after the holder" {
	poll_account
	pyhold p dlock:polled
	wait_until 5 test -e "$T/p.held"
	local i t0 t1 peak
	t0=$(poller_tries)
	section_waiters 8 "$PU" polled
	# past their first tries (0.1, 0.2, 0.4, 0.8 s apart): four each
	wait_until 30 poller_tries_past $((t0 + 32)) || fail "the waiters do not try: $(cat "$T/poll.err")"
	t0=$(poller_tries)
	peak=$(poller_peak 4)
	t1=$(poller_tries)
	echo "# 8 waiters: at most $peak connections at once; $((t1 - t0)) tries in 4 s" >&3
	for i in "${section_pids[@]}"; do
		alive "$i" || fail "a waiter ended while the lock was held: $(cat "$T/poll.err")"
	done
	((peak <= 3)) || fail "$peak of 8 waiters' connections at once: they hold them"
	((t1 - t0 >= 8)) || fail "only $((t1 - t0)) tries in 4 s: the waiters do not try"
	no_waiters || fail "a waiter waits in GET_LOCK"
	[[ ! -e $T/ran ]] || fail "a waiter ran while PyMySQL held the lock"
	touch "$T/p.release"
	sections_ran_once 8
	wait_until 5 no_conns poller || fail "connections of poller left"
	nothing_left dlock:polled
}

@test "dlock_wait=poll: -w gives up at its deadline (1, or -E) while the lock is held; a bad value is 64; the subcommands take the URL" {
	poll_account
	hold h -S "$U" K
	wait_ready h
	local t0
	t0=$(now_ms)
	run -1 --separate-stderr dlock -S "$PU" -w 1.5 K touch "$T/ran"
	(($(now_ms) - t0 >= 1500)) || fail "gave up after $(($(now_ms) - t0)) ms"
	(($(now_ms) - t0 < 5000)) || fail "gave up only after $(($(now_ms) - t0)) ms"
	assert_equal "$stderr" ''
	run -7 dlock -S "$PU" -w 0.3 -E 7 K touch "$T/ran"
	run -1 dlock -S "$PU" -n K touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
	no_waiters || fail "a GET_LOCK waits in the server"
	wait_until 5 no_conns poller || fail "connections of poller left"
	# the inspection commands take the URL as it is
	run -0 dlock status -S "$PU" K
	run -0 --separate-stderr dlock history -S "$PU" K
	finish h
	assert_equal "$bg_status" 0
	run -1 dlock release --force -S "$PU" K
	run -64 --separate-stderr dlock acquire -S "$PU" K
	[[ $stderr == *'MySQL cannot dlock acquire'* ]] || fail "stderr: $stderr"
	run -0 dlock -S "${U}?dlock_wait=server" -n K echo ran
	assert_output ran
	run -64 --separate-stderr dlock -S "${U}?dlock_wait=foo" -w 1 K touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	[[ $stderr == "dlock: --server: bad server URL"*'dlock_wait='*'server'*'poll'* ]] || fail "stderr: $stderr"
	[[ $stderr != *secret* ]] || fail "the password in: $stderr"
	[[ ! -e $T/ran ]] || fail "the command ran"
	nothing_left
}
