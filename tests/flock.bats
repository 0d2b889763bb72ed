#!/usr/bin/env bats
# flock.bats - what a flock(1) user writes: flock's option spellings, its
# --verbose lines, the descriptor form ( dlock -n 9 || exit 1; ... ) 9>f
# with its keeper process, dlock -u FD and --fd N COMMAND.

load helpers
load postgres_helpers

setup() {
	common_setup
	start_redis r
	export DLOCK_SERVERS=$(sock_url r)
	F=$T/lockfile
	: >"$F"
	KEY=dlock:$F
	export T F
	GROUP=
}

# A caller started in a session of its own (setsid) is a process group:
# ended whole, pass or fail, so that no subshell (and no keeper for it)
# outlives the test.
teardown() {
	[[ -z $GROUP ]] || kill -KILL -- "-$GROUP" 2>/dev/null || true
	stop_all
	stop_postgres	# where a test started one
}

# ---- flock's spellings ---------------------------------------------------

@test "--nb and --nonblocking are -n, as in flock" {
	hold h K
	wait_ready h
	run -1 dlock --nb K touch "$T/ran"
	run -123 dlock --nonblocking --conflict-exit-code 123 K touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran beside the holder"
	finish h
	run -0 dlock --nb K touch "$T/ran"
	[[ -e $T/ran ]]
}

# ---- --verbose in flock's words -----------------------------------------

