#!/usr/bin/env bats
# child.bats - the command as a process: signals forwarded once, interrupted
# waits, dlock killed under the command, descriptors, process group. On
# every engine (DLOCK_TEST_ENGINE).

load helpers
load engine_helpers

setup_file() { engine_start; }
teardown_file() { engine_stop; }
setup() { engine_setup; }
teardown() { engine_teardown; }

# forwarded SIG STATUS: SIG to dlock reaches the command and its child (the
# whole process group) once, the lock is released once both are gone, and
# dlock exits with the command's status (the job's trap's).
forwarded() {
	JOB_MODE=group hold h -S "$U" "$K"
	wait_ready h
	store_held "$K"
	kill -"$1" "$(<"$T/h.dlock")"
	if [[ $1 == INT || $1 == QUIT ]]; then
		# sh starts a background child with SIGINT and SIGQUIT ignored:
		# the command ends, its child does not, and holds the lock on.
		wait_until 5 dead "$(<"$T/h.pid")" || fail "the command runs on"
		store_held "$K"
		alive "$(<"$T/h.dlock")" || fail "dlock ended before the job"
		touch "$T/h.gc.release"
	fi
	reap h
	assert_equal "$bg_status" "$2"
	assert_equal "$(cat "$T/h.sig")" "$1"	# once
	[[ $1 == INT || $1 == QUIT ]] || assert_equal "$(cat "$T/h.gc.sig")" "$1"
	dead "$(<"$T/h.gc.pid")" || fail "the command's child runs on"
	store_nothing_left
}

@test "SIGTERM to dlock is forwarded to the command" { forwarded TERM 11; }
@test "SIGINT to dlock is forwarded to the command" { forwarded INT 12; }
@test "SIGHUP to dlock is forwarded to the command" { forwarded HUP 13; }
@test "SIGQUIT to dlock is forwarded to the command" { forwarded QUIT 14; }

# interrupted SIG STATUS: SIG to a dlock waiting for a held lock: 128+N,
# the command not run, the holder's lock untouched.
interrupted() {
	hold h -S "$U" "$K"
	wait_ready h
	local token; token=$(job_var h DLOCK_TOKEN)
	start_bg w -S "$U" "$K" touch "$T/w.ran"
	wait_until 5 waiting "$K" 1 || fail "the waiter never waited: $(cat "$T/w.err")"
	kill -"$1" "$(<"$T/w.dlock")"
	reap w
	assert_equal "$bg_status" "$2"
	[[ ! -e $T/w.ran ]] || fail "the command ran"
	wait_until 5 waiting "$K" 0 || fail "the waiter is still in the store"
	if_redis assert_equal "$(rcli r get dlock:K)" "$token"
	assert_equal "$(store_holders "$K")" 1
	assert_equal "$(store_fence "$K")" "$(job_var h DLOCK_FENCE)"
	alive "$(<"$T/h.dlock")" || fail "the holder ended"
	finish h
	assert_equal "$bg_status" 0
	if_redis assert_equal "$(all_keys r)" $'{dlock:K}:fence\n{dlock:K}:history'
	store_nothing_left
}

@test "SIGINT while waiting: 130, nothing left" { interrupted INT 130; }
@test "SIGTERM while waiting: 143, nothing left" { interrupted TERM 143; }

@test "dlock killed with SIGKILL: the command gets SIGTERM, the key lapses" {
	hold h -S "$U" -t 1 "$K"
	wait_ready h
	kill -KILL "$(<"$T/h.dlock")"
	wait_until 5 test -e "$T/h.sig" || fail "the command got no signal"
	assert_equal "$(<"$T/h.sig")" TERM
	wait_until 5 dead "$(<"$T/h.pid")" || fail "the command still runs"
	run -0 dlock -S "$U" -w 5 "$K" true
	store_nothing_left
}

@test "the command inherits no descriptor from dlock" {
	# Close everything above 2 first: what bats holds open is not ours.
	run -0 bash -c '
		for fd in /proc/$$/fd/*; do
			fd=${fd##*/}
			((fd > 2)) && eval "exec $fd>&-"
		done
		exec "$@"' bash "$DLOCK" -S "$U" "$K" sh -c 'ls /proc/$$/fd'
	assert_equal "$(echo $output)" '0 1 2'
	run -0 bash -c '
		for fd in /proc/$$/fd/*; do
			fd=${fd##*/}
			((fd > 2)) && eval "exec $fd>&-"
		done
		exec "$@"' bash "$DLOCK" -S "$U" -o "$K" sh -c 'ls /proc/$$/fd'
	assert_equal "$(echo $output)" '0 1 2'
}

