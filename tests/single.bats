#!/usr/bin/env bats
# single.bats - flock(1) parity on one Redis server: conflicts, waiting, the
# command's status, mutual exclusion, DLOCK_* variables, where the servers
# and prefix come from, unreachable servers, re-entry.

load helpers

setup() {
	common_setup
	start_redis r
	U=$(sock_url r)
}

elapsed_ms() { echo $(($(now_ms) - t0)); }

# side LOCK-KEY TAIL: a side key of the lock, as REDIS KEYS names it
side() {
	if [[ $1 =~ \{[^}]+\} ]]; then echo "$1$2"; else echo "{$1}$2"; fi
}

@test "-n exits 1 at once, silently, while the lock is held" {
	hold h -S "$U" K
	wait_ready h
	key_exists r dlock:K
	run -1 --separate-stderr dlock -S "$U" -n K touch "$T/ran"
	assert_output ''
	assert_equal "$stderr" ''
	[[ ! -e $T/ran ]] || fail "the command ran"
	assert_equal "$(rcli r get dlock:K)" "$(job_var h DLOCK_TOKEN)"
	finish h
	assert_equal "$bg_status" 0
}

@test "--verbose says the lock is held" {
	hold h -S "$U" K
	wait_ready h
	run -1 --separate-stderr dlock -S "$U" -n --verbose K true
	[[ ${stderr_lines[0]} == "dlock: K: lock is held"* ]] || fail "stderr: $stderr"
	finish h
}

@test "-E 42 is the status of a conflict" {
	hold h -S "$U" K
	wait_ready h
	run -42 dlock -S "$U" -n -E 42 K touch "$T/ran"
	run -42 dlock -S "$U" -w 0.2 --conflict-exit-code 42 K touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
	finish h
	assert_equal "$bg_status" 0
}

@test "-w 0 is -n" {
	hold h -S "$U" K
	wait_ready h
	run -1 --separate-stderr dlock -S "$U" -w 0 K touch "$T/ran"
	assert_equal "$stderr" ''
	[[ ! -e $T/ran ]] || fail "the command ran"
	finish h
}

@test "-w 0.5 gives up with 1, not before 0.5 s" {
	hold h -S "$U" K
	wait_ready h
	t0=$(now_ms)
	run -1 dlock -S "$U" -w 0.5 K touch "$T/ran"
	local ms; ms=$(elapsed_ms)
	((ms >= 500)) || fail "gave up after $ms ms"
	[[ ! -e $T/ran ]] || fail "the command ran"
	finish h
}

@test "-w 5 gets the lock when the holder ends" {
	hold h -S "$U" K
	wait_ready h
	# the holder's own connection for notices, 20 ms into its job
	wait_until 5 eval 'rcli r client list | grep -q cmd=brpop'
	local n0; n0=$(nclients r)
	start_bg w -S "$U" -w 5 K sh -c 'echo "$DLOCK_TOKEN" >"$1"' sh "$T/w.token"
	wait_until 5 more_clients r "$n0" || fail "the waiter never connected"
	[[ ! -e $T/w.token ]] || fail "the waiter ran while the lock was held"
	finish h
	assert_equal "$bg_status" 0
	reap w 6
	assert_equal "$bg_status" 0
	[[ $(<"$T/w.token") =~ ^[0-9a-f]{32}$ ]] || fail "waiter's token: $(<"$T/w.token")"
	key_gone r dlock:K
}

@test "a lock is released when the command exits" {
	run -0 dlock -S "$U" K sh -c 'redis-cli -s "$1" get "$DLOCK_KEY"; echo "$DLOCK_TOKEN"' sh "$(sock r)"
	assert_equal "${lines[0]}" "${lines[1]}"
	key_gone r dlock:K
	run -0 dlock -S "$U" -n K true
}

@test "-c runs the string with \$SHELL" {
	run -0 env SHELL=/bin/bash "$DLOCK" -S "$U" K -c 'echo "bash:$BASH_VERSION"'
	assert_output --regexp '^bash:[0-9]'
	run -0 env -u SHELL "$DLOCK" -S "$U" K --command 'echo "x${BASH_VERSION}x"; exit 0'
	assert_output 'xx'	# /bin/sh is dash here
	key_gone r dlock:K
}

