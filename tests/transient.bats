#!/usr/bin/env bats
# transient.bats - a server that answers LOADING, BUSY, READONLY, MASTERDOWN
# or TRYAGAIN is waited out as an unreachable one is (exit 69 only when the
# wait runs out), and keeps its own words in the message. READONLY, BUSY and
# MASTERDOWN come from real servers; LOADING, TRYAGAIN and Redis 6's
# wrapping of errors met in a script from tests/fake_redis.py, a relay to a
# real server that answers as a server in that state would.

load helpers

# start_fake NAME SERVER [fake_redis.py OPTIONS...]: a relay to server
# SERVER's unix socket; its URL is $(fake_url NAME)
start_fake() {
	local name=$1 up=$2; shift 2
	"$PYTHON" "$BATS_TEST_DIRNAME/fake_redis.py" "$(sock "$up")" "$@" \
		>"$T/$name.fake" 2>"$T/$name.fake.err" </dev/null 3>&- &
	track $!
	wait_until 5 grep -q '^ready ' "$T/$name.fake" ||
		fail "fake_redis $name did not start: $(cat "$T/$name.fake.err")"
}
fake_url() { echo "redis://127.0.0.1:$(sed -n 's/^ready //p' "$T/$1.fake")"; }

# answered NAME CODE: how many error replies CODE server NAME has given
answered() {
	local n
	n=$(rcli "$1" info errorstats | tr -d '\r' | sed -n "s/^errorstat_$2:count=//p")
	echo "${n:-0}"
}
answered_some() { (($(answered "$1" "$2") > 0)); }
busy() { [[ $(rcli "$1" ping 2>&1) == BUSY* ]]; }
link_up() { rcli "$1" info replication | tr -d '\r' | grep -qx 'master_link_status:up'; }

# still_waiting ID: background dlock ID still waits and has not run its
# command (touch $T/ID.ran)
still_waiting() {
	[[ ! -e $T/$1.ran ]] || fail "the command ran before the state passed"
	alive "$(<"$T/$1.dlock")" || fail "dlock gave up: $(cat "$T/$1.err")"
}

