#!/usr/bin/env bats
# tty.bats - the wait line: on a terminal (script(1) gives dlock a pty)
# "dlock: K: held by USER@HOST pid N (CMD) for Xs; waited Ys" appears after
# a second of waiting, is redrawn in place and erased (\r ESC[K) before the
# command's own output; elsewhere only --verbose prints it, once.

load helpers
load modes_helpers

setup() {
	common_setup
	command -v script >/dev/null || skip_unless_strict "no script(1) (util-linux)"
}

drawn_twice() { (($(grep -o 'held by' "$1" | wc -l) >= 2)); }

check_tty_line() {
	local out hpid re
	hold h "${SRV[@]}" K
	wait_ready h
	hpid=$(<"$T/h.dlock")
	# script -e: its status is dlock's; -f: the capture is written at once.
	script -qfec "$(printf '%q ' "$DLOCK" "${SRV[@]}" K echo the-command-ran)" \
		/dev/null </dev/null >"$T/tty.out" 2>"$T/tty.err" 3>&- &
	local sp=$!
	track $sp
	# Drawn at least twice (every second), so redrawing is seen too.
	wait_until 5 drawn_twice "$T/tty.out" ||
		fail "no wait line (drawn twice) on the terminal: $(cat -v "$T/tty.out" "$T/tty.err")"
	finish h
	assert_equal "$bg_status" 0
	wait_until 10 dead $sp || fail "dlock under script(1) did not finish"
	local st=0
	wait $sp || st=$?
	assert_equal "$st" 0
	out=$(cat "$T/tty.out"; echo x)	# keep the final \r\n
	out=${out%x}
	echo "# tty: $(cat -v <<<"$out")" >&3
	[[ $out == *"held by "*"@$HOSTNAME pid $hpid ($T/job $T/h exit) for "*"s; waited "*s* ]] ||
		fail "wait line: $(cat -v <<<"$out")"
	# Every drawing starts with \r ESC[K, none ends a line; the last is
	# erased, then the command's output follows.
	re=$'^(\r\e\\[Kdlock: K: held by [^\r\n]*)+\r\e\\[Kthe-command-ran\r\n$'
	[[ $out =~ $re ]] || fail "terminal output: $(cat -v <<<"$out")"
}

@test "on a terminal the wait line names the holder, then is erased" {
	servers 1
	check_tty_line
}

@test "RedLock: on a terminal the wait line names the holder, then is erased" {
	servers 3
	check_tty_line
}

# wait_a_while ID: waiter ID is blocked for a wake-up and has waited past the 1 s
# after which a terminal would show the line.
wait_a_while() {
	wait_until 5 blocked_all 1 || fail "$1 never blocked: $(cat "$T/$1.err")"
	# Nothing to await: the point is that time passes (1 s + several tries).
	sleep 1.5
}

@test "without a terminal and without --verbose nothing is printed" {
	servers 1
	hold h "${SRV[@]}" K
	wait_ready h
	start_bg w "${SRV[@]}" K echo the-command-ran
	wait_a_while w
	finish h
	assert_equal "$bg_status" 0
	reap w
	assert_equal "$bg_status" 0
	assert_equal "$(<"$T/w.out")" the-command-ran
	assert_equal "$(cat -v "$T/w.err")" ''
}

@test "--verbose without a terminal prints one plain wait line" {
	servers 1
	hold h "${SRV[@]}" K
	wait_ready h
	start_bg w "${SRV[@]}" --verbose K echo the-command-ran
	wait_a_while w
	finish h
	assert_equal "$bg_status" 0
	reap w
	assert_equal "$bg_status" 0
	assert_equal "$(tail -1 "$T/w.out")" the-command-ran	# after flock's lines
	assert_equal "$(wc -l <"$T/w.err")" 1
	grep -q $'[\r\e]' "$T/w.err" && fail "terminal codes in a log: $(cat -v "$T/w.err")"
	[[ $(<"$T/w.err") == "dlock: K: held by "*" pid $(<"$T/h.dlock") ($T/job $T/h exit) for "*"s; waited 0s" ]] ||
		fail "stderr: $(<"$T/w.err")"
}

# ---- the job and its terminal -------------------------------------------

@test "the command gets the terminal when dlock is its foreground job, stdin or not" {
	servers 1
	mkfifo "$T/keys"
	exec 4<>"$T/keys"
	# The command reads the terminal, not stdin (/dev/null): on a process
	# group the terminal does not know, that read would stop it (SIGTTIN).
	script -qfec "$(printf '%q ' "$DLOCK" "${SRV[@]}" K sh -c 'echo >"$0"; read x </dev/tty; echo "got $x"' "$T/reading") </dev/null" \
		/dev/null <"$T/keys" >"$T/tty.out" 2>"$T/tty.err" 3>&- &
	local sp=$!
	track $sp
	wait_until 5 test -e "$T/reading" || fail "the command did not start: $(cat "$T/tty.err")"
	echo hello >&4
	wait_until 10 dead $sp || fail "the command never got the line: $(cat -v "$T/tty.out")"
	exec 4>&-
	grep -q 'got hello' "$T/tty.out" || fail "output: $(cat -v "$T/tty.out")"
}

