#!/usr/bin/env bats
# status.bats - dlock status: free, held, shared, --limit, --fair waiters,
# another client's lock, keys that are no lock; every lock under the
# prefix; several servers that disagree; the exit status; JSON that a real
# parser reads, whatever bytes a command line holds. On every engine
# (DLOCK_TEST_ENGINE) but for what is Redis's own (foreign keys, SCAN,
# hash tags, its round trips, RedLock).

load helpers
load engine_helpers
load redlock_helpers
load modes_helpers	# start_monitor

setup_file() { engine_start; }
teardown_file() { engine_stop; }
setup() {
	engine_setup
	ME=$USER	# the user the holder info names
	[[ $(id -u) != 0 ]] || ME=root
	# what an engine adds to a holder's command in the table: its
	# session, lease or connection
	EXTRA=
	on_redis || EXTRA='( \[[^]]*\])?'
}
teardown() { engine_teardown; }

# pj EXPR: EXPR over the JSON document on stdin (as d), printed; fails
# when it is not one valid JSON document
pj() {
	"$PYTHON" -c 'import json, sys
d = json.loads(sys.stdin.buffer.read().decode("utf-8"))
v = eval(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v))' "$1"
}
js() { echo "$output" | pj "$1"; }	# js EXPR: over $output
status_json() { run -"$1" --separate-stderr dlock status --json "${@:2}"; }

@test "a free lock: 'free', exit 1; -q prints nothing" {
	run -1 dlock status -S "$U" "$K"
	assert_output "$K: free"
	run -1 dlock status -S "$U" -q "$K"
	assert_output ''
	status_json 1 -S "$U" "$K"
	assert_equal "$(js 'd["locks"][0]["state"]')" free
	assert_equal "$(js 'd["locks"][0]["holders"]')" '[]'
	assert_equal "$(js 'd["locks"][0]["key"]')" "$(key_of "$K")"
	# the fencing counter outlives the lock where the store keeps one
	# (Redis, MySQL's row)
	run -0 dlock -S "$U" "$K" printenv DLOCK_FENCE
	local f=$output
	run -1 dlock status -S "$U" "$K"
	if on_redis; then
		assert_output "K: free, fencing counter $(counter r)"
	else
		[[ $output == "$K: free" || $output == "$K: free, fencing counter $f" ]] ||
			fail "after a fence $f: $output"
	fi
}

@test "an exclusive holder: host, pid, user, command, since, TTL, fence" {
	local t0; t0=$(now_ms)
	hold h -S "$U" -t 20 "$K"
	wait_ready h
	local pid fence token ttl='(1?[0-9]|20)(\.[0-9])?s'
	pid=$(<"$T/h.dlock") fence=$(job_var h DLOCK_FENCE) token=$(job_var h DLOCK_TOKEN)
	[[ $ENGINE != postgres ]] || ttl=-	# the lease is the session
	run -0 dlock status -S "$U" "$K"
	assert_line -n 0 "$K: held, exclusive, fencing counter $fence"
	assert_line -n 1 --regexp '^  HOST +PID +USER +SINCE +TTL +FENCE +COMMAND$'
	assert_line -n 2 --regexp "^  $(hostname) +$pid +$ME +[0-9.]+s ago +$ttl +$fence +$T/job $T/h exit$EXTRA\$"
	status_json 0 -S "$U" "$K"
	assert_equal "$(js 'd["locks"][0]["state"]')" held
	assert_equal "$(js 'd["locks"][0]["mode"]')" exclusive
	assert_equal "$(js 'd["locks"][0]["fence"]')" "$fence"
	assert_equal "$(js 'len(d["locks"][0]["holders"])')" 1
	local h='d["locks"][0]["holders"][0]'
	if [[ $ENGINE == zookeeper ]]; then	# its contender node, named by the GUID
		[[ $(js "$h[\"token\"]") == "-${token:0:32}-"* ]] || fail "token: $(js "$h[\"token\"]")"
	else
		assert_equal "$(js "$h[\"token\"]")" "$token"
	fi
	assert_equal "$(js "$h[\"pid\"]")" "$pid"
	assert_equal "$(js "$h[\"host\"]")" "$(hostname)"
	assert_equal "$(js "$h[\"command\"]")" "$T/job $T/h exit"
	assert_equal "$(js "$h[\"fence\"]")" "$fence"
	assert_equal "$(js "$h[\"foreign\"]")" false
	if [[ $ENGINE == postgres ]]; then
		assert_equal "$(js "$h[\"ttl_ms\"]")" null
	else
		assert_equal "$(js "0 < $h[\"ttl_ms\"] <= 20000")" true
	fi
	# acquired after t0, before now (the server's clock and ours: 1 s slack)
	assert_equal "$(js "$t0 - 1000 <= $h[\"since_ms\"] <= $(now_ms) + 1000")" true
	finish h
}

