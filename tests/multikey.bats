#!/usr/bin/env bats
# multikey.bats - several locks taken all or none (-k KEY -k KEY...): no
# key left behind when one is busy, no deadlock whatever order jobs name
# them in, one lease for all, DLOCK_KEYS, re-entry on a subset, RedLock.
# On every engine (DLOCK_TEST_ENGINE).

load helpers
load engine_helpers
load modes_helpers

setup_file() { engine_start; }
teardown_file() { engine_stop; }
setup() {
	engine_setup
	unset DLOCK_KEYS DLOCK_JOB
	A=$(name A) B=$(name B) C=$(name C)
}
teardown() { engine_teardown; }

@test "-n: one key held, nothing is taken, the command does not run" {
	hold h -S "$U" "$B"
	wait_ready h
	run -1 --separate-stderr dlock -S "$U" -n -k "$A" -k "$B" touch "$T/ran"
	assert_equal "$stderr" ''
	run -1 dlock -S "$U" -n -k "$B" -k "$A" touch "$T/ran"
	run -1 dlock -S "$U" -n -k "$C" -k "$B" -k "$A" touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
	if_redis key_gone r dlock:A
	if_redis key_gone r dlock:C
	if_redis assert_equal "$(rcli r get dlock:B)" "$(job_var h DLOCK_TOKEN)"
	store_free "$A"
	store_free "$C"
	store_has_token "$B" "$(job_var h DLOCK_TOKEN)" || fail "B's holder: $(store_token "$B")"
	finish h
	assert_equal "$bg_status" 0
	store_nothing_left
}

@test "-w: the deadline gives back the keys taken, not before it" {
	hold h -S "$U" "$B"
	wait_ready h
	local t0
	t0=$(now_ms)
	run -1 dlock -S "$U" -w 1 -k "$A" -k "$B" touch "$T/ran"
	(($(now_ms) - t0 >= 1000)) || fail "gave up after $(($(now_ms) - t0)) ms"
	[[ ! -e $T/ran ]] || fail "the command ran"
	store_free "$A"
	finish h
	store_nothing_left
}

@test "the DLOCK_* variables: first key, every key as given, one token, the largest fence" {
	if on_redis; then
		rcli r set '{dlock:A}:fence' 5000000000000500 >/dev/null
		rcli r set '{dlock:B}:fence' 5000000000000100 >/dev/null
	fi
	hold h -S "$U" -k "$B" -k "$A"
	wait_ready h
	assert_equal "$(job_var h DLOCK_KEY)" "$(key_of "$B")"
	assert_equal "$(job_var h DLOCK_KEYS)" "$(key_of "$B") $(key_of "$A")"
	if_redis assert_equal "$(job_var h DLOCK_FENCE)" 5000000000000501
	local fa fb
	fa=$(store_fence "$A") fb=$(store_fence "$B")
	assert_equal "$(job_var h DLOCK_FENCE)" "$((fa > fb ? fa : fb))"
	local token
	token=$(job_var h DLOCK_TOKEN)
	# one token of 32 digits for all the keys, on every engine (one
	# key keeps its engine's own)
	[[ $token =~ ^[0-9a-f]{32}$ ]] || fail "not the keys' token: '$token'"
	if_redis assert_equal "$(rcli r get dlock:A)" "$token"
	if_redis assert_equal "$(rcli r get dlock:B)" "$token"
	store_has_token "$A" "$token" || fail "A's holder: $(store_token "$A")"
	store_has_token "$B" "$token" || fail "B's holder: $(store_token "$B")"
	finish h
	assert_equal "$bg_status" 0
	store_free "$A"
	store_free "$B"
	store_nothing_left
}