@test "the command's exit status passes through" {
	run -3 dlock -S "$U" K sh -c 'exit 3'
	run -0 dlock -S "$U" K true
	run -1 dlock -S "$U" K false
	run -255 dlock -S "$U" K sh -c 'exit 255'
	key_gone r dlock:K
}

@test "a command killed by signal N gives 128+N" {
	run -143 dlock -S "$U" K sh -c 'kill -TERM $$'
	run -137 dlock -S "$U" K sh -c 'kill -KILL $$'
	key_gone r dlock:K
}

@test "a command that is not executable gives 126 and touches no lock" {
	printf '#!/bin/sh\ntouch "%s"\n' "$T/ran" >"$T/noexec"
	chmod 644 "$T/noexec"
	run -126 --separate-stderr dlock -S "$U" K "$T/noexec"
	[[ $stderr == *noexec* ]] || fail "stderr does not name the command: $stderr"
	[[ ! -e $T/ran ]]
	assert_equal "$(all_keys r)" ''	# not even a fencing counter
}

@test "a command that does not exist gives 127 and touches no lock" {
	run -127 --separate-stderr dlock -S "$U" K "$T/no-such-command"
	[[ $stderr == *no-such-command* ]] || fail "stderr does not name the command: $stderr"
	run -127 dlock -S "$U" K no-such-command-in-path-dlock
	assert_equal "$(all_keys r)" ''
}

@test "mutual exclusion: 6 workers x 20 turns at a counter" {
	echo 0 >"$T/counter"
	cat >"$T/worker" <<'EOF'
#!/bin/sh
# worker T URL: 20 read-modify-write turns under the lock
i=0
while [ $i -lt 20 ]; do
	"$DLOCK" -S "$2" counter sh -c '
		echo "enter $$" >>"$1/log"
		n=$(cat "$1/counter")
		echo $((n + 1)) >"$1/counter"
		echo "leave $$" >>"$1/log"' sh "$1" || echo "dlock exit $?" >>"$1/failed"
	i=$((i + 1))
done
EOF
	chmod +x "$T/worker"
	local pids=() w pid
	for w in 1 2 3 4 5 6; do
		"$T/worker" "$T" "$U" 3>&- &
		pids+=($!)
		track $!
	done
	for pid in "${pids[@]}"; do
		wait_until 120 dead "$pid" || fail "workers still running after 120 s"
	done
	[[ ! -e $T/failed ]] || fail "$(cat "$T/failed")"
	assert_equal "$(<"$T/counter")" 120
	assert_equal "$(wc -l <"$T/log")" 240
	awk 'NR % 2 == 1 && $1 != "enter" { print NR ": " $0; bad = 1 }
	     NR % 2 == 0 && ($1 != "leave" || $2 != pid) { print NR ": " $0; bad = 1 }
	     { pid = $2 } END { exit bad }' "$T/log" || fail "critical sections overlap"
	key_gone r dlock:counter
}

@test "the command sees DLOCK_KEY, DLOCK_TOKEN and DLOCK_FENCE as stored" {
	run -0 dlock -S "$U" K sh -c '
		echo "$DLOCK_KEY"; echo "$DLOCK_TOKEN"; echo "$DLOCK_FENCE"
		redis-cli -s "$1" get "$DLOCK_KEY"
		redis-cli -s "$1" get "{$DLOCK_KEY}:fence" | cut -f1' sh "$(sock r)"
	assert_equal "${lines[0]}" dlock:K
	[[ ${lines[1]} =~ ^[0-9a-f]{32}$ ]] || fail "DLOCK_TOKEN=${lines[1]}"
	[[ ${lines[2]} =~ ^[0-9]+$ ]] || fail "DLOCK_FENCE=${lines[2]}"
	assert_equal "${lines[3]}" "${lines[1]}"	# the key holds the token
	assert_equal "${lines[4]}" "${lines[2]}"	# the fence is the counter
}

@test "DLOCK_FENCE strictly increases, DLOCK_TOKEN differs, over 5 runs" {
	local k prev=-1 fence tokens=()
	for k in 1 2 3 4 5; do
		run -0 dlock -S "$U" K sh -c 'echo "$DLOCK_FENCE $DLOCK_TOKEN"'
		fence=${output% *}
		[[ $fence =~ ^[0-9]+$ ]] || fail "DLOCK_FENCE=$fence"
		((fence > prev)) || fail "fence $fence after $prev"
		prev=$fence
		tokens+=("${output#* }")
	done
	assert_equal "$(printf '%s\n' "${tokens[@]}" | sort -u | wc -l)" 5
}