@test "--verbose prints flock's two lines on stdout, its others on stderr" {
	run -0 --separate-stderr dlock --verbose K echo the-command
	assert_regex "${lines[0]}" '^dlock: getting lock took [0-9]+\.[0-9]{6} seconds$'
	assert_equal "${lines[1]}" 'dlock: executing echo'
	assert_equal "${lines[2]}" 'the-command'
	((${#lines[@]} == 3)) || fail "stdout: $output"
	[[ $stderr != *took* && $stderr != *executing* ]] || fail "stderr: $stderr"
	# -c: the shell is what runs, as flock names it
	SHELL=/bin/sh run -0 --separate-stderr dlock --verbose K -c 'echo x'
	assert_equal "${lines[1]}" 'dlock: executing /bin/sh'
	# under another name, that name, as flock's program_invocation_short_name
	ln -s "$DLOCK" "$T/flock"
	run -0 --separate-stderr "$T/flock" --verbose K true
	assert_regex "${lines[0]}" '^flock: getting lock took [0-9]+\.[0-9]{6} seconds$'
	assert_equal "${lines[1]}" 'flock: executing true'
	# without --verbose, none
	run -0 --separate-stderr dlock K true
	assert_output ''
}

@test "--verbose: the time taken counts the wait" {
	hold h K
	wait_ready h
	start_bg w --verbose K true
	wait_until 5 grep -q 'held by' "$T/w.err" || fail "no wait line: $(cat "$T/w.err")"
	sleep 0.3	# a wait of at least that, to be measured
	finish h
	reap w
	assert_equal "$bg_status" 0
	local took
	took=$(sed -n 's/^dlock: getting lock took \([0-9.]*\) seconds$/\1/p' "$T/w.out")
	[[ -n $took ]] || fail "stdout: $(cat "$T/w.out")"
	awk -v t="$took" 'BEGIN { exit !(t >= 0.3) }' || fail "took $took s"
}

# ---- the descriptor form -------------------------------------------------

@test "( dlock -n 9 || exit 1; ... ) 9>file: held while the subshell runs, then released" {
	bash -c '( "$DLOCK" -n 9 || exit 1
		touch "$T/held"
		i=0; while [ ! -e "$T/release" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
		echo done >"$T/done" ) 9>"$F"' 3>&- &
	local sh=$!
	track $sh
	wait_until 5 test -e "$T/held" || fail "the subshell did not get the lock"
	key_exists r "$KEY" || fail "no key $KEY: $(all_keys r)"
	# a second holder: by the descriptor form, by the file's name, by --fd
	run -1 bash -c '( "$DLOCK" -n 9 ) 9>"$F"'
	run -1 dlock -n "$F" touch "$T/ran"
	exec {fd}<"$F"
	run -1 dlock -n --fd "$fd" touch "$T/ran"
	exec {fd}<&-
	[[ ! -e $T/ran ]] || fail "ran beside the holder"
	# the holder info names the subshell
	run -0 dlock status "$F"
	assert_output --partial "(dlock 9)"
	touch "$T/release"
	wait_until 5 dead "$sh"
	wait_until 5 key_gone r "$KEY" || fail "not released once the subshell exited"
	run -0 dlock -n "$F" touch "$T/ran"
	[[ -e $T/ran && -e $T/done ]]
}

@test "the descriptor form: a lock held elsewhere is -E's status, -w waits" {
	hold h "$F"
	wait_ready h
	run -123 bash -c '( "$DLOCK" -n -E 123 9 && touch "$T/ran" ) 9>"$F"'
	run -1 bash -c '( "$DLOCK" -w 0.2 9 && touch "$T/ran" ) 9>"$F"'
	[[ ! -e $T/ran ]] || fail "went on without the lock"
	( sleep 0.3; touch "$T/h.release" ) &
	run -0 bash -c '( "$DLOCK" -w 10 9 && touch "$T/ran" ) 9>"$F"'
	[[ -e $T/ran ]]
	reap h
}

@test "dlock -u FD releases at once; the caller goes on" {
	run -0 bash -c '( "$DLOCK" -n 9 || exit 1
		"$DLOCK" -u 9 || exit 2
		# free for others now, while the subshell runs on
		"$DLOCK" -n "$F" true || exit 3
		# and from a nested subshell, as flock -u
		"$DLOCK" -n 9 || exit 4
		( "$DLOCK" -u 9 ) || exit 5
		"$DLOCK" -n "$F" true || exit 6
		echo ok ) 9>"$F"'
	assert_output ok
	# nothing held: -u is 0, as flock -u of an unlocked descriptor
	run -0 bash -c '"$DLOCK" -u 9' 9>"$F"
}

@test "the descriptor form: shared holders share; the same caller again is 0" {
	run -0 bash -c '( "$DLOCK" -s -n 9 || exit 1
		( "$DLOCK" -s -n 8 || exit 2; "$DLOCK" -n "$F" true; echo "x=$?" ) 8>"$F"
		"$DLOCK" -s -n 9 || exit 3	# held already: flock(2) again
		"$DLOCK" -x -n 9; echo "mode=$?" ) 9>"$F"'
	assert_line 'x=1'
	assert_line 'mode=64'
	wait_until 5 key_gone r "$KEY"
}

@test "the descriptor form: a lost lease stops the caller's process group" {
	# a group of its own, as a script run from cron has
	setsid bash -c 'trap "echo TERM >>\"$T/sig\"; exit 143" TERM
		( trap "echo TERM >>\"$T/sig\"; exit 143" TERM
		  "$DLOCK" -t 1 -n 9 || exit 1
		  touch "$T/held"
		  i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done ) 9>"$F"
		wait' 3>&- 2>"$T/err" &
	local sh=$!
	track $sh
	GROUP=$sh
	wait_until 5 test -e "$T/held" || fail "no lock: $(cat "$T/err")"
	rcli r del "$KEY" >/dev/null	# behind the holder's back
	wait_until 5 dead "$sh" || fail "the caller runs on without the lock"
	grep -q TERM "$T/sig" || fail "no SIGTERM: $(cat "$T/err")"
	grep -q "dlock: $F: lease lost: " "$T/err" || fail "stderr: $(cat "$T/err")"
}

@test "the descriptor form: the keeper killed, its watchdog stops the caller" {
	setsid bash -c '( "$DLOCK" -t 2 -n 9 || exit 1
		  touch "$T/held"
		  i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done ) 9>"$F"' 3>&- 2>"$T/err" &
	local sh=$! keeper
	track $sh
	GROUP=$sh
	wait_until 5 test -e "$T/held" || fail "no lock: $(cat "$T/err")"
	for keeper in $(pgrep -x dlock-keeper); do	# this test's: its $T
		tr '\0' '\n' <"/proc/$keeper/environ" | grep -qxF "T=$T" && break
		keeper=
	done
	[[ -n $keeper ]] || fail "no dlock-keeper process of this test"
	kill -KILL "$keeper"
	wait_until 8 dead "$sh" || fail "the caller runs on with nobody renewing the lease"
}