@test "descriptors dlock did not open are passed on, as flock does" {
	run -0 dlock -S "$U" "$K" sh -c 'cat <&7' 7<<<"seven"
	assert_output seven
}

@test "the command runs in its own process group" {
	run -0 dlock -S "$U" "$K" sh -c 'set -- $(cat /proc/$$/stat); echo "$1 $5 $4"'
	local pid pgrp ppid
	read -r pid pgrp ppid <<<"$output"
	assert_equal "$pgrp" "$pid"
	local dpgrp; dpgrp=$(cut -d' ' -f5 "/proc/$BASHPID/stat")
	[[ $pgrp != "$dpgrp" ]] || fail "the command is in the test's group"
}

@test "a signal dlock's parent ignored (nohup) is not passed on" {
	# The command catches SIGHUP whatever it inherited (a shell cannot).
	cat >"$T/catch.py" <<'PY'
import os, signal, sys, time
p = sys.argv[1]
def note(name, status):
    def handler(signo, frame):
        open(p + ".sig", "a").write(name + "\n")
        if status:
            sys.exit(status)
    return handler
signal.signal(signal.SIGHUP, note("HUP", 0))
signal.signal(signal.SIGTERM, note("TERM", 11))
open(p + ".ready", "w").close()
time.sleep(60)
PY
	sh -c 'trap "" HUP; exec "$@"' sh "$DLOCK" -S "$U" "$K" "$PYTHON" "$T/catch.py" "$T/h" \
		>"$T/h.out" 2>"$T/h.err" 3>&- &
	echo $! >"$T/h.dlock"
	track $!
	wait_until 5 test -e "$T/h.ready" || fail "no command: $(cat "$T/h.err")"
	kill -HUP "$(<"$T/h.dlock")"
	kill -TERM "$(<"$T/h.dlock")"	# this one counts
	reap h
	assert_equal "$bg_status" 11
	assert_equal "$(cat "$T/h.sig")" TERM
}

# e2big ROOM: runs dlock -S $U KEY /bin/true PAD... from Python, KEY being
# 1000 k's, under a 512 KiB stack limit (so the kernel's limit for
# execve() is its floor, 32 pages), PAD sized so that dlock's own exec
# leaves ROOM bytes of that limit. The command's exec takes about 1 KiB
# more (DLOCK_KEY and DLOCK_KEYS hold KEY twice), whatever the paths.
e2big() {
	cat >"$T/e2big.py" <<'PY'
import os, resource, sys
dlock, url, room, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
resource.setrlimit(resource.RLIMIT_STACK, (512 << 10, 512 << 10))
limit = max((512 << 10) // 4, 32 * os.sysconf("SC_PAGE_SIZE"))
env = {"PATH": os.environ["PATH"]}
argv = [dlock, "-S", url, name + "k" * 1000, "/bin/true", "", ""]
def used(a):
	strings = len(dlock) + 1 + sum(len(s) + 1 for s in a)
	strings += sum(len(k) + len(v) + 2 for k, v in env.items())
	return strings + 8 * (len(a) + len(env))
pad = limit - room - used(argv)
argv[-2] = "x" * (pad // 2)	# no string over 32 pages
argv[-1] = "y" * (pad - pad // 2)
assert used(argv) == limit - room
os.execve(dlock, argv, env)
PY
	"$PYTHON" "$T/e2big.py" "$DLOCK" "$U" "$1" "${N:-}"
}

@test "arguments too long for the command's execve(): 126 before anything is taken" {
	local k N; N=${K%K} k=${K%K}$(printf 'k%.0s' {1..1000})
	run -126 --separate-stderr e2big 16
	assert_equal "$stderr" "dlock: $k: /bin/true: argument list too long"
	if_redis assert_equal "$(all_keys r)" ""	# no lock, fence or history: untouched
	store_nothing_left
	[[ $(traced "$k") != yes ]] || fail "the lock was taken: $(dlock history -S "$U" "$k")"
	# with room for the DLOCK_* variables, the command runs
	run -0 e2big 4000
	if on_redis; then
		[[ -n $(all_keys r) ]] || fail "the lock was never taken"
	fi
	[[ $(traced "$k") != no ]] || fail "the lock was never taken"
	store_nothing_left
}

@test "arguments near execve()'s limit with the engine's own variables: 126 untouched, or run" {
	# DLOCK_KEY and DLOCK_KEYS as the engine makes them (a ZooKeeper
	# znode path), its token (64 characters on ZooKeeper), etcd's
	# ETCD_LOCK_KEY and ETCD_LOCK_REV: about 2 KiB more than the key
	local room k ran=0 refused=0
	for room in $(seq 1000 64 2560); do
		local N=${K%K}r$room-
		k=${N}$(printf 'k%.0s' {1..1000})
		run --separate-stderr e2big "$room"
		case $status in
		126)	[[ $(traced "$k") != yes ]] ||
				fail "room $room: 126 after the lock was taken: $stderr"
			refused=$((refused + 1)) ;;
		0)	ran=$((ran + 1)) ;;
		*)	fail "room $room: $status: $stderr" ;;
		esac
	done
	((ran > 0 && refused > 0)) || fail "ran $ran, refused $refused: the limit is not within the rooms tried"
	store_nothing_left
}

