#!/usr/bin/env bats
# history.bats - every lock keeps its last events (acquired, released with
# the job's exit status and hold time, lease lost, broken) in a stream
# beside it, written by the lock's own scripts; --history N and the config
# file's history size it, 0 turns it off. On every engine that keeps a
# history (DLOCK_TEST_ENGINE): PostgreSQL refuses it (64), which each test
# checks before it skips.

load helpers
load engine_helpers
load redlock_helpers

setup_file() { engine_start history; }	# every test needs it
teardown_file() { engine_stop; }
setup() {
	engine_setup
	K2=$(name K2)
	needs history
}
teardown() { engine_teardown; }

# events SERVER [NAME]: the lock's events, oldest first, one JSON object
# per line: on Redis the stream's entries as XADD wrote them (the id as
# "id"); elsewhere what dlock history reads from the store, in the same
# fields (holder: host, pid, user, since, command, tab-separated)
events() {
	if ! on_redis; then
		dlock history -S "$U" -n 1000 --json "${2:-$K}" | jq -c '.events | reverse | .[]
			| {event, token, fence: (.fence | tostring), exit: (.exit | tostring),
			   held_ms: (.held_ms | tostring),
			   holder: "\(.host)\t\(.pid)\t\(.user)\t\(.since_ms)\t\(.command)"}'
		return
	fi
	"$PYTHON" - "$(sock "$1")" "{dlock:${2:-K}}:history" <<'EOF'
import json, sys
import redis
r = redis.Redis(unix_socket_path=sys.argv[1])
for id, fields in r.xrange(sys.argv[2]):
    e = {k.decode(): v.decode("utf-8", "replace") for k, v in fields.items()}
    e["id"] = id.decode()
    print(json.dumps(e))
EOF
}
# field N FIELD [NAME]: FIELD of the Nth event (1: oldest; -1: newest)
field() {
	local n=$1
	((n > 0)) || n=$(($(events "${3:-r}" | wc -l) + n + 1))
	events "${3:-r}" | sed -n "${n}p" | jq -r ".$2"
}
# same_token EVENT'S HOLDER: the event names this holder (ZooKeeper's
# events name it by the GUID of its contender node, -GUID-..., the
# token's first 32 digits)
same_token() {
	if [[ $ENGINE == zookeeper ]]; then
		[[ $1 == "${2:0:32}" ]] || fail "the event's token '$1' is not $2's GUID"
	else
		assert_equal "$1" "$2"
	fi
}
kinds() { events "${1:-r}" "${2:-$K}" | jq -r .event | tr '\n' ' '; }	# kinds [SERVER [NAME]]
# no_events NAME: dlock history finds none
no_events() {
	run -0 --separate-stderr dlock history -S "$U" --json "$1"
	assert_equal "$(hj 'd["events"]')" '[]'
}