@test "shared holders, --limit slots" {
	needs -s
	needs --limit
	local L; L=$(name L)
	hold a -S "$U" -s "$K"
	hold b -S "$U" -s "$K"
	hold c -S "$U" --limit 2 "$L"
	wait_ready a
	wait_ready b
	wait_ready c
	run -0 dlock status -S "$U" "$K" "$L"
	assert_line -n 0 --partial "$K: held, shared, 2 holders"
	assert_output --regexp "  $(hostname) +$(<"$T/a.dlock") "
	assert_output --regexp "  $(hostname) +$(<"$T/b.dlock") "
	assert_output --partial "$L: held, limit 2"
	assert_output --regexp 'FENCE +SLOT +COMMAND'
	status_json 0 -S "$U" "$K" "$L"
	local ta tb
	ta=$(job_var a DLOCK_TOKEN) tb=$(job_var b DLOCK_TOKEN)
	if [[ $ENGINE == zookeeper ]]; then	# their nodes, named by their GUIDs
		assert_equal "$(js 'sorted(h["token"][1:33] for h in d["locks"][0]["holders"])')" \
			"$("$PYTHON" -c 'import json, sys; print(json.dumps(sorted(sys.argv[1:])))' "${ta:0:32}" "${tb:0:32}")"
	else
		assert_equal "$(js 'sorted(h["token"] for h in d["locks"][0]["holders"])')" \
			"$("$PYTHON" -c 'import json, sys; print(json.dumps(sorted(sys.argv[1:])))' "$ta" "$tb")"
	fi
	assert_equal "$(js 'd["locks"][0]["mode"]')" shared
	assert_equal "$(js 'd["locks"][1]["mode"]')" limit
	assert_equal "$(js 'd["locks"][1]["limit"]')" 2
	assert_equal "$(js 'd["locks"][1]["holders"][0]["slot"]')" 1	# slots 1 to n on every engine
	finish a
	finish b
	finish c
}

@test "--fair waiters in queue order, with host, pid and since" {
	needs --fair
	hold h -S "$U" "$K"
	wait_ready h
	local n
	for n in 1 2 3; do
		start_bg "w$n" -S "$U" --fair "$K" true
		wait_until 5 is_queued "$n" || fail "waiter $n did not queue"
	done
	run -0 dlock status -S "$U" "$K"
	# (the other engines queue every waiter, --fair or not)
	if on_redis; then
		assert_line -n 0 --partial ', 3 waiting (3 in the --fair queue)'
		assert_line -n 3 '  waiting in the --fair queue, in its order:'
	else
		assert_line -n 0 --partial ', 3 waiting'
		assert_line -n 3 '  waiting, in queue order:'
	fi
	status_json 0 -S "$U" "$K"
	assert_equal "$(js '[w["position"] for w in d["locks"][0]["fair_queue"]]')" '[1, 2, 3]'
	assert_equal "$(js 'd["locks"][0]["waiting"]')" 3
	assert_equal "$(js '[w["pid"] for w in d["locks"][0]["fair_queue"]]')" \
		"[$(<"$T/w1.dlock"), $(<"$T/w2.dlock"), $(<"$T/w3.dlock")]"
	run -0 dlock status -S "$U" "$K"
	for n in 1 2 3; do
		assert_line -n $((4 + n)) --regexp "^  $n +$(hostname) +$(<"$T/w$n.dlock") +$ME +[0-9.]+s ago +true$"
	done
	finish h
	for n in 1 2 3; do reap "w$n"; done
	# the queue's holder info goes with the queue
	if_redis wait_until 3 key_gone r '{dlock:K}:queue:info' || fail "{dlock:K}:queue:info left"
	store_nothing_left
}
is_queued() {
	if on_redis; then [[ $(rcli r zcard '{dlock:K}:queue') == "$1" ]]; else waiting "$K" "$1"; fi
}