# A real interactive shell with job control, in tmux: what Ctrl-Z, fg and a
# background job reading the terminal do there.
tmux_start() {
	command -v tmux >/dev/null || skip_unless_strict "no tmux"
	TM=(tmux -S "$T/tmux.sock")
	"${TM[@]}" new-session -d -x 200 -y 50 \
		"env -i PATH=$PATH TERM=xterm PS1='$ ' bash --norc --noprofile" 3>&-
	echo "$("${TM[@]}" display -p '#{pid}')" >>"$T/pids"
}
screen() { "${TM[@]}" capture-pane -p; }
shows() { screen | grep -q -- "$1"; }
continued() { (($(screen | grep -c 'dev/tty') >= 3)); }	# typed, Stopped, fg
type_line() { "${TM[@]}" send-keys -l -- "$1"; "${TM[@]}" send-keys Enter; }
tmux_stop() { [[ -z ${TM:-} ]] || "${TM[@]}" kill-server 2>/dev/null || true; }

teardown() { tmux_stop; stop_all; }

@test "Ctrl-Z, then fg after the lease ran out: the job is not continued without the lock" {
	servers 1
	tmux_start
	# -t 4: the watchdog's SIGKILL follows its TERM by a twentieth of the
	# TTL, 50 ms at -t 1, too short for the job's sh to record the TERM
	# under load (see job.bats, "the job is stopped before the lease
	# lapses")
	type_line "$(printf '%q ' "$DLOCK" "${SRV[@]}" -t 4 K "$T/job" "$T/j" stay)"
	wait_until 5 test -e "$T/j.ready" || fail "no job: $(screen)"
	"${TM[@]}" send-keys C-z
	wait_until 5 shows 'Stopped' || fail "not stopped: $(screen)"
	# The lease lapses while all is stopped; the watchdog tells the job.
	wait_until 10 test -e "$T/j.sig" || fail "the job was not told: $(screen)"
	assert_equal "$(<"$T/j.sig")" TERM
	type_line fg
	wait_until 5 shows 'lease lost: stopped for longer than the lease allows' ||
		fail "no lease-lost line: $(screen)"
	touch "$T/j.release"
	wait_until 5 dead "$(<"$T/j.pid")" || fail "the job did not end"
	type_line 'echo status=$?'
	wait_until 5 shows 'status=75' || fail "dlock did not exit 75: $(screen)"
	assert_equal "$(<"$T/j.sig")" TERM	# once
}

@test "a command that reads the terminal in the background: dlock stops with it, fg hands it over" {
	servers 1
	tmux_start
	type_line "$(printf '%q ' "$DLOCK" "${SRV[@]}" K sh -c 'read x </dev/tty; echo "got $x"') &"
	wait_until 5 shows 'it wants the terminal' || fail "no line: $(screen)"
	type_line ''	# bash reports a job's change at its next prompt
	wait_until 5 shows 'Stopped' || fail "dlock did not stop: $(screen)"
	type_line fg
	# bash prints the job's command line once it has handed it the terminal
	wait_until 5 continued || fail "no fg: $(screen)"
	type_line hello
	wait_until 5 shows 'got hello' || fail "the command did not get the terminal: $(screen)"
}

@test "Ctrl-C stops a shell loop of dlock, as it stops one of flock" {
	servers 1
	tmux_start
	type_line "for i in 1 2 3; do $(printf '%q ' "$DLOCK" "${SRV[@]}" K sh -c 'touch "$0"; sleep 30' "$T/ran"); echo iter\$i; done; echo loop-end"
	wait_until 5 test -e "$T/ran" || fail "no job: $(screen)"
	"${TM[@]}" send-keys C-c
	type_line 'echo after'
	wait_until 5 shows '^after' || fail "the shell is stuck: $(screen)"
	! shows '^iter1' || fail "the loop went on after Ctrl-C: $(screen)"
	! shows '^loop-end' || fail "the list went on after Ctrl-C: $(screen)"
}

@test "Ctrl-C while waiting stops a shell loop too" {
	servers 1
	hold h "${SRV[@]}" K
	wait_ready h
	tmux_start
	type_line "for i in 1 2 3; do $(printf '%q ' "$DLOCK" "${SRV[@]}" K true); echo iter\$i; done; echo loop-end"
	wait_until 5 blocked_all 1 || fail "dlock does not wait: $(screen)"
	"${TM[@]}" send-keys C-c
	type_line 'echo after'
	wait_until 5 shows '^after' || fail "the shell is stuck: $(screen)"
	! shows '^iter1' || fail "the loop went on after Ctrl-C: $(screen)"
}