# traced NAME: yes when the store's history has an event of NAME, no when
# it has none; unknown where the engine keeps no history
traced() {
	if refused history "$1"; then
		echo unknown
	elif run -0 dlock history -S "$U" --json "$1"; [[ $output == *'"event":"acquired"'* ]]; then
		echo yes
	else
		echo no
	fi
}

# the watchdog of the job dlock PID runs (its child, by comm or by args)
watchdog_under() { ps -o pid=,comm=,args= --ppid "$1" | awk '$2 == "dlk-watchdog" || ($3 == "dlock" && $4 == "watchdog") { print $1 }'; }
has_watchdog() { [[ -n $(watchdog_under "$1") ]]; }

@test "dlock and its watchdog killed together (pkill -9 -f dlock): the command is still told" {
	hold h -S "$U" -t 2 K
	wait_ready h
	local d w
	d=$(<"$T/h.dlock")
	wait_until 5 has_watchdog "$d" || fail "no watchdog: $(ps -o pid,comm,args --ppid "$d")"
	w=$(watchdog_under "$d")
	# `pkill dlock` matches comm anywhere: the watchdog's has no "dlock"
	[[ $(ps -o comm= -p "$w") != *dlock* ]] || fail "watchdog named $(ps -o comm= -p "$w")"
	# The watchdog stopped first: between the two SIGKILLs of one
	# `kill -KILL "$d" "$w"` it could see dlock's death and tell the job
	# itself (seen under load: TERM twice), which would also pass the
	# test without PDEATHSIG. Stopped, it neither acts nor is restarted.
	kill -STOP "$w"
	kill -KILL "$d"
	kill -KILL "$w"
	# PR_SET_PDEATHSIG: the command gets the --on-lost signal at once.
	# Nothing else is left to tell it (dlock and its watchdog are gone,
	# and a lapsed lease signals nobody), so the bound is only on the
	# job's own sh, which runs its trap once its sleep 0.05 ends and
	# forks cat and mv to write h.sig: 5 s, as a loaded CI needs, not 1.
	wait_until 5 test -e "$T/h.sig" || fail "the command runs on untold"
	assert_equal "$(<"$T/h.sig")" TERM
}

@test "an empty PATH entry is the current directory, as for flock (execvp)" {
	mkdir "$T/bin"
	printf '#!/bin/sh\necho ran from the current directory\n' >"$T/bin/mytool"
	chmod +x "$T/bin/mytool"
	cd "$T/bin"
	PATH=":$PATH" run -0 dlock -S "$U" "$K" mytool
	assert_equal "$output" "ran from the current directory"
	PATH="$PATH:" run -0 dlock -S "$U" "$K" mytool
	PATH="$PATH" run -127 dlock -S "$U" "$K" mytool
}

@test "a FIFO or a directory named as the command earlier in PATH: the one after runs, as for execvp" {
	mkdir "$T/early" "$T/early/mytool" "$T/fifo" "$T/bin"
	mkfifo -m 755 "$T/fifo/mytool"
	printf '#!/bin/sh\necho ran the later one\n' >"$T/bin/mytool"
	chmod +x "$T/bin/mytool"
	PATH="$T/fifo:$T/early:$T/bin:$PATH" run -0 dlock -S "$U" "$K" mytool
	assert_equal "$output" "ran the later one"
}