@test "a redis-py holder is a foreign holder: its value and TTL" {
	redis_only "redis-py's Lock (each engine's file has its own clients)"
	"$PYTHON" -c 'import redis, sys
r = redis.Redis(unix_socket_path=sys.argv[1])
assert r.lock("dlock:K", timeout=20).acquire(blocking=False)' "$(sock r)"
	local value; value=$(rcli r get dlock:K)
	run -0 dlock status -S "$U" K
	assert_line -n 0 'K: held, foreign'
	assert_line -n 2 --regexp "^  - +- +- +- +[0-9.]+s +- +\(another client: value '$value'\)$"
	status_json 0 -S "$U" K
	assert_equal "$(js 'd["locks"][0]["mode"]')" foreign
	assert_equal "$(js 'd["locks"][0]["holders"][0]["foreign"]')" true
	assert_equal "$(js 'd["locks"][0]["holders"][0]["token"]')" "$value"
	assert_equal "$(js 'd["locks"][0]["holders"][0]["host"]')" null
	assert_equal "$(js '0 < d["locks"][0]["holders"][0]["ttl_ms"] <= 20000')" true
}

@test "a key without TTL, a key of another type: reported, never changed" {
	redis_only "keys another client SETs"
	rcli r set dlock:S forever >/dev/null
	rcli r hset dlock:H 8743c2f2-ab:1 1 >/dev/null	# as Redisson's lock
	rcli r pexpire dlock:H 30000 >/dev/null
	run -0 dlock status -S "$U" S
	assert_line -n 0 'S: held, foreign, never expires (no TTL)'
	assert_line -n 2 --regexp "no TTL +- +\(another client: value 'forever'\)$"
	run -70 dlock status -S "$U" H
	assert_line -n 0 --regexp '^H: not a lock \(a hash, [0-9.]+s\): left alone$'
	status_json 70 -S "$U" S H
	assert_equal "$(js 'd["locks"][0]["expires"]')" false
	assert_equal "$(js 'd["locks"][0]["ttl_ms"]')" null
	assert_equal "$(js 'd["locks"][1]["state"]')" other
	assert_equal "$(js 'd["locks"][1]["type"]')" hash
	assert_equal "$(rcli r get dlock:S)" forever
	assert_equal "$(rcli r ttl dlock:S)" -1
	assert_equal "$(rcli r hget dlock:H 8743c2f2-ab:1)" 1
}

@test "every lock under the prefix: SCAN pages, one line each, side keys left out" {
	redis_only "SCAN (the other engines: the next test)"
	local n
	# 300 locks among 1300 keys: SCAN has pages to turn (COUNT 1000)
	for ((n = 0; n < 300; n++)); do
		printf 'SET dlock:lock%03d v%d PX 60000\r\n' "$n" "$n"
	done | rcli r --pipe >/dev/null
	for ((n = 0; n < 1000; n++)); do
		printf 'SET other:%d x\r\n' "$n"
	done | rcli r --pipe >/dev/null
	hold h -S "$U" mine
	wait_ready h
	run -0 dlock -S "$U" --history 5 done true	# side keys only: no line
	local scans0; scans0=$(scan_calls)
	run -0 dlock status -S "$U"
	assert_equal "${#lines[@]}" 302	# the header, 300 foreign, mine
	assert_line -n 0 --regexp '^LOCK +STATE +MODE +HOLDERS +TTL +SINCE +HOLDER$'
	assert_line -n 1 --regexp "^lock000 +held +foreign +1 +[0-9.ms]+ +- +another client, value 'v0'$"
	assert_line --regexp "^mine +held +exclusive +1 +[0-9.ms]+ +[0-9.]+s ago +$ME@$(hostname) pid $(<"$T/h.dlock") \($T/job $T/h exit\)$"
	refute_line --regexp '^(other|done) '
	(($(scan_calls) - scans0 >= 2)) || fail "one SCAN for $(rcli r dbsize) keys"
	[[ $(rcli r info commandstats) != *cmdstat_keys:* ]] || fail "KEYS was used"
	status_json 0 -S "$U"
	assert_equal "$(js 'len(d["locks"])')" 301
	finish h
}
scan_calls() { rcli r info commandstats | tr -d '\r' | sed -n 's/^cmdstat_scan:calls=\([0-9]*\),.*/\1/p'; }