@test "--prefix, DLOCK_PREFIX and an empty prefix name the key" {
	run -0 dlock -S "$U" --prefix app: K sh -c 'echo "$DLOCK_KEY"; redis-cli -s "$1" exists app:K' sh "$(sock r)"
	assert_equal "$output" $'app:K\n1'
	run -0 env DLOCK_PREFIX=env: "$DLOCK" -S "$U" K sh -c 'echo "$DLOCK_KEY"; redis-cli -s "$1" exists env:K' sh "$(sock r)"
	assert_equal "$output" $'env:K\n1'
	run -0 env DLOCK_PREFIX=env: "$DLOCK" -S "$U" --prefix=flag: K sh -c 'echo "$DLOCK_KEY"' sh
	assert_output flag:K
	run -0 dlock -S "$U" --prefix '' K sh -c 'echo "$DLOCK_KEY"; redis-cli -s "$1" exists K' sh "$(sock r)"
	assert_equal "$output" $'K\n1'
	assert_equal "$(rcli r keys 'dlock:*')" ''
}

@test "an empty prefix shares a key with another client" {
	rcli r set shared other-client px 30000 >/dev/null
	run -1 dlock -S "$U" --prefix '' -n shared true
	assert_equal "$(rcli r get shared)" other-client
}

@test "DLOCK_SERVERS chooses the server" {
	start_redis b
	DLOCK_SERVERS=$(sock_url b) run -0 dlock K true
	key_exists b '{dlock:K}:fence'
	key_gone r '{dlock:K}:fence'
}

@test "the --config file gives servers, prefix and ttl" {
	printf '# a comment\n\nservers = %s\nprefix = cf:\nttl = 7\n' "$U" >"$T/conf"
	run -0 dlock --config "$T/conf" K sh -c 'echo "$DLOCK_KEY"; redis-cli -s "$1" pttl "$DLOCK_KEY"' sh "$(sock r)"
	assert_equal "${lines[0]}" cf:K
	((${lines[1]} > 5000 && ${lines[1]} <= 7000)) || fail "PTTL ${lines[1]}, want about 7000"
}

@test "the config file in \$XDG_CONFIG_HOME is read by default" {
	[[ ! -e /etc/dlock.conf ]] || skip_unless_strict "/etc/dlock.conf exists on this machine"
	mkdir -p "$XDG_CONFIG_HOME/dlock"
	printf 'servers = %s\nprefix = xdg:\n' "$U" >"$XDG_CONFIG_HOME/dlock/config"
	run -0 dlock K sh -c 'echo "$DLOCK_KEY"'
	assert_output xdg:K
	key_exists r '{xdg:K}:fence'
}

@test "-S beats DLOCK_SERVERS beats the config file" {
	start_redis a
	start_redis b
	start_redis c
	printf 'servers = %s\n' "$(sock_url c)" >"$T/conf"
	DLOCK_SERVERS=$(sock_url b) run -0 dlock --config "$T/conf" -S "$(sock_url a)" K1 true
	DLOCK_SERVERS=$(sock_url b) run -0 dlock --config "$T/conf" K2 true
	run -0 dlock --config "$T/conf" K3 true
	assert_equal "$(all_keys a)" $'{dlock:K1}:fence\n{dlock:K1}:history'
	assert_equal "$(all_keys b)" $'{dlock:K2}:fence\n{dlock:K2}:history'
	assert_equal "$(all_keys c)" $'{dlock:K3}:fence\n{dlock:K3}:history'
	# and the command line's --ttl beats the file's
	printf 'servers = %s\nttl = 7\n' "$U" >"$T/conf"
	run -0 dlock --config "$T/conf" -t 60 K sh -c 'redis-cli -s "$1" pttl dlock:K' sh "$(sock r)"
	((output > 50000)) || fail "PTTL $output, want about 60000"
}