# ---- the descriptor form: its caller gone, the descriptor still open ----

# holder_work: $T/work LOG ID SECONDS, a heartbeat in LOG every 10 ms for
# SECONDS; TERM is written in LOG before it exits
holder_work() {
	cat >"$T/work" <<'EOS'
#!/bin/bash
trap 'echo "$2 TERM" >>"$1"; exit 143' TERM
end=$((${EPOCHREALTIME/./} + ${3}000000))
while ((${EPOCHREALTIME/./} < end)); do echo "$2 ${EPOCHREALTIME/./}" >>"$1"; sleep 0.01; done
EOS
	chmod +x "$T/work"
}

# A's heartbeats in $T/log between B's first and last: none
assert_alone() {
	local b0 b1 n
	b0=$(awk '$1 == "B" { print $2; exit }' "$T/log")
	b1=$(awk '$1 == "B" { t = $2 } END { print t }' "$T/log")
	[[ -n $b0 ]] || fail "B never ran"
	n=$(awk -v b0="$b0" -v b1="$b1" '$1 == "A" && $2 >= b0 && $2 <= b1' "$T/log" | wc -l)
	((n == 0)) || fail "the orphaned work ran beside the next holder: $n heartbeats in its $(((b1 - b0) / 1000)) ms"
}

# caller_killed SIGNAL [WRAPPER...]: the subshell killed by SIGNAL while
# its work runs in the foreground (found by review: the keeper let go at
# once)
caller_killed() {
	local sig=$1
	shift
	holder_work
	"$@" bash -c 'echo $$ >"$T/outer"; ( "$DLOCK" -n 9 || exit 1; "$T/work" "$T/log" A 3; true ) 9>"$F"' 3>&- &
	local sh=$! sub
	track "$sh"
	wait_until 5 test -s "$T/log" || fail "the first holder's work did not start"
	sub=$(pgrep -P "$(<"$T/outer")" -x bash) || fail "no subshell"
	kill -"$sig" "$sub"
	wait_until 5 dead "$sub"
	run -0 dlock -w 10 "$F" "$T/work" "$T/log" B 1
	assert_alone
	! grep -q "A TERM" "$T/log" || fail "the work was stopped, not waited for"
}

# A SIGKILL to the subshell (timeout -s KILL on the script, an operator,
# the OOM killer): its foreground child runs on with descriptor 9, as
# flock's lock would stay for it.
@test "descriptor form: the caller SIGKILLed, its foreground work still holds the lock" {
	caller_killed KILL
}

# A SIGTERM to the script alone (kill PID, systemd's KillMode=mixed):
# bash dies, its foreground child does not.
@test "descriptor form: the caller SIGTERMed, its foreground work still holds the lock" {
	caller_killed TERM
}

# Inside a job of another lock's: the orphaned work goes to that dlock,
# the job's subreaper, not to init.
@test "descriptor form: the caller killed inside another lock's job, the work still holds the lock" {
	caller_killed KILL dlock other-key
}