# A terminal gives a CJK character two columns: the table counts columns,
# not characters, so what follows such a name lines up.
@test "every lock under the prefix: one line each, with its holder" {
	needs list
	local L; L=$(name L)
	hold h -S "$U" "$K"
	hold l -S "$U" "$L"
	wait_ready h
	wait_ready l
	run -0 dlock -S "$U" "$(name done)" true	# released: no line
	run -0 dlock status -S "$U"
	assert_line -n 0 --regexp '^LOCK +STATE +MODE +HOLDERS +TTL +SINCE +HOLDER$'
	assert_line --regexp "^$K +held +exclusive +1 +[-0-9.ms]+ +[0-9.]+s ago +$ME@$(hostname) pid $(<"$T/h.dlock") \($T/job $T/h exit\)$"
	assert_line --regexp "^$L +held +exclusive +1 "
	refute_line --regexp "^$(name done) "
	status_json 0 -S "$U"
	assert_equal "$(js "sorted(l['name'] for l in d['locks'] if l['name'] in ('$K', '$L'))")" "[\"$K\", \"$L\"]"
	finish h
	finish l
}

@test "the list aligns names of double-width characters by their display width" {
	needs list
	if on_redis; then
		rcli r set 'dlock:日本' x px 60000 >/dev/null	# 2 characters, 4 columns
		rcli r set 'dlock:abcd' x px 60000 >/dev/null	# 4 characters, 4 columns
		rcli r set 'dlock:é' x px 60000 >/dev/null	# 1 character (2 bytes), 1 column
	else	# holders of these names
		local n
		for n in 日本 abcd é; do hold "h${#n}" -S "$U" "$(name "$n")"; done
		for n in 日本 abcd é; do wait_ready "h${#n}"; done
	fi
	run -0 dlock status -S "$U"
	assert_line -n 0 --regexp '^LOCK +STATE '
	if on_redis; then
		assert_line --regexp '^abcd  held '
		assert_line --regexp '^日本  held '
		assert_line --regexp '^é     held '
		return
	fi
	# the server has other tests' names, maybe wider: STATE's column is
	# the same on the three lines, counted in display columns
	local p; p=$(name '')
	"$PYTHON" -c 'import sys, unicodedata
p, out = sys.argv[1], sys.argv[2]
cols, n = set(), 0
for line in out.splitlines():
    for name in ("abcd", "\u65e5\u672c", "\u00e9"):
        if line.startswith(p + name + " "):
            before = line[:line.index(" held ") + 1]
            cols.add(sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in before))
            n += 1
sys.exit(0 if n == 3 and len(cols) == 1 else 1)' "$p" "$output" || fail "not aligned: $output"
	assert_output --partial "${p}日本 "
}

@test "an empty prefix lists every key, not a lock's side keys" {
	redis_only "hash tags"
	hold h -S "$U" --prefix '' --fair K
	wait_ready h
	rcli r set '{app}:x' 1 px 60000 >/dev/null	# a hash tag of its own
	run -0 dlock -S "$U" --prefix '' '{app}:y' true
	run -0 dlock status -S "$U" --prefix ''
	assert_equal "${#lines[@]}" 3
	assert_line -n 1 --regexp '^K +held +exclusive '
	assert_line -n 2 --regexp '^\{app\}:x +held +foreign '
	finish h
}

@test "one round trip per server for a lock" {
	redis_only "its MONITOR"
	hold h -S "$U" K
	wait_ready h
	# the holder listens for notices (BRPOP) 0.5 s into its job: not
	# while the monitor counts
	wait_until 5 eval 'rcli r client list | grep -q "cmd=brpop"' ||
		fail "the holder does not listen for notices"
	run -0 dlock status -S "$U" K	# loads the script
	start_monitor r "$T/monitor"
	run -0 dlock status -S "$U" K
	sleep 0.2
	end_pids TERM "$MONITOR"
	# what the client sent, not what the script ran ([0 lua])
	run grep -c ' \[[0-9]* unix:' "$T/monitor"
	assert_output 1 || fail "$(cat "$T/monitor")"
	grep -q '\] "EVALSHA" ' "$T/monitor" || fail "$(cat "$T/monitor")"
	finish h
}