# bounded_69 URL WORDS MIN_MS: without -w, dlock tries for --connect-budget
# (the suite's 1 s, or dlock's 10 s after no_suite_budget), then exits 69
# with one line, the server's words in it, no sooner than MIN_MS.
bounded_69() {
	local url=$1 words=$2 min_ms=$3 t0 ms
	t0=$(now_ms)
	run -69 --separate-stderr timeout -k 2 20 "$DLOCK" -S "$url" K touch "$T/ran"
	ms=$(($(now_ms) - t0))
	((${#stderr_lines[@]} == 1)) || fail "want one stderr line: $stderr"
	[[ ${stderr_lines[0]} == "dlock: K: $url: $words"* ]] || fail "stderr: $stderr"
	# the pauses between the tries: 0.1, 0.2, 0.4, 0.8, 1.6, 3.2 s each
	# within half of that either way, the last one in the second half of
	# what is left of the budget: at least half of it in all
	((ms >= min_ms)) || fail "gave up after $ms ms"
	[[ ! -e $T/ran ]] || fail "the command ran"
}

@test "READONLY: a replica promoted while dlock -w waits gets the lock" {
	start_redis_tcp m
	start_redis r --replicaof 127.0.0.1 "$(<"$T/m/port")"
	wait_until 10 link_up r || fail "the replica did not connect to its master"
	start_bg w -S "$(sock_url r)" -w 10 K touch "$T/w.ran"
	wait_until 5 answered_some r READONLY || fail "no READONLY: $(cat "$T/w.err")"
	still_waiting w
	rcli r replicaof no one >/dev/null
	reap w 12
	assert_equal "$bg_status" 0
	[[ -e $T/w.ran ]] || fail "the command did not run"
	key_gone r dlock:K
	key_exists r '{dlock:K}:fence'
}

@test "READONLY without -w: the bounded tries, then 69 in the server's words" {
	start_redis_tcp m
	start_redis r --replicaof 127.0.0.1 "$(<"$T/m/port")"
	bounded_69 "$(sock_url r)" "READONLY You can't write against a read only replica." 500
	(($(answered r READONLY) >= 6)) || fail "$(answered r READONLY) READONLY replies, want 6 tries"
	assert_equal "$(all_keys r)" ''
}

@test "BUSY: a long script killed while dlock -w waits: dlock gets the lock" {
	start_redis r --busy-reply-threshold 100
	redis-cli -s "$(sock r)" eval 'local i = 0 while true do i = i + 1 end' 0 \
		>"$T/eval.out" 2>&1 </dev/null 3>&- &
	track $!
	wait_until 5 busy r || fail "the script did not make the server busy"
	# a relay that only notes what passes: the server cannot be asked
	# anything while it is busy
	start_fake f r --log "$T/f.log"
	start_bg w -S "$(fake_url f)" -w 10 K touch "$T/w.ran"
	wait_until 5 grep -q -- '-> -BUSY' "$T/f.log" || fail "no BUSY: $(cat "$T/w.err")"
	still_waiting w
	rcli r script kill >/dev/null
	reap w 12
	assert_equal "$bg_status" 0
	[[ -e $T/w.ran ]] || fail "the command did not run"
	key_gone r dlock:K
}

@test "LOADING: dlock -w gets the lock once the server has loaded" {
	start_redis r
	echo 'LOADING Redis is loading the dataset in memory' >"$T/state"
	start_fake f r --state "$T/state" --log "$T/f.log"
	start_bg w -S "$(fake_url f)" -w 10 K touch "$T/w.ran"
	wait_until 5 grep -q -- '-> -LOADING' "$T/f.log" || fail "no LOADING: $(cat "$T/w.err")"
	still_waiting w
	rm "$T/state"
	reap w 12
	assert_equal "$bg_status" 0
	[[ -e $T/w.ran ]] || fail "the command did not run"
	key_gone r dlock:K
	key_exists r '{dlock:K}:fence'
}

@test "LOADING without -w: tries for --connect-budget, then 69 in the server's words" {
	start_redis r
	echo 'LOADING Redis is loading the dataset in memory' >"$T/state"
	start_fake f r --state "$T/state" --log "$T/f.log"
	no_suite_budget
	bounded_69 "$(fake_url f)" 'LOADING Redis is loading the dataset in memory' 5000
	# 6 to 12 tries in 10 s (the acquire script's short call: 3 keys), each
	# followed by giving back whatever a try may have taken (the release's
	# full: 11)
	local tries
	tries=$(grep -c '^EVALSHA 3 -> -LOADING' "$T/f.log")
	((tries >= 6 && tries <= 12)) || fail "$tries tries"
	assert_equal "$(grep -c '^EVALSHA 11 -> -LOADING' "$T/f.log")" "$tries"
	assert_equal "$(all_keys r)" ''
}

@test "LOADING with -w 1: retried for 1 s, then 69" {
	start_redis r
	echo 'LOADING Redis is loading the dataset in memory' >"$T/state"
	start_fake f r --state "$T/state"
	t0=$(now_ms)
	run -69 --separate-stderr dlock -S "$(fake_url f)" -w 1 K touch "$T/ran"
	(($(now_ms) - t0 >= 1000)) || fail "gave up before 1 s"
	assert_equal "${stderr_lines[-1]}" "dlock: K: $(fake_url f): LOADING Redis is loading the dataset in memory"
	[[ ! -e $T/ran ]]
}

@test "MASTERDOWN: a replica cut off from its master is a wait, then 69" {
	start_redis r	# answers PING until it is a replica
	rcli r config set replica-serve-stale-data no >/dev/null
	rcli r replicaof 127.0.0.1 "$(free_port)" >/dev/null
	run -69 --separate-stderr dlock -S "$(sock_url r)" -n K touch "$T/ran"
	assert_equal "$stderr" "dlock: K: $(sock_url r): MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
	[[ ! -e $T/ran ]]
}

@test "TRYAGAIN, MASTERDOWN, CLUSTERDOWN, Redis 6's wrapped READONLY: 69; other errors: 70" {
	local state first
	first=$(awk '!NF { print NR + 1; exit }' "$BATS_TEST_DIRNAME/../src/redis/lua/acquire.lua")
	start_redis r
	start_fake f r --state "$T/state"
	for state in \
		'TRYAGAIN Multiple keys request during rehashing of slot' \
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'." \
		"ERR Error running script (call to f_8d42fa98b62a4e97916f0ad588693ad87210f411): @user_script:1: @user_script: 1: -READONLY You can't write against a read only replica." \
		'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.' \
		"CLUSTERDOWN The cluster is down"
	do
		echo "$state" >"$T/state"
		run -69 --separate-stderr dlock -S "$(fake_url f)" -n K touch "$T/ran"
		case $state in
		ERR*)	# unwrapped: the error, and the script named, not its SHA-1;
			# the body's line 1 is the line after the header's blank one
			assert_equal "$stderr" "dlock: K: $(fake_url f): READONLY You can't write against a read only replica. (acquire script, line $first)" ;;
		*)	assert_equal "$stderr" "dlock: K: $(fake_url f): $state" ;;
		esac
	done
	for state in 'ERR something else' 'BUSYKEY Target key name already exists.' \
		'ERR Error running script (call to f_x): @user_script:1: READONLYISH'
	do
		echo "$state" >"$T/state"
		run -70 --separate-stderr dlock -S "$(fake_url f)" -n K touch "$T/ran"
		assert_equal "$stderr" "dlock: K: $(fake_url f): $state"
	done
	[[ ! -e $T/ran ]]
	assert_equal "$(all_keys r)" ''
}