# The lease lost after the caller died: what holds the lock then is told,
# as the caller's group would be.
@test "descriptor form: the caller gone, a lost lease still stops what holds the lock" {
	holder_work
	setsid bash -c '( "$DLOCK" -t 1 -n 9 || exit 1; "$T/work" "$T/log" A 30; true ) 9>"$F"' 3>&- 2>"$T/err" &
	local sh=$! sub work
	track "$sh"
	GROUP=$sh
	wait_until 5 test -s "$T/log" || fail "no lock: $(cat "$T/err")"
	sub=$(pgrep -P "$sh" -x bash) || sub=$sh
	work=$(pgrep -P "$sub" -f "$T/work")
	track "$work"
	kill -KILL "$sub"
	wait_until 5 dead "$sub"
	sleep 1.2	# past a renewal: the keeper still renews for the work
	key_exists r "$KEY" || fail "released while the work runs"
	rcli r del "$KEY" >/dev/null	# behind the holder's back
	wait_until 5 dead "$work" || fail "the work runs on without the lock"
	grep -q "A TERM" "$T/log" || fail "no SIGTERM to the work: $(cat "$T/err")"
	grep -q "dlock: $F: lease lost: " "$T/err" || fail "stderr: $(cat "$T/err")"
}

# The caller's normal end: nothing else has the descriptor, the lock goes
# at once; also where the script above opened it (exec 9>f) and runs the
# next ( dlock 9 ) at once: the script and what it runs next do not hold
# the first subshell's lock.
@test "descriptor form: the caller's normal end still releases at once" {
	local t0 t1
	t0=$(now_ms)
	run -0 bash -c '( "$DLOCK" -n 9 || exit 1; true ) 9>"$F"
		"$DLOCK" -w 2 "$F" true || exit 2
		exec 9>"$F"
		for i in 1 2 3; do ( "$DLOCK" -w 2 9 || exit 3; true ) || exit 3; done
		( "$DLOCK" -n 9 || exit 1; sleep 0.1 ) & wait
		"$DLOCK" -w 2 "$F" true || exit 4
		echo ok'
	t1=$(now_ms)
	assert_output ok
	((t1 - t0 < 2000)) || fail "took $((t1 - t0)) ms"
	wait_until 2 key_gone r "$KEY"
}

# flock's lock lasts while a process has the descriptor: a background
# child that kept it holds the lock after the caller ends; one started
# with 9>&- does not.
@test "descriptor form: a background child with the descriptor holds the lock; one that closed it does not" {
	bash -c '( "$DLOCK" -n 9 || exit 1; sleep 30 9>&- & echo $! >"$T/closed.pid" ) 9>"$F"' 3>&-
	track "$(<"$T/closed.pid")"
	run -0 dlock -w 2 "$F" true
	alive "$(<"$T/closed.pid")" || fail "the sleep ended: no test"
	bash -c '( "$DLOCK" -n 9 || exit 1; sleep 30 & echo $! >"$T/kept.pid" ) 9>"$F"' 3>&-
	track "$(<"$T/kept.pid")"
	run -1 dlock -w 1 "$F" true
	kill "$(<"$T/kept.pid")"
	run -0 dlock -w 2 "$F" true
}

# Without kcmp(2) (a container's seccomp profile refuses it) the keeper
# cannot tell the caller's descriptor from the same file opened anew:
# what in the caller's group has the file is stopped before the release.
@test "descriptor form without kcmp: what still has the file is stopped, then the lock released" {
	holder_work
	"$BATS_TEST_DIRNAME/nokcmp.py" setsid bash -c '( "$DLOCK" -n 9 || exit 1; "$T/work" "$T/log" A 30; true ) 9>"$F"' 3>&- 2>"$T/err" &
	local sh=$! sub work
	track "$sh"
	GROUP=$sh
	wait_until 5 test -s "$T/log" || fail "no lock: $(cat "$T/err")"
	sub=$(pgrep -P "$sh" -x bash) || sub=$sh
	work=$(pgrep -P "$sub" -f "$T/work")
	track "$work"
	kill -KILL "$sub"
	run -0 dlock -w 10 "$F" "$T/work" "$T/log" B 1
	assert_alone
	grep -q "A TERM" "$T/log" || fail "the work was not stopped: $(cat "$T/err")"
	grep -q "kcmp(2) is refused" "$T/err" || fail "stderr: $(cat "$T/err")"
	# a normal end: nothing to stop, released at once, nothing said
	: >"$T/err"
	run -0 "$BATS_TEST_DIRNAME/nokcmp.py" bash -c '( "$DLOCK" -n 9 || exit 1; true ) 9>"$F"
		"$DLOCK" -w 2 "$F" true && echo ok' 2>"$T/err"
	assert_output ok
	[[ ! -s $T/err ]] || fail "stderr: $(cat "$T/err")"
	# a sibling subshell that waits with the same file is not stopped
	run -0 "$BATS_TEST_DIRNAME/nokcmp.py" bash -c '
		( "$DLOCK" -n 9 || exit 1; sleep 0.5 ) 9>"$F" &
		sleep 0.2
		( "$DLOCK" -w 5 9 || exit 1; echo second ) 9>"$F" &
		wait' 2>"$T/err"
	assert_output second
	[[ ! -s $T/err ]] || fail "stderr: $(cat "$T/err")"
}