@test "exit status: 0 all held, 1 one free, 69 unreachable, 77 credentials" {
	hold h -S "$U" "$K"
	wait_ready h
	run -0 dlock status -S "$U" "$K"
	run -1 dlock status -S "$U" "$K" "$(name free)"
	if ! on_redis; then
		local N; N=$(unreachable_url)
		run -69 --separate-stderr dlock status -S "$N" "$K"
		# (the URL as dlock shows it: MySQL's without its password)
		[[ $stderr == "dlock: $K: ${N%%://*}://"* ]] || fail "stderr: $stderr"
		assert_equal "${#stderr_lines[@]}" 1
		finish h
		return	# (credentials: each engine's own file)
	fi
	run -69 --separate-stderr dlock status -S "unix:$T/nothing" K
	assert_equal "$stderr" "dlock: K: unix:$T/nothing: no such file or directory"
	run -69 --separate-stderr dlock status -S "unix:$T/nothing"
	start_redis p --requirepass s3cret
	run -77 --separate-stderr dlock status -S "redis://:wrong@127.0.0.1:0" K 2>/dev/null ||
		run -77 --separate-stderr env DLOCK_PASSWORD=wrong "$DLOCK" status -S "$(sock_url p)" K
	finish h
}

@test "JSON: any byte of a command line comes out as valid JSON" {
	local weird=$'tab\tnl\nesc\e[31mbell\a del\x7f \xff\xfe é ✓ "q" back\\slash'
	start_bg h -S "$U" "$K" "$T/job" "$T/h" exit "$weird"
	wait_ready h
	status_json 0 -S "$U" "$K"
	# tabs and newlines became spaces in the holder info; invalid UTF-8
	# bytes are U+FFFD; the rest is as given
	local want=$'tab nl esc\e[31mbell\a del\x7f \ufffd\ufffd é ✓ "q" back\\slash'
	assert_equal "$(js 'd["locks"][0]["holders"][0]["command"]')" "$T/job $T/h exit $want"
	echo "$output" | LC_ALL=C grep -q $'[\x01-\x1f]' && fail "raw control bytes in the JSON"
	# the table shows no control byte at all
	run -0 dlock status -S "$U" "$K"
	LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' <<<"$output" && fail "a control byte reached the terminal"
	assert_line -n 2 --partial $'exit tab nl esc?[31mbell? del? ?? é ✓ "q" back\\slash'
	finish h
}

@test "RedLock: what each server says, and whether a majority agrees" {
	redis_only RedLock
	start_servers 3
	hold h "${SRV[@]}" K
	wait_ready h
	local token; token=$(job_var h DLOCK_TOKEN)
	run -0 dlock status "${SRV[@]}" K
	assert_line -n 0 --regexp '^K: held, exclusive, fencing counter [0-9]+; 3 of 3 servers agree$'
	assert_line -n 2 --regexp "^  $(hostname) .* 3/3 +$T/job $T/h exit$"
	assert_line -n 3 --regexp '^  SERVER +SAYS$'
	# one server has another holder, one is down
	rcli r3 set dlock:K intruder px 60000 >/dev/null
	kill_server r2
	run -0 dlock status "${SRV[@]}" K
	assert_line -n 0 --regexp '^K: held, exclusive, fencing counter [0-9]+; 1 of 3 servers agree: no majority$'
	assert_output --regexp "$(sock_url r2) +(no such file|connection refused)"
	assert_output --regexp "$(sock_url r3) +held by another client, value 'intruder'"
	status_json 0 "${SRV[@]}" K
	assert_equal "$(js 'd["locks"][0]["majority_agrees"]')" false
	assert_equal "$(js '[s["says"] for s in d["locks"][0]["servers"]]')" '["held", "error", "held"]'
	assert_equal "$(js 'sorted(h["servers"] for h in d["locks"][0]["holders"])')" '[1, 1]'
	# a majority unreachable: unknown, 69
	kill_server r3
	run -69 --separate-stderr dlock status "${SRV[@]}" K
	finish h
}

@test "RedLock: free on a majority is free" {
	redis_only RedLock
	start_servers 3
	rcli r1 set dlock:K someone px 60000 >/dev/null
	run -1 dlock status "${SRV[@]}" K
	assert_line -n 0 'K: free; 2 of 3 servers agree'
	status_json 1 "${SRV[@]}" K
	assert_equal "$(js 'd["locks"][0]["state"]')" free
	assert_equal "$(js 'd["locks"][0]["servers_agreeing"]')" 2
}

# ---- --watch ----------------------------------------------------------------

blocks() { grep -c '^[0-9]\{4\}-[0-9][0-9]-[0-9][0-9] ' "$T/w.out"; }
has_blocks() { (($(blocks) >= $1)); }