@test "Ctrl-Z stops what the command left running too, and fg continues it" {
	servers 1
	tmux_start
	type_line "$(printf '%q ' "$DLOCK" "${SRV[@]}" K sh -c '"$0" "$1" stay & exit 0' "$T/job" "$T/j")"
	wait_until 5 test -e "$T/j.ready" || fail "no job: $(screen)"
	# the command (sh, the group's leader) exits; its child runs on
	wait_until 5 dead "$(ps -o pgid= -p "$(<"$T/j.pid")" | tr -d ' ')" || fail "sh did not exit"
	"${TM[@]}" send-keys C-z
	type_line ''
	wait_until 5 shows 'Stopped' || fail "not stopped: $(screen)"
	type_line fg
	touch "$T/j.release"
	type_line 'echo status=$?'
	wait_until 10 shows 'status=0' || fail "did not finish: $(screen)"
}

@test "kill -STOP of a command that has the terminal: dlock says so and does not stop" {
	servers 1
	tmux_start
	type_line "$(printf '%q ' "$DLOCK" "${SRV[@]}" K "$T/job" "$T/j")"
	wait_until 5 test -e "$T/j.ready" || fail "no job: $(screen)"
	kill -STOP "$(<"$T/j.pid")"
	wait_until 5 shows 'was stopped (SIGSTOP) and keeps the lock' || fail "no line: $(screen)"
	! shows 'Stopped' || fail "dlock stopped too: $(screen)"
	kill -CONT "$(<"$T/j.pid")"
	touch "$T/j.release"
	type_line 'echo status=$?'
	wait_until 10 shows 'status=0' || fail "did not finish: $(screen)"
}

@test "--on-lost ignore, Ctrl-Z, fg after the lease: the job runs on as asked, 75" {
	servers 1
	tmux_start
	type_line "$(printf '%q ' "$DLOCK" "${SRV[@]}" -t 1 --on-lost ignore K "$T/job" "$T/j")"
	wait_until 5 test -e "$T/j.ready" || fail "no job: $(screen)"
	"${TM[@]}" send-keys C-z
	wait_until 5 shows 'Stopped' || fail "not stopped: $(screen)"
	sleep 1.5	# past the lease: nothing to await, time must pass
	type_line fg
	wait_until 5 shows 'lease lost' || fail "no lease-lost line: $(screen)"
	touch "$T/j.release"
	type_line 'echo status=$?'
	wait_until 10 shows 'status=75' || fail "dlock did not end with the job: $(screen)"
	[[ ! -e $T/j.sig ]] || fail "the job was signalled: $(cat "$T/j.sig")"
}

@test "a background job whose shell is gone: dlock says it wants the terminal, does not stop for ever" {
	servers 1
	tmux_start
	type_line "bash -c '$(printf '%q ' "$DLOCK" "${SRV[@]}" K sh -c 'touch "$0"; read x </dev/tty' "$T/ran") >$T/o.out 2>$T/o.err & echo \$! >$T/o.pid'"
	wait_until 5 test -s "$T/o.pid" || fail "no dlock: $(screen)"
	track "$(<"$T/o.pid")"
	wait_until 5 grep -q 'keeps the lock until it is continued' "$T/o.err" ||
		fail "no line: $(cat "$T/o.err")"
	local s; s=$(<"/proc/$(<"$T/o.pid")/stat"); s=${s##*) }
	[[ ${s:0:1} != T ]] || fail "dlock stopped, with no shell to continue it"
}

@test "status --watch on a terminal: redrawn in place every second, until Ctrl-C" {
	servers 1
	tmux_start
	type_line "$(printf '%q ' "$DLOCK" status --watch "${SRV[@]}" K); echo status=\$?"
	wait_until 5 shows '^K: free' || fail "no screen: $(screen)"
	shows '^Every 1s: dlock status K ' || fail "no head line: $(screen)"
	hold h "${SRV[@]}" K
	wait_ready h
	wait_until 5 shows '^K: held, exclusive' || fail "not redrawn: $(screen)"
	# in place: the screen shows one look, not a scroll of them
	assert_equal "$(screen | grep -c '^Every 1s')" 1
	assert_equal "$(screen | grep -c '^K: ')" 1
	# and again each second: SINCE counts on
	holder_row() { screen | grep -A1 'HOST' | tail -1; }
	local before
	before=$(holder_row)
	refreshed() { [[ $(holder_row) != "$before" ]]; }
	wait_until 5 refreshed || fail "not refreshed: $(screen)"
	"${TM[@]}" send-keys C-c
	wait_until 5 shows '^status=0' || fail "Ctrl-C did not end it with 0: $(screen)"
	finish h
}