@test "the descriptor form refuses what it cannot keep safe (64)" {
	local why
	for why in '--on-lost ignore' -o -F '--unavailable run'; do
		# shellcheck disable=SC2086
		run -64 --separate-stderr bash -c '"$DLOCK" '"$why"' 9' 9>"$F"
		[[ $stderr == "dlock: "* ]] || fail "$why: $stderr"
	done
	run -64 --separate-stderr bash -c 'echo | "$DLOCK" 0'
	assert_regex "$stderr" '^dlock: descriptor 0 is open on pipe:\[[0-9]+\], not on a file'
	run -64 --separate-stderr bash -c 'exec 9>"$T/gone"; rm "$T/gone"; "$DLOCK" 9'
	assert_regex "$stderr" 'deleted file'
	run -64 --separate-stderr dlock -u 9 true
	run -64 --separate-stderr dlock -u K
	assert_equal "$(all_keys r)" ''
}

# In a PID namespace without its own /proc (unshare -p without
# --mount-proc) the keeper read other processes than the caller's: the
# lock went with the caller while its orphan still had the file (found
# by review). Refused instead, as nothing there can be told.
@test "the descriptor form refuses a /proc of another PID namespace (64), nothing held" {
	unshare -fp true 2>/dev/null ||
		skip_unless_strict "no PID namespace here (unshare -p needs root)"
	# the caller is not the namespace's init, nor in its group (setsid)
	run -0 --separate-stderr unshare -fp bash -c 'setsid -w bash -c '\''
		( "$DLOCK" -n 9; echo "rc=$?" ) 9>"$F"'\''; wait'
	assert_output rc=64
	assert_regex "$stderr" "^dlock: $F: dlock 9: /proc is not this PID namespace's"
	assert_equal "$(all_keys r)" ''
	# with its own /proc, the namespace is as any other place
	run -0 --separate-stderr unshare -fp --mount-proc bash -c 'setsid -w bash -c '\''
		( "$DLOCK" -n 9; echo "rc=$?" ) 9>"$F"'\''; wait'
	assert_output rc=0
}

@test "a descriptor that is not open: flock's line and status (65)" {
	run -65 --separate-stderr dlock 9 9<&-
	assert_equal "$stderr" 'dlock: 9: Bad file descriptor'
	run -65 --separate-stderr dlock --fd 9 true 9<&-
	assert_equal "$stderr" 'dlock: 9: Bad file descriptor'
}

@test "--fd N COMMAND: the lock of the file N is open on; -o closes N in the command" {
	exec {fd}<>"$F"
	run -0 dlock --fd "$fd" sh -c 'echo "$DLOCK_KEY"; [ -e /proc/self/fd/'"$fd"' ] && echo has-fd'
	assert_equal "${lines[0]}" "$KEY"
	assert_equal "${lines[1]}" has-fd
	run -0 dlock -o --fd "$fd" sh -c '[ -e /proc/self/fd/'"$fd"' ] && echo has-fd; echo "$DLOCK_KEY"'
	assert_output "$KEY"
	run -64 dlock --fd "$fd"	# no command: flock's "missing command"
	exec {fd}<&-
}