# A resource that remembers the last fence it accepted for a key refuses
# a smaller one: the -k job's one fence must not be above what the next
# holder of any one of its keys gets.
@test "-k: every key's fence only grows, whichever key gave the job its fence" {
	local f fa fb i
	if on_redis; then
		rcli r set '{dlock:B}:fence' 5000000000000100 >/dev/null
	else	# B's fence ahead of A's where each name counts its own
		for i in 1 2 3; do run -0 dlock -S "$U" "$B" true; done
	fi
	hold h -S "$U" -k "$A" -k "$B"
	wait_ready h
	f=$(job_var h DLOCK_FENCE)
	if on_redis; then
		assert_equal "$f" 5000000000000101	# B's, the larger
		# each key's counter is at it, and dlock status says it for each
		assert_equal "$(counter r A)" "$f"
		assert_equal "$(counter r B)" "$f"
		run -0 --separate-stderr dlock status -S "$U" --json A B
		assert_equal "$(grep -o '"fence":[0-9]*' <<<"$output" | sort -u)" "\"fence\":$f"
	fi
	fa=$(store_fence "$A") fb=$(store_fence "$B")
	((f >= fa && f >= fb)) || fail "the job's fence $f, the keys' $fa and $fb"
	finish h
	assert_equal "$bg_status" 0
	fa=$(run -0 dlock -S "$U" "$A" printenv DLOCK_FENCE; echo "$output")
	fb=$(run -0 dlock -S "$U" "$B" printenv DLOCK_FENCE; echo "$output")
	((fa > f && fb > f)) || fail "after the -k job's $f: A $fa, B $fb"
	# re-entered, all the keys or one: the job's fence, not the caller's
	if_redis rcli r set '{dlock:A}:fence' 6000000000000000 >/dev/null
	run -0 dlock -S "$U" -k "$A" -k "$B" sh -c '
		DLOCK_FENCE=5 "$DLOCK" -S "$1" -k "$3" -k "$2" printenv DLOCK_FENCE
		DLOCK_FENCE=5 "$DLOCK" -S "$1" "$3" printenv DLOCK_FENCE
		echo "$DLOCK_FENCE"' sh "$U" "$A" "$B"
	if on_redis; then
		assert_equal "${lines[*]}" "6000000000000001 6000000000000001 6000000000000001"
	else
		assert_equal "${lines[*]}" "${lines[2]} ${lines[2]} ${lines[2]}"
		((lines[2] > fa && lines[2] > fb)) || fail "the re-entered job's fence: ${lines[2]}"
	fi
}

@test "a waiter holds the first key, renewed past its TTL, while it waits for the next" {
	hold h -S "$U" "$B"
	wait_ready h
	start_bg w -S "$U" -t 1 -w 20 -k "$A" -k "$B" sh -c 'echo "$DLOCK_TOKEN" >"$1"' sh "$T/w.token"
	wait_until 5 store_held "$A" || fail "the waiter took no key"
	local token
	token=$(store_token "$A")
	sleep 2.5	# more than the TTL: renewed while waiting
	assert_equal "$(store_token "$A")" "$token"
	[[ ! -e $T/w.token ]] || fail "the command ran while B was held"
	finish h
	reap w
	assert_equal "$bg_status" 0
	# the command's token is A's holder's (ZooKeeper's nodes: its GUID)
	local got; got=$(<"$T/w.token")
	[[ $ENGINE != zookeeper ]] || got=${got:0:32}
	assert_equal "$got" "$token"
	store_free "$A"
	store_free "$B"
	store_nothing_left
}

# worker N: 10 sections under A and B, named in an order that alternates
# with N and with each section; each section fails if another is inside.
worker() {
	local n=$1 s keys
	for ((s = 0; s < 10; s++)); do
		if (((n + s) % 2)); then keys=(-k "$A" -k "$B"); else keys=(-k "$B" -k "$A"); fi
		"$DLOCK" -S "$U" -t 5 "${keys[@]}" sh -c \
			'mkdir "$1/in" || exit 99; sleep 0.01; rmdir "$1/in"' sh "$T" ||
			{ echo "worker $n section $s: $?" >>"$T/failed"; return 1; }
	done
}

@test "16 workers naming the keys in opposite orders all finish and never overlap" {
	local n pids=()
	for ((n = 0; n < 16; n++)); do
		worker "$n" 3>&- &
		pids+=($!)
		track $!
	done
	for n in "${pids[@]}"; do
		wait_until 120 dead "$n" || fail "deadlock? worker $n still runs after 120 s"
	done
	[[ ! -e $T/failed ]] || fail "$(cat "$T/failed")"
	store_free "$A"
	store_free "$B"
	store_nothing_left
}