@test "--watch on a pipe: a block when something changes, until SIGINT (0)" {
	start_bg w status --watch -S "$U" "$K"
	wait_until 5 has_blocks 1 || fail "no first block: $(cat "$T/w.out" "$T/w.err")"
	hold h -S "$U" "$K"
	wait_ready h
	wait_until 5 grep -q "^$K: held" "$T/w.out" || fail "no held block: $(cat "$T/w.out")"
	# times pass (SINCE, TTL), nothing else changes: no new block
	sleep 2.2
	assert_equal "$(blocks)" 2
	finish h
	wait_until 5 has_blocks 3 || fail "no free block: $(cat "$T/w.out")"
	kill -INT "$(<"$T/w.dlock")"
	reap w
	assert_equal "$bg_status" 0
	assert_equal "$(cat "$T/w.err")" ''
	run -0 grep -c "^$K: free" "$T/w.out"
	assert_output 2
	run -64 --separate-stderr dlock status --watch -q -S "$U" "$K"
	assert_equal "$stderr" "dlock: status: --watch and -q exclude each other: there would be nothing to watch"
	run -64 --separate-stderr dlock --watch -S "$U" "$K" true
	assert_equal "$stderr" "dlock: --watch does not apply to 'dlock run'"
}

# no_child PID: PID has no child left, not even a zombie
no_child() { [[ -z $(ps --ppid "$1" -o pid=) ]]; }
# urg_taken PID: no SIGURG pending for PID (it read it), or PID is gone
urg_taken() {
	local mask m
	mask=$(awk '/^(ShdPnd|SigPnd):/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 0
	for m in $mask; do (((0x$m & 0x400000) == 0)) || return 1; done
}

@test "--watch: a child it inherited that exits, or a SIGURG, does not end it" {
	local pid
	# sleep & exec dlock: the sleep's exit is a SIGCHLD to dlock
	# shellcheck disable=SC2016 # the inner shell expands them
	env --default-signal=INT,QUIT,HUP,TERM sh -c 'sleep 0.1 & exec "$0" "$@"' \
		"$DLOCK" status --watch -S "$U" "$K" >"$T/w.out" 2>"$T/w.err" </dev/null 3>&- &
	pid=$!
	echo "$pid" >"$T/w.dlock"
	track "$pid"
	wait_until 5 has_blocks 1 || fail "no first block: $(cat "$T/w.out" "$T/w.err")"
	wait_until 5 no_child "$pid" || fail "the sleep was not reaped"
	hold h -S "$U" "$K"
	wait_ready h
	wait_until 5 grep -q "^$K: held" "$T/w.out" || fail "the watch ended: $(cat "$T/w.out" "$T/w.err")"
	kill -URG "$pid"
	wait_until 5 urg_taken "$pid" || fail "SIGURG still pending"
	finish h
	wait_until 5 has_blocks 3 || fail "the watch ended: $(cat "$T/w.out" "$T/w.err")"
	kill -INT "$pid"
	reap w
	assert_equal "$bg_status" 0
	assert_equal "$(cat "$T/w.err")" ''
}

@test "--watch --json on a pipe: one document a change, a line each" {
	start_bg w status --watch --json -S "$U" "$K"
	wait_until 5 test -s "$T/w.out" || fail "nothing: $(cat "$T/w.err")"
	hold h -S "$U" "$K"
	wait_ready h
	wait_until 5 grep -q '"state":"held"' "$T/w.out" || fail "no held: $(cat "$T/w.out")"
	kill -TERM "$(<"$T/w.dlock")"
	reap w
	assert_equal "$bg_status" 0
	finish h
	while IFS= read -r line; do pj 'd["locks"][0]["state"]' <<<"$line"; done <"$T/w.out" >"$T/states"
	assert_equal "$(tr '\n' ' ' <"$T/states")" 'free held '
}

@test "--watch: a server that does not answer is a line of the block, and the watch goes on" {
	local N=unix:$T/nothing err='no such file or directory'
	on_redis || { N=$(unreachable_url) err="dlock: $K: ${N%%://*}://"; }
	start_bg w status --watch -S "$N" "$K"
	wait_until 10 grep -qF "$err" "$T/w.out" || fail "no error line: $(cat "$T/w.out" "$T/w.err")"
	kill -INT "$(<"$T/w.dlock")"
	reap w
	assert_equal "$bg_status" 0
	assert_equal "$(blocks)" 1
}