@test "inside a job that holds the lock, dlock FD is 0 at once (re-entry)" {
	run -0 dlock "$F" bash -c '( "$DLOCK" -n 9 && echo in ) 9>"$F"; "$DLOCK" -n 9 9>"$F"; echo "again=$?"'
	assert_line in
	assert_line again=0
	wait_until 5 key_gone r "$KEY"
}

# ---- the descriptor form's variables: dlock --export FD -------------------

# export_subshell: in a subshell holding $F on 9, eval "$(dlock --export -n 9)"
# (with ARGS before -n), then print what the work sees, what a nested dlock
# of the file (and of --fd 9) sees, whether another holder is kept out, and
# the second --export's lines; the lock is free once the subshell exited.
export_subshell() {
	bash -c '( eval "$("$DLOCK" --export '"$*"' -n 9)" || exit 1
		echo "key=$DLOCK_KEY token=$DLOCK_TOKEN fence=$DLOCK_FENCE job=${DLOCK_JOB-unset}"
		"$DLOCK" -n "$F" sh -c '"'"'echo "nested=$DLOCK_KEY $DLOCK_TOKEN $DLOCK_FENCE"'"'"'
		"$DLOCK" -n --fd 9 sh -c '"'"'echo "fd=$DLOCK_TOKEN $DLOCK_FENCE"'"'"'
		env -u DLOCK_TOKEN "$DLOCK" -n "$F" true; echo "other=$?"
		again=$("$DLOCK" --export -n 9) && echo "again="$again
		"$DLOCK" status -q "$F"; echo "held=$?" ) 9>"$F"'
}

@test "eval \"\$(dlock --export FD)\": the subshell's work gets DLOCK_KEY, DLOCK_TOKEN, DLOCK_FENCE; a nested dlock re-enters" {
	export DLOCK_JOB=1	# an outer job's: the lock is not that job's
	run -0 --separate-stderr export_subshell
	assert_equal "$stderr" ''
	assert_line -n 0 --regexp "^key=$KEY token=[0-9a-f]{32} fence=[0-9]+ job=unset$"
	local token=${lines[0]#*token=} fence=${lines[0]#*fence=}
	token=${token%% *} fence=${fence%% *}
	assert_equal "$fence" "$(counter r "$F")"	# the fence the server gave
	assert_line -n 1 "nested=$KEY $token $fence"
	assert_line -n 2 "fd=$token $fence"
	assert_line -n 3 'other=1'
	# the same caller again: its lock, the same lines (as acquire --export)
	assert_line -n 4 "again=export DLOCK_KEY=$KEY export DLOCK_TOKEN=$token export DLOCK_FENCE=$fence unset DLOCK_JOB"
	assert_line -n 5 'held=0'
	wait_until 5 key_gone r "$KEY" || fail "held after the subshell exited"
}

@test "dlock --export FD holds the lock for the shell that evals it, also through a subshell of \$(...)" {
	# bash forks a subshell for $(cmd 2>x), which exits with dlock: the
	# lock is the shell's that reads the output, not that subshell's
	run -0 bash -c '( v=$("$DLOCK" --export -n 9 2>/dev/null) || exit 1
		eval "$v"; sleep 0.3
		env -u DLOCK_TOKEN "$DLOCK" -n "$F" true; echo "other=$?"
		"$DLOCK" status "$F" | grep -q "(dlock 9)" && echo held ) 9>"$F"'
	assert_line 'other=1'
	assert_line held
	wait_until 5 key_gone r "$KEY"
	# to a file, for the caller to read: the caller's lock
	run -0 bash -c '( "$DLOCK" --export -n 9 >"$T/vars" || exit 1; . "$T/vars"
		env -u DLOCK_TOKEN "$DLOCK" -n "$F" true; echo "other=$?" ) 9>"$F"'
	assert_output 'other=1'
	wait_until 5 key_gone r "$KEY"
}