@test "one key broken behind the holder's back: the job is signalled, exit 75" {
	hold h -S "$U" -t 1.5 -k "$A" -k "$B"
	wait_ready h
	store_break "$B"
	reap h 10
	assert_equal "$bg_status" 75
	assert_equal "$(cat "$T/h.sig")" TERM
	grep -q "lease lost: $B: " "$T/h.err" || fail "stderr: $(cat "$T/h.err")"
	store_free "$A"
	store_nothing_left
}

@test "re-entry on a subset: dlock A and dlock -k B run at once inside dlock -k A -k B" {
	run -0 dlock -S "$U" -k "$A" -k "$B" sh -c '
		"$DLOCK" -S "$1" -n "$2" sh -c "echo A \$DLOCK_TOKEN \$DLOCK_KEYS" &
		"$DLOCK" -S "$1" -n -k "$3" sh -c "echo B \$DLOCK_TOKEN \$DLOCK_KEYS" &
		wait
		"$DLOCK" -S "$1" -n -k "$3" -k "$2" sh -c "echo BA \$DLOCK_TOKEN"
		echo outer "$DLOCK_TOKEN"' sh "$U" "$A" "$B"
	assert_equal "${#lines[@]}" 4
	local token=${lines[3]#outer }
	assert_line "A $token $(key_of "$A") $(key_of "$B")"
	assert_line "B $token $(key_of "$A") $(key_of "$B")"
	assert_line "BA $token"
	store_free "$A"
	store_free "$B"
	store_nothing_left
}

@test "a nested dlock on held and other keys gives back what it took and exits 64" {
	# the outer job runs the nested dlock, then waits (h.release) while
	# the store is looked at
	start_bg h -S "$U" -k "$A" -k "$B" sh -c '
		"$DLOCK" -S "$1" -n -k "$3" -k "$4" touch "$2/ran"
		echo "nested $?" >"$2/h.nested"
		echo "$DLOCK_TOKEN" >"$2/h.token"
		: >"$2/h.ready"
		i=0
		while [ ! -e "$2/h.release" ] && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.05; done' \
		sh "$U" "$T" "$B" "$C"
	wait_until 10 test -e "$T/h.ready" || fail "no outer job: $(cat "$T/h.err")"
	assert_equal "$(<"$T/h.nested")" 'nested 64'
	if_redis key_gone r dlock:C
	store_free "$C"
	store_has_token "$B" "$(<"$T/h.token")" || fail "B not held by the outer: $(store_token "$B")"
	[[ ! -e $T/ran ]] || fail "the command ran"
	finish h
	assert_equal "$bg_status" 0
	store_nothing_left
}

@test "-s with -k: shared holders share every key, an exclusive one waits" {
	needs -s
	hold s1 -S "$U" -s -k "$A" -k "$B"
	wait_ready s1
	hold s2 -S "$U" -s -k "$B" -k "$A"
	wait_ready s2
	assert_equal "$(store_holders "$A")/$(store_holders "$B")" 2/2
	run -1 dlock -S "$U" -n -k "$A" -k "$C" touch "$T/ran"
	run -1 dlock -S "$U" -n "$B" touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "an exclusive holder ran"
	store_free "$C"
	finish s1
	assert_equal "$bg_status" 0
	finish s2
	assert_equal "$bg_status" 0
	run -0 dlock -S "$U" -n -k "$A" -k "$B" true
	store_nothing_left
}

@test "RedLock over 3 servers: every key on a majority, all or nothing" {
	redis_only RedLock
	servers 3
	hold h "${SRV[@]}" -k A -k B
	wait_ready h
	local token s
	token=$(job_var h DLOCK_TOKEN)
	for s in "${NAMES[@]}"; do
		assert_equal "$(rcli "$s" get dlock:A)" "$token"
		assert_equal "$(rcli "$s" get dlock:B)" "$token"
	done
	run -1 dlock "${SRV[@]}" -n -k C -k B touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
	for s in "${NAMES[@]}"; do key_gone "$s" dlock:C; done
	finish h
	assert_equal "$bg_status" 0
	for s in "${NAMES[@]}"; do
		key_gone "$s" dlock:A
		key_gone "$s" dlock:B
	done
}

@test "usage: a key twice, white space, subcommands: 64, nothing run" {
	run -64 --separate-stderr dlock -S "$U" -k "$A" -k "$A" touch "$T/ran"
	assert_equal "$stderr" "dlock: -k '$A' given twice"
	run -64 dlock -S "$U" -k "$A" -k 'B C' touch "$T/ran"
	run -64 --separate-stderr dlock status -S "$U" -k "$A"
	assert_equal "$stderr" "dlock: -k does not apply to 'dlock status'"
	run -64 dlock acquire -S "$U" -k "$A" -k "$B"
	[[ ! -e $T/ran ]] || fail "the command ran"
	store_free "$A"
	store_nothing_left
}

@test "-k and a KEY positional: the word is taken for the command, and said so" {
	run -127 --separate-stderr dlock -S "$U" -k "$A" -k "$B" "$C" touch "$T/ran"
	[[ $stderr == *"$C: command not found (with -k, every lock is a -k"* ]] ||
		fail "stderr: $stderr"
	store_free "$A"
	store_free "$C"
	store_nothing_left
}

@test "one -k is the KEY positional" {
	run -0 dlock -S "$U" -k "$A" sh -c 'echo "$DLOCK_KEY $DLOCK_KEYS"'
	assert_output "$(key_of "$A") $(key_of "$A")"
}

@test "RedLock: a paused minority server costs no key its renewal" {
	redis_only RedLock
	servers 3
	hold h "${SRV[@]}" -t 1.5 --node-timeout 0.3 -k A -k B
	wait_ready h
	kill -STOP "$(server_pid r3)"
	sleep 3	# twice the TTL: renewed on r1 and r2 alone, every key
	[[ ! -e $T/h.sig ]] || fail "the job was signalled: $(cat "$T/h.err")"
	kill -CONT "$(server_pid r3)"
	finish h
	assert_equal "$bg_status" 0
}

@test "a signal while waiting for the second key gives back the first: 128+N" {
	hold h -S "$U" "$B"
	wait_ready h
	start_bg w -S "$U" -k "$A" -k "$B" touch "$T/ran"
	wait_until 5 store_held "$A" || fail "the waiter took no key"
	kill -TERM "$(<"$T/w.dlock")"
	reap w
	assert_equal "$bg_status" 143
	store_free "$A"
	[[ ! -e $T/ran ]] || fail "the command ran"
	finish h
	store_nothing_left
}

@test "-k A -k B -- -c x: after --, -c is the command's name" {
	run -127 --separate-stderr dlock -S "$U" -k "$A" -k "$B" -- -c 'touch ran'
	[[ $stderr == "dlock: $A: -c: command not found"* ]] || fail "stderr: $stderr"
	run -0 dlock -S "$U" -k "$A" -k "$B" -- sh -c 'echo "$DLOCK_KEYS"'
	assert_output "$(key_of "$A") $(key_of "$B")"
}

@test "-F with -k: the command keeps dlock's PID and holds every key; a broken one is lost" {
	hold h -F -S "$U" -t 1 -k "$A" -k "$B"
	wait_ready h
	assert_equal "$(<"$T/h.pid")" "$(<"$T/h.dlock")"
	local token; token=$(job_var h DLOCK_TOKEN)
	if_redis assert_equal "$(rcli r get dlock:A)/$(rcli r get dlock:B)" "$token/$token"
	store_has_token "$A" "$token" || fail "A's holder: $(store_token "$A")"
	store_has_token "$B" "$token" || fail "B's holder: $(store_token "$B")"
	run -1 dlock -S "$U" -n "$B" true
	store_break "$B"
	reap h
	assert_equal "$bg_status" 11	# the command's own: its TERM trap
	assert_equal "$(cat "$T/h.sig")" TERM
	wait_until 5 store_free "$A" || fail "A not released after the command exited"
	store_nothing_left
}

@test "-F with -k: released when the command exits" {
	hold h -F -S "$U" -k "$A" -k "$B"
	wait_ready h
	finish h
	assert_equal "$bg_status" 0
	wait_until 5 store_free "$A" || fail "A not released"
	store_free "$B"
	store_nothing_left
}