@test "a job's acquisition and release: holder, fence, exit status, hold time" {
	run -0 dlock -S "$U" "$K" sh -c 'echo "$DLOCK_FENCE $DLOCK_TOKEN"; sleep 0.3'
	local fence=${output% *} token=${output#* }
	assert_equal "$(kinds)" 'acquired released '
	for n in 1 2; do
		same_token "$(field $n token)" "$token"
		assert_equal "$(field $n fence)" "$fence"
		# host, pid, user, since, command
		[[ $(field $n holder) =~ ^$(hostname)$'\t'[0-9]+$'\t'[^$'\t']+$'\t'[0-9]{13}$'\t'sh\ -c\ echo ]] ||
			fail "event $n holder: '$(field $n holder)'"
	done
	assert_equal "$(field 2 exit)" 0
	local held; held=$(field 2 held_ms)
	((held >= 300 && held < 5000)) || fail "held_ms $held for a 0.3 s job"
	run -3 dlock -S "$U" "$K" sh -c 'exit 3'
	assert_equal "$(kinds)" 'acquired released acquired released '
	assert_equal "$(field -1 exit)" 3
}

@test "the holder info keeps the fence too; since is when it was acquired" {
	hold h -S "$U" "$K"
	wait_ready h
	local token; token=$(job_var h DLOCK_TOKEN)
	if on_redis; then
		local info; info=$(holder_info r "$token")
		[[ $info == *$'\t'$(job_var h DLOCK_FENCE) ]] || fail "holder info '$info'"
	fi
	finish h
	# a waiter's since moves to the try that got the lock
	hold h2 -S "$U" "$K"
	wait_ready h2
	if on_redis; then
		start_bg w -S "$U" K sh -c 'redis-cli -s "$1" get "{dlock:K}:fence" | cut -f3-' sh "$(sock r)"
	else
		start_bg w -S "$U" "$K" true
	fi
	wait_until 5 waiting "$K" 1 || fail "w does not wait: $(cat "$T/w.err")"
	sleep 1.5
	local before; before=$(now_ms)
	finish h2
	reap w
	assert_equal "$bg_status" 0
	local since
	if on_redis; then
		since=$(cut -f4 "$T/w.out")
		((since >= before - 100)) || fail "since $since: before the release at $before"
	fi
	# as the store's history keeps it: w's acquisition, the newest
	since=$(events r | jq -r 'select(.event == "acquired") | .holder' | tail -n 1 | cut -f4)
	((since >= before - 100)) || fail "the history's since $since: before the release at $before"
}

@test "a lease lost while the job ran is recorded as lost, with its status" {
	hold h -S "$U" -t 1 "$K"
	wait_ready h
	# behind the holder's back, as a lapse would: the stream tells it was ours
	if on_redis; then
		rcli r del dlock:K '{dlock:K}:owner' >/dev/null
	else
		store_break "$K"
	fi
	reap h
	assert_equal "$bg_status" 75
	assert_equal "$(kinds)" 'acquired lost '
	assert_equal "$(field -1 exit)" 75
	same_token "$(field -1 token)" "$(job_var h DLOCK_TOKEN)"
}

@test "shared and --limit holders have their events too" {
	needs -s
	needs --limit
	run -0 dlock -S "$U" -s "$K" true
	run -0 dlock -S "$U" --limit 2 "$K2" true
	assert_equal "$(kinds)" 'acquired released '
	assert_equal "$(kinds r "$K2")" 'acquired released '
}

@test "--history N keeps the last N events; the stream lapses after a week" {
	local i
	for i in 1 2 3; do run -0 dlock -S "$U" --history 3 "$K" true; done
	# trimmed by whole stream nodes (XADD MAXLEN ~: cheaper than exact),
	# so the stream may hold more; dlock history shows the last N, as the
	# config file's history says
	echo 'history = 3' >"$T/conf"
	run -0 dlock history --config "$T/conf" -S "$U" -n 100 --json "$K"
	assert_equal "$(hj '" ".join(e["event"] for e in d["events"])')" 'released acquired released'
	run -0 dlock history -S "$U" -n 100 --json "$K"
	# (other stores trim exactly, or about as Redis)
	if on_redis; then
		assert_equal "$(hj 'len(d["events"])')" 6
	else
		assert_equal "$(hj 'len(d["events"]) >= 3')" true
	fi
	# the stream's own trimming and lapse: Redis's
	on_redis || return 0
	for i in $(seq 4 150); do run -0 dlock -S "$U" --history 3 K true; done
	(($(rcli r xlen '{dlock:K}:history') <= 3 + 100)) ||
		fail "not trimmed: $(rcli r xlen '{dlock:K}:history') events"
	local ms; ms=$(rcli r pttl '{dlock:K}:history')
	((ms > 604800000 - 60000 && ms <= 604800000)) || fail "PTTL $ms, not a week"
}

@test "--history 0 writes no event at all" {
	local s=-s
	! refused -s -n "$(name probe)" true || s=-x
	if_redis rcli r config resetstat >/dev/null	# the probe's XADD
	run -0 dlock -S "$U" --history 0 "$K" true
	run -3 dlock -S "$U" --history 0 "$s" "$K" sh -c 'exit 3'
	if on_redis; then
		key_gone r '{dlock:K}:history'
		[[ $(rcli r info commandstats) != *cmdstat_xadd* ]] || fail "an XADD was sent"
	fi
	no_events "$K"
}

@test "config file: history = N sizes it, 0 turns it off; --history beats it" {
	local i
	echo 'history = 2' >"$T/conf"
	for i in 1 2; do run -0 dlock --config "$T/conf" -S "$U" "$K" true; done
	run -0 dlock history --config "$T/conf" -S "$U" --json "$K"
	assert_equal "$(hj 'len(d["events"])')" 2
	run -0 dlock --config "$T/conf" -S "$U" --history 10 "$K" true
	echo 'history = 10' >"$T/conf"
	run -0 dlock history --config "$T/conf" -S "$U" --json "$K"
	# Redis trims approximately (all 6 kept); other stores to the 2
	# (then 2 more) or about
	if on_redis; then
		assert_equal "$(hj 'len(d["events"])')" 6
	else
		assert_equal "$(hj '4 <= len(d["events"]) <= 6')" true
	fi
	echo 'history = 2' >"$T/conf"
	echo 'history = 0' >"$T/conf"
	run -0 dlock --config "$T/conf" -S "$U" "$K2" true
	if_redis key_gone r '{dlock:K2}:history'
	no_events "$K2"
	echo 'history = lots' >"$T/conf"
	run -64 --separate-stderr dlock --config "$T/conf" -S "$U" "$K" true
	assert_equal "$stderr" "dlock: $T/conf:1: bad history 'lots' (0 to 1000000)"
}

@test "RedLock: an acquisition given back on a minority leaves no event" {
	redis_only RedLock
	start_servers 3
	rcli r2 set dlock:K someone-else px 10000 >/dev/null
	rcli r3 set dlock:K someone-else px 10000 >/dev/null
	run -1 dlk "${SRV[@]}" -n K true	# r1 grants, r2 and r3 refuse
	key_gone r1 dlock:K
	assert_equal "$(kinds r1)" ''
	rcli r2 del dlock:K >/dev/null
	run -0 dlk "${SRV[@]}" K true	# r1 and r2 grant; r3 never did
	assert_equal "$(kinds r1)" 'acquired released '
	assert_equal "$(kinds r2)" 'acquired released '
	assert_equal "$(kinds r3)" ''
}

# ---- dlock history ------------------------------------------------------

hj() { echo "$output" | "$PYTHON" -c 'import json, sys
d = json.loads(sys.stdin.buffer.read().decode("utf-8"))
v = eval(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v))' "$1"; }

@test "dlock history: newest first, after a success and a failure" {
	run -0 dlock -S "$U" "$K" true
	run -3 dlock -S "$U" "$K" sh -c 'sleep 0.3; exit 3'
	run -0 dlock history -S "$U" "$K"
	assert_equal "${#lines[@]}" 5
	assert_line -n 0 --regexp '^WHEN +EVENT +HOST +PID +USER +FENCE +EXIT +HELD +COMMAND$'
	assert_line -n 1 --regexp "^[0-9.]+s ago +released +$(hostname) +[0-9]+ +[a-z0-9]+ +[0-9]+ +3 +0\.[3-9]s +sh -c sleep 0.3; exit 3$"
	assert_line -n 2 --regexp "^[0-9.]+s ago +acquired +$(hostname) .* +- +- +sh -c sleep 0.3; exit 3$"
	assert_line -n 3 --regexp ' released .* 0 +0\.[0-9]s +true$'
	assert_line -n 4 --regexp ' acquired .* true$'
	local acquired_fence
	run -0 dlock history -S "$U" -n 2 --json "$K"
	acquired_fence=$(hj 'd["events"][1]["fence"]')
	run -0 dlock history -S "$U" -n 1 --json "$K"
	assert_equal "$(hj 'len(d["events"])')" 1
	assert_equal "$(hj 'd["events"][0]["event"]')" released
	assert_equal "$(hj 'd["events"][0]["exit"]')" 3
	assert_equal "$(hj 'd["events"][0]["held_ms"] >= 300')" true
	assert_equal "$(hj 'd["events"][0]["command"]')" 'sh -c sleep 0.3; exit 3'
	if_redis assert_equal "$(hj 'd["events"][0]["fence"]')" "$(counter r)"
	assert_equal "$(hj 'd["events"][0]["fence"]')" "$acquired_fence"
	[[ $acquired_fence =~ ^[0-9]+$ ]] || fail "fence '$acquired_fence'"
	assert_equal "$(hj 'd["key"]')" "$(key_of "$K")"
	run -0 dlock history -S "$U" -q "$K"
	assert_output ''
}

@test "dlock history: a lost lease, and nothing with --history 0" {
	hold h -S "$U" -t 1 "$K"
	wait_ready h
	store_break "$K"
	reap h
	assert_equal "$bg_status" 75
	run -0 dlock history -S "$U" -n 1 "$K"
	assert_line -n 1 --regexp '^[0-9.]+s ago +lost +.* +75 +[0-9.]+s +'
	run -0 dlock -S "$U" --history 0 "$K2" true
	run -0 dlock history -S "$U" "$K2"
	assert_output "$K2: no events"
	run -0 dlock history -S "$U" --json "$K2"
	assert_equal "$(hj 'd["events"]')" '[]'
}

@test "dlock history: capped at N, newest kept" {
	local i
	for i in 1 2 3 4; do run -0 dlock -S "$U" --history 3 "$K" sh -c "exit 0; $i"; done
	echo 'history = 3' >"$T/conf"
	run -0 dlock history --config "$T/conf" -S "$U" -n 100 "$K"
	assert_equal "${#lines[@]}" 4
	assert_line -n 1 --regexp ' released .*; 4$'
	assert_line -n 3 --regexp ' released .*; 3$'
}

@test "dlock history: RedLock, merged from the servers that answer" {
	redis_only RedLock
	start_servers 3
	run -0 dlk "${SRV[@]}" K true
	kill_server r3
	run -4 dlk "${SRV[@]}" K sh -c 'exit 4'	# r3 misses these
	run -0 --separate-stderr dlock history "${SRV[@]}" K
	[[ $stderr =~ ^"dlock: K: $(sock_url r3): "(connection refused|no such file or directory)$ ]] ||
		fail "stderr: $stderr"
	assert_equal "${#lines[@]}" 5	# each event once
	assert_line -n 0 --regexp ' SERVERS +COMMAND$'
	assert_line -n 1 --regexp ' released .* 4 .* 2/3 +sh -c exit 4$'
	assert_line -n 3 --regexp ' released .* 0 .* 2/3 +true$'
	restart_server r3
	run -0 dlock history "${SRV[@]}" --json K
	assert_equal "$(hj '[e["servers"] for e in d["events"]]')" '[2, 2, 2, 2]'
	assert_equal "$(hj 'd["servers_answered"]')" 3
	kill_server r1
	kill_server r2
	kill_server r3
	run -69 --separate-stderr dlock history "${SRV[@]}" K
}