@test "a dlock --export that fails prints 'exit N': eval \"\$(dlock --export -n 9)\" never goes on to the work unlocked" {
	"$DLOCK" acquire -t 30 "$F" >/dev/null	# another holder
	# held (1), a usage error (64), an unreachable server (69): the eval
	# ends the subshell with dlock's status, as flock's `|| exit 1` does
	run -1 --separate-stderr bash -c '( eval "$("$DLOCK" --export -n 9)"; echo WORK ) 9>"$F"'
	assert_equal "$output" ''
	run -64 --separate-stderr bash -c '( eval "$("$DLOCK" --bogus --export -n 9)"; echo WORK ) 9>"$F"'
	assert_equal "$output" ''
	run -69 --separate-stderr bash -c '( eval "$("$DLOCK" -S unix:"$T/none.sock" --export -n 9)"; echo WORK ) 9>"$F"'
	assert_equal "$output" ''
	# acquire --export too
	run -1 --separate-stderr bash -c 'eval "$("$DLOCK" acquire --export -n "$F")"; echo WORK'
	assert_equal "$output" ''
	# a command's own "--export" word is not dlock's: its output untouched
	run -1 --separate-stderr dlock -n "$F" echo --export
	assert_equal "$output" ''
	"$DLOCK" release --force "$F" >/dev/null
}

@test "dlock --export: only the descriptor form's; output no process above it reads is refused (64), nothing held" {
	# a named pipe that a process started before reads (with a pipe into
	# a command started after dlock, the shell may hold the read end for
	# a moment: dlock cannot always tell, and holds the lock for it then)
	mkfifo "$T/fifo"
	cat "$T/fifo" >"$T/read" &
	track $!
	run -64 --separate-stderr bash -c '( "$DLOCK" --export -n 9 >"$T/fifo" ) 9>"$F"'
	wait_until 5 test -s "$T/read"
	assert_equal "$(cat "$T/read")" 'exit 64'	# for an eval: see below
	assert_equal "$stderr" "dlock: $F: dlock --export 9: no process above dlock reads its output: eval \"\$(dlock --export 9)\" in the shell that does the work"
	run -64 --separate-stderr dlock --export K true
	[[ $stderr == "dlock: --export prints the variables of a lock held for the caller: "* ]] || fail "$stderr"
	run -64 --separate-stderr bash -c '"$DLOCK" --export -u 9' 9>"$F"
	run -64 --separate-stderr bash -c '"$DLOCK" --export --fd 9 true' 9>"$F"
	assert_equal "$(all_keys r)" ''
	# --verbose: flock's lines are not for eval
	bash -c '( "$DLOCK" --verbose --export -n 9 >"$T/out" ) 9>"$F"'
	grep -q '^export DLOCK_KEY=' "$T/out" || fail "$(cat "$T/out")"
	! grep -q 'getting lock took' "$T/out" || fail "$(cat "$T/out")"
	wait_until 5 key_gone r "$KEY"
	# a job that holds the lock: the job's variables, no unset DLOCK_JOB
	run -0 dlock "$F" bash -c '( "$DLOCK" --export -n 9 ) 9>"$F"'
	assert_line -n 0 "export DLOCK_KEY=$KEY"
	assert_line -n 2 --regexp '^export DLOCK_FENCE=[0-9]+$'
	refute_line 'unset DLOCK_JOB'
}

@test "dlock --export FD on PostgreSQL: the same variables, the same re-entry" {
	[[ -e ${DLOCK%/*}/dlock-postgres.so ]] || skip_unless_strict "no PostgreSQL engine built"
	start_postgres || fail "PostgreSQL did not start"
	export DLOCK_SERVERS=$PG_URL
	run -0 --separate-stderr export_subshell
	assert_equal "$stderr" ''
	assert_line -n 0 --regexp "^key=$KEY token=[^ ]+ fence=[0-9]+ job=unset$"
	local token=${lines[0]#*token=} fence=${lines[0]#*fence=}
	token=${token%% *} fence=${fence%% *}
	assert_line -n 1 "nested=$KEY $token $fence"
	assert_line -n 2 "fd=$token $fence"
	assert_line -n 3 'other=1'
	assert_line -n 5 'held=0'
	wait_until 5 key_free "$KEY" || fail "held after the subshell exited"
}