@test "an unreachable server with -n: 69, naming the URL and the cause" {
	local port; port=$(free_port)
	run -69 --separate-stderr dlock -S "redis://127.0.0.1:$port" -n nightly touch "$T/ran"
	assert_output ''
	((${#stderr_lines[@]} == 1)) || fail "want one line: $stderr"
	assert_equal "${stderr_lines[0]}" "dlock: nightly: redis://127.0.0.1:$port: connection refused"
	[[ ! -e $T/ran ]]
}

@test "an unreachable server with -w 1: retried for 1 s, then 69" {
	local port ms; port=$(free_port)
	t0=$(now_ms)
	run -69 --separate-stderr dlock -S "redis://127.0.0.1:$port" -w 1 K touch "$T/ran"
	ms=$(elapsed_ms)
	((ms >= 1000)) || fail "gave up after $ms ms"
	[[ ${stderr_lines[-1]} == "dlock: K: redis://127.0.0.1:$port: connection refused" ]] ||
		fail "stderr: $stderr"
	[[ ! -e $T/ran ]]
}

@test "an unreachable server without -w: bounded retries, then 69" {
	local port; port=$(free_port)
	run -69 --separate-stderr timeout 20 "$DLOCK" -S "redis://127.0.0.1:$port" K touch "$T/ran"
	[[ ${stderr_lines[-1]} == "dlock: K: redis://127.0.0.1:$port: connection refused" ]] ||
		fail "stderr: $stderr"
	[[ ! -e $T/ran ]]
}

# A host name with two addresses, 127.0.0.1 and 127.0.0.2, in an /etc/hosts
# of the test's own (with_hosts). The server listens on 127.0.0.2 only;
# 127.0.0.1 refuses, or drops SYNs (a listener whose accept queue is full).
named_server() {
	need_hosts
	start_redis_tcp n --bind 127.0.0.2
	P=$(<"$T/n/port")
	printf '127.0.0.1 two.test\n127.0.0.2 two.test\n' >"$T/hosts"
	[[ $(with_hosts getent ahostsv4 two.test | awk '$2 == "STREAM" { print $1; exit }') == 127.0.0.1 ]] ||
		fail "two.test: $(with_hosts getent ahostsv4 two.test)"
}
refuses() { ! "$PYTHON" -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)' "$@" 2>/dev/null; }
# the job: "held" when server n has the lock with the job's token
held_on_n() { echo '[ "$(redis-cli -s "$1" get dlock:K)" = "$DLOCK_TOKEN" ] && echo held'; }

@test "a host name whose first address refuses: the next one is used" {
	named_server
	refuses 127.0.0.1 "$P" || skip "something listens on 127.0.0.1:$P"
	run -0 --separate-stderr with_hosts "$DLOCK" -S "redis://two.test:$P" K \
		sh -c "$(held_on_n)" sh "$(sock n)"
	assert_output held
	assert_equal "$stderr" ''
	key_gone n dlock:K
	# none answers: each address's own words, one line, 69
	rcli n shutdown nosave >/dev/null 2>&1 || true
	wait_until 5 dead "$(server_pid n)"
	run -69 --separate-stderr with_hosts "$DLOCK" -S "redis://two.test:$P" -n K true
	assert_equal "$stderr" "dlock: K: redis://two.test:$P: connection refused (127.0.0.1:$P, 127.0.0.2:$P)"
}

@test "a host name whose first address drops SYNs: the next one is used within --node-timeout" {
	named_server
	cat >"$T/silent.py" <<'EOF'
import socket, sys, time
l = socket.socket()
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(0)
held = []
while True:	# fill the accept queue: the next SYN goes unanswered
    c = socket.socket()
    c.settimeout(0.3)
    try:
        c.connect(("127.0.0.1", int(sys.argv[1])))
    except OSError:
        break
    held.append(c)
open(sys.argv[2], "w").close()
time.sleep(300)
EOF
	"$PYTHON" "$T/silent.py" "$P" "$T/silent.ready" 3>&- &
	track $!
	wait_until 10 test -e "$T/silent.ready" || skip "no listener on 127.0.0.1:$P"
	t0=$(now_ms)
	run -0 --separate-stderr with_hosts "$DLOCK" -S "redis://two.test:$P" -n K \
		sh -c "$(held_on_n)" sh "$(sock n)"
	assert_output held
	assert_equal "$stderr" ''
	echo "# acquired and released in $(elapsed_ms) ms" >&3
}

@test "an unexpected reply (WRONGTYPE) gives 70 and leaves no lock" {
	rcli r hset '{dlock:K}:fence' not a-counter >/dev/null
	run -70 --separate-stderr dlock -S "$U" -n K touch "$T/ran"
	[[ ${stderr_lines[0]} == "dlock: K: $U: "* ]] || fail "stderr: $stderr"
	[[ ! -e $T/ran ]] || fail "the command ran"
	key_gone r dlock:K
	# The script is named, not by its SHA-1, which tells a user nothing.
	[[ $stderr =~ "WRONGTYPE Operation against a key holding the wrong kind of value (acquire script, "(lib/[a-z]+\.lua )?"line "([0-9]+)")"$ ]] ||
		fail "stderr: $stderr"
	# the line counts from the top of the file that has it, included or not
	local file=${BASH_REMATCH[1]:-acquire.lua } line=${BASH_REMATCH[2]}
	[[ ! $stderr =~ [0-9a-f]{40} ]] || fail "a SHA-1 in: $stderr"
	run sed -n "${line}p" "$BATS_TEST_DIRNAME/../src/redis/lua/${file% }"
	local call="redis.call\\('[A-Z]+', (KEYS\\[2\\]|key)\\)"	# on the fence's key
	[[ $output =~ $call ]] || fail "${file}line $line is '$output'"
}

@test "re-entry: the inner dlock runs at once and the outer keeps the lock" {
	run -0 dlock -S "$U" K sh -c '
		"$DLOCK" -S "unix:$1" -n K sh -c "echo inner \$DLOCK_KEY \$DLOCK_TOKEN \$DLOCK_FENCE" || exit
		echo outer "$DLOCK_KEY" "$DLOCK_TOKEN" "$DLOCK_FENCE"
		redis-cli -s "$1" get dlock:K' sh "$(sock r)"
	assert_equal "${#lines[@]}" 3
	assert_equal "${lines[0]#inner }" "${lines[1]#outer }"	# same DLOCK_* values
	[[ ${lines[0]} == 'inner dlock:K '* ]] || fail "inner: ${lines[0]}"
	local token=${lines[1]#outer dlock:K }
	assert_equal "${lines[2]}" "${token% *}"	# still held by the outer one
	key_gone r dlock:K
}

# holder_fence [DLOCK-ARGS...]: the fence dlock status gives K's first holder
holder_fence() {
	run -0 --separate-stderr dlock status -S "$U" --json "$@" K
	"$PYTHON" -c 'import json, sys
print(json.load(sys.stdin)["locks"][0]["holders"][0]["fence"])' <<<"$output"
}

# The README's pipeline: DLOCK_KEY and DLOCK_TOKEN from dlock acquire, then
# dlock KEY CMD re-enters. The nested command must see the lock's own
# fence: not 0, nor a DLOCK_FENCE the caller set, which nothing checks.
@test "re-entry: the nested command gets the holder's fence from the server" {
	local token fence
	token=$(dlock acquire -S "$U" K)
	fence=$(holder_fence)
	[[ $fence =~ ^[0-9]+$ ]] || fail "no fence in status: $fence"
	run -0 env DLOCK_KEY=dlock:K DLOCK_TOKEN="$token" "$DLOCK" -S "$U" K printenv DLOCK_FENCE
	assert_output "$fence"
	run -0 env DLOCK_KEY=dlock:K DLOCK_TOKEN="$token" DLOCK_FENCE=99 "$DLOCK" -S "$U" K \
		printenv DLOCK_FENCE
	assert_output "$fence"
	run -0 dlock release -S "$U" --token "$token" K
	# inside a running dlock, shared too: the caller's value is replaced
	run -0 dlock -S "$U" -s K sh -c '
		DLOCK_FENCE=1 "$DLOCK" -S "unix:$1" -s -n K printenv DLOCK_FENCE
		echo "$DLOCK_FENCE"' sh "$(sock r)"
	assert_equal "${lines[0]}" "${lines[1]}"
	[[ ${lines[0]} =~ ^[1-9][0-9]+$ ]] || fail "fence: ${lines[0]}"
}

# The pipeline example's habit, inside a job: DLOCK_KEY and DLOCK_TOKEN
# name the running holder, whose dlock renews every TTL/3 (20 s here). A
# shorter extend cut the key's TTL to 1 s: the lock lapsed under the job.
@test "dlock extend in a job never shortens the lease a running dlock keeps" {
	start_bg h -S "$U" -t 60 K sh -c '
		"$DLOCK" extend -S "unix:$1" -t 1 K && touch "$2.short"
		while [ ! -e "$2.go" ]; do sleep 0.05; done
		"$DLOCK" extend -S "unix:$1" -t 120 K && touch "$2.long"
		while [ ! -e "$2.release" ]; do sleep 0.05; done' sh "$(sock r)" "$T/h"
	wait_until 10 test -e "$T/h.short" || fail "extend failed: $(cat "$T/h.err")"
	local ms; ms=$(rcli r pttl dlock:K)
	((ms > 50000)) || fail "PTTL $ms after extend -t 1"
	sleep 1.2	# past the 1 s it asked for
	run -1 dlock -S "$U" -n K touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "a second holder ran beside the job"
	# a longer one lengthens it
	touch "$T/h.go"
	wait_until 10 test -e "$T/h.long" || fail "extend failed: $(cat "$T/h.err")"
	ms=$(rcli r pttl dlock:K)
	((ms > 100000)) || fail "PTTL $ms after extend -t 120"
	finish h
	assert_equal "$bg_status" 0
}

@test "a stale DLOCK_TOKEN in the environment is ignored" {
	local stale=0123456789abcdef0123456789abcdef
	run -0 env DLOCK_KEY=dlock:K DLOCK_TOKEN=$stale "$DLOCK" -S "$U" -n K sh -c 'echo "$DLOCK_TOKEN"; redis-cli -s "$1" get dlock:K' sh "$(sock r)"
	[[ ${lines[0]} =~ ^[0-9a-f]{32}$ && ${lines[0]} != "$stale" ]] || fail "token: ${lines[0]}"
	assert_equal "${lines[1]}" "${lines[0]}"
	key_gone r dlock:K
	# nor does it let anyone into a lock held by someone else
	hold h -S "$U" K
	wait_ready h
	run -1 env DLOCK_KEY=dlock:K DLOCK_TOKEN=$stale "$DLOCK" -S "$U" -n K touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
	finish h
}

@test "the run form and a lock named like a subcommand" {
	run -0 dlock run -S "$U" K -- sh -c 'echo "$DLOCK_KEY"'
	assert_output dlock:K
	run -0 dlock run -S "$U" status -- sh -c 'echo "$DLOCK_KEY"'
	assert_output dlock:status
	run -0 env SHELL=/bin/sh "$DLOCK" run -S "$U" K -c 'echo "c:$DLOCK_KEY"'
	assert_output c:dlock:K
	assert_equal "$(rcli r keys 'dlock:*')" ''
}

@test "-o and -x are accepted" {
	run -0 dlock -S "$U" -o -x K true
	run -0 dlock -S "$U" --close --exclusive -e K true
}

# holder_user ENV...: the user the holder's info names, dlock run with ENV
# (and as ENV's setpriv prefix says), over TCP so any user can connect
holder_user() {
	local port; port=$(<"$T/t/port")
	run -0 --separate-stderr env "$@" "$DLOCK" -S "redis://127.0.0.1:$port" K \
		sh -c 'redis-cli -p "$1" get "{dlock:K}:fence"' sh "$port"
	cut -f5 <<<"$output"	# fence, token, host, pid, user: lib/holder.lua
}

@test "the holder's info names the user: USER, LOGNAME, root for uid 0, else uid N" {
	start_redis_tcp t
	if (($(id -u) == 0)); then
		# a system service without User= sets neither variable
		assert_equal "$(holder_user -u USER -u LOGNAME)" root
		# su to root keeps the caller's USER, but root runs
		assert_equal "$(holder_user USER=alice)" root
		command -v setpriv >/dev/null || skip_unless_strict "no setpriv(1)"
		# (no config file of ours: nobody may not read our temp dir)
		local as=(XDG_CONFIG_HOME=/nonexistent
			setpriv --reuid=65534 --regid=65534 --clear-groups)
		assert_equal "$(holder_user USER=nobody "${as[@]}")" nobody
		assert_equal "$(holder_user -u USER LOGNAME=cronuser "${as[@]}")" cronuser
		assert_equal "$(holder_user -u USER -u LOGNAME "${as[@]}")" "uid 65534"
		# a tab or newline in a name shifts no field (a space instead)
		assert_equal "$(holder_user USER=$'a\tb\nc' "${as[@]}")" "a b c"
	else
		assert_equal "$(holder_user USER=me)" me
		assert_equal "$(holder_user -u USER LOGNAME=cronuser)" cronuser
		assert_equal "$(holder_user -u USER -u LOGNAME)" "uid $(id -u)"
	fi
}

# A tab in a user name shifted the holder info's fields: the extend script
# then took the holder for one --min-hold keeps after its job, refused to
# renew, and the job was killed at the first renewal.
@test "a user name with a tab: the lease is renewed, status shows the name" {
	start_redis_tcp t
	local as=() url; url=$(tcp_url t)
	if (($(id -u) == 0)); then	# root is "root" whatever USER says
		command -v setpriv >/dev/null || skip_unless_strict "no setpriv(1)"
		as=(XDG_CONFIG_HOME=/nonexistent
			setpriv --reuid=65534 --regid=65534 --clear-groups)
	fi
	env USER=$'ann\tx\t1' "${as[@]}" "$DLOCK" -S "$url" -t 0.6 K sleep 2 \
		2>"$T/err" &
	local pid=$!
	track "$pid"
	wait_until 5 key_exists t dlock:K || fail "not acquired: $(cat "$T/err")"
	run -0 --separate-stderr dlock status -S "$url" --json K
	[[ $output == *'"user":"ann x 1"'* ]] || fail "status: $output"
	wait "$pid" || fail "exit $?: $(cat "$T/err")"
	run cat "$T/err"
	assert_output ""
}

# Issue 26 item 4: the side keys of "{app}:x" are "dlock:{app}:x:fence"
# and so on, the lock key of the lock "{app}:x:fence": taking "{app}:x"
# overwrote a running holder's key (it learned only at release, 75). Such
# a name is refused before anything is sent, and the lock "{app}:x" works.
@test "a hash-tagged name that is another lock's side key is refused (64), contacting nothing" {
	local name
	for name in '{app}:x:fence' '{app}:x:queue:info' '{app}:x:slots:1' '{app}:x:notice:ab12'; do
		run -64 --separate-stderr dlock -S "$U" -n "$name" touch "$T/ran"
		assert_equal "$stderr" "dlock: $name: bad lock name for Redis: its key 'dlock:$name' is the '${name#'{app}:x'}' key dlock keeps beside the lock 'dlock:{app}:x' (see REDIS KEYS in dlock(1))"
	done
	# -k: refused before any key is taken
	run -64 dlock -S "$U" -k a -k '{app}:x:fence' -k z touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
	assert_equal "$(all_keys r)" ''
	# the lock {app}:x keeps its side keys to itself; the other name
	# stays refused while it is held, in every subcommand
	hold h -S "$U" '{app}:x'
	wait_ready h
	key_exists r 'dlock:{app}:x:fence'
	run -64 dlock -S "$U" -w 1 '{app}:x:fence' true
	run -64 dlock -S "$U" acquire '{app}:x:fence'
	run -64 dlock -S "$U" release --force '{app}:x:fence'
	run -64 dlock -S "$U" status '{app}:x' '{app}:x:fence'
	run -64 dlock -S "$U" history '{app}:x:fence'
	finish h
	assert_equal "$bg_status" 0
	# names that only look alike are locks of their own
	run -0 dlock -S "$U" -n '{app}:x:fences' true
	run -0 dlock -S "$U" -n 'app:x:fence' true
}

# With --prefix '' plain names met the same way: the lock "{dlock:x}:fence"
# is the fencing counter of the lock "x" (default prefix), and the lock
# "{x}" would share every side key of the lock "x".
@test "--prefix '': a key that is a side key or all hash tag is refused; one with '}' and no tag too" {
	hold h -S "$U" x
	wait_ready h
	run -64 --separate-stderr dlock -S "$U" --prefix '' -n '{dlock:x}:fence' touch "$T/ran"
	assert_equal "$stderr" "dlock: {dlock:x}:fence: bad lock name for Redis: its key '{dlock:x}:fence' is the ':fence' key dlock keeps beside the lock 'dlock:x' (see REDIS KEYS in dlock(1))"
	run -64 --separate-stderr dlock -S "$U" --prefix '' -n '{dlock:x}' touch "$T/ran"
	assert_equal "$stderr" "dlock: {dlock:x}: bad lock name for Redis: its key '{dlock:x}' is all hash tag, so the keys dlock keeps beside it would be those of the lock 'dlock:x' (see REDIS KEYS in dlock(1))"
	# its side keys would hash to slot "a", not the lock's
	run -64 --separate-stderr dlock -S "$U" -n 'a}b' touch "$T/ran"
	assert_regex "$stderr" "^dlock: a\}b: bad lock name for Redis: its key 'dlock:a\}b' has a '\}' but no hash tag"
	[[ ! -e $T/ran ]] || fail "the command ran"
	finish h
	assert_equal "$bg_status" 0
	assert_equal "$(rcli r get '{dlock:x}:fence' | cut -f1)" "$(job_var h DLOCK_FENCE)"
}

# Every key dlock keeps beside a lock, as the server has it (exclusive,
# shared, --limit, --fair and exclusive waiters, the notice to a broken
# holder, the history), is refused as a lock key under any prefix: no lock can
# overwrite another's side key.
@test "every side key a lock makes, in every mode, is refused as a lock key" {
	local name lock key n round=0
	for name in K '{app}:x'; do
		round=$((round + 1))
		lock=dlock:$name
		: >"$T/seen"
		hold s$round -S "$U" -s "$name"
		wait_ready s$round
		start_bg x$round -S "$U" -w 30 "$name" true
		wait_until 5 key_exists r "$(side "$lock" :writers)" ||
			fail "$name: no exclusive waiter: $(cat "$T/x$round.err") $(all_keys r)"
		# behind the writer: a shared request waits too
		start_bg f$round -S "$U" --fair -s -w 30 "$name" true
		wait_until 5 key_exists r "$(side "$lock" :queue:info)" ||
			fail "$name: no fair waiter: $(cat "$T/f$round.err") $(all_keys r)"
		all_keys r >>"$T/seen"
		finish s$round
		reap x$round
		reap f$round
		# a holder that does not watch: its notice stays
		run -0 dlock -S "$U" acquire --limit 2 "$name"
		all_keys r >>"$T/seen"
		run -0 dlock -S "$U" release --force "$name"
		all_keys r >>"$T/seen"
		n=0
		for key in "$(side "$lock" :fence)" "$(side "$lock" :owner)" \
			"$(side "$lock" :mode)" "$(side "$lock" :slots)" \
			"$(side "$lock" :slots:0)" "$(side "$lock" :alive)" \
			"$(side "$lock" :writers)" "$(side "$lock" :queue)" \
			"$(side "$lock" :queue:info)" "$(side "$lock" :ticket)" \
			"$(side "$lock" :history)"; do
			grep -qxF -- "$key" "$T/seen" || fail "$key never seen: $(sort -u "$T/seen")"
		done
		grep -q -- "$(side "$lock" :notice:)" "$T/seen" || fail "no notice key: $(sort -u "$T/seen")"
		while read -r key; do
			[[ $key != "$lock" ]] || continue
			run -64 dlock -S "$U" --prefix '' -n "$key" touch "$T/ran"
			n=$((n + 1))
		done < <(sort -u "$T/seen")
		((n >= 12)) || fail "$n side keys"
		[[ ! -e $T/ran ]] || fail "the command ran"
		rcli r flushall >/dev/null
	done
}

# break_window's: b holds the lock; the waiters queue behind it (--fair)
window_hold() {
	hold b -S "$U" K
	wait_ready b
}
window_waiting() { queued "$1"; }
queued() { (($(rcli r zcard '{dlock:K}:queue') == $1)); }

# A lock broken right after its grant: the holder listens for the notice
# from a few ms into its job on (a job that ends sooner opens nothing), so
# it is told within that and a round trip of the next holder's start, not
# half a second later (main: the waiter started 450-490 ms before, 5 of 5).
# The holder breaks its own lock from its job (dlock release --force), a
# waiter queued behind it (--fair) takes it then.
@test "release --force right after the grant: the holder is told within a few ms of the next holder's start" {
	break_window "$U" K --fair
}
