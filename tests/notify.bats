#!/usr/bin/env bats
# notify.bats - --notify: a socket the test binds as NOTIFY_SOCKET (as
# systemd would) gets STATUS= while waiting, STATUS=holding then READY=1
# once the lock is held and the command started, WATCHDOG=1 on renewals
# when WATCHDOG_USEC asks, STOPPING=1 at the release, in that order; the
# command does not inherit NOTIFY_SOCKET; --notify-pass forwards the
# command's own READY=1. No systemd is needed.

load helpers

setup() {
	common_setup
	start_redis r
	U=$(sock_url r)
	ME=$USER	# the user the holder info names
	[[ $(id -u) != 0 ]] || ME=root
}

# listen ADDRESS: a datagram socket at ADDRESS (a path, or @name), whose
# datagrams go to $T/got, one a line, newlines as '|'
listen() {
	"$PYTHON" - "$1" "$T/got" <<'PY' 3>&- &
import socket, sys
addr, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
open(out + ".ready", "w").close()
with open(out, "a") as f:
    while True:
        f.write(s.recv(65536).decode().replace("\n", "|") + "\n")
        f.flush()
PY
	track $!
	wait_until 5 test -e "$T/got.ready" || fail "no listener"
}
got() { cat "$T/got" 2>/dev/null; }
got_line() { grep -qx -- "$1" "$T/got" 2>/dev/null; }

@test "STATUS= while waiting and holding, READY=1, WATCHDOG=1, STOPPING=1, in order" {
	listen "$T/notify"
	hold h -S "$U" K
	wait_ready h
	NOTIFY_SOCKET=$T/notify WATCHDOG_USEC=1000000 start_bg w -S "$U" --notify -t 0.9 K \
		sh -c 'echo "NOTIFY_SOCKET=${NOTIFY_SOCKET-unset} WATCHDOG_USEC=${WATCHDOG_USEC-unset} WATCHDOG_PID=${WATCHDOG_PID-unset}" >"$0"; sleep 0.7' "$T/env"
	wait_until 5 test -s "$T/got" || fail "nothing while waiting: $(cat "$T/w.err")"
	assert_equal "$(got)" "STATUS=waiting for K, held by $ME@$HOSTNAME pid $(<"$T/h.dlock") ($T/job $T/h exit)"
	finish h
	reap w
	assert_equal "$bg_status" 0
	assert_equal "$(cat "$T/env")" 'NOTIFY_SOCKET=unset WATCHDOG_USEC=unset WATCHDOG_PID=unset'
	wait_until 5 got_line 'STOPPING=1|STATUS=releasing K' || fail "no STOPPING: $(got)"
	run -0 got
	echo "$output" | sed 's/^/# /' >&3
	assert_line --index 1 --regexp '^STATUS=holding K, fence [0-9]+$'
	assert_line --index 2 READY=1
	# a renewal every 0.3 s while the command ran 0.7 s
	assert_line --index 3 WATCHDOG=1
	assert_line --index -1 'STOPPING=1|STATUS=releasing K'
	# nothing else: between READY and STOPPING, renewals only
	for ((k = 3; k < ${#lines[@]} - 1; k++)); do
		[[ ${lines[k]} == WATCHDOG=1 ]] || fail "line $k: $output"
	done
}

@test "an abstract NOTIFY_SOCKET (@name); WATCHDOG_PID not ours: no WATCHDOG=1" {
	local name="@dlock-test-$$-$RANDOM"
	listen "$name"
	NOTIFY_SOCKET=$name WATCHDOG_USEC=1000000 WATCHDOG_PID=1 \
		run -0 dlock -S "$U" --notify -t 0.6 K sleep 0.5
	wait_until 5 got_line 'STOPPING=1|STATUS=releasing K' || fail "got: $(got)"
	run -0 got
	assert_line READY=1
	refute_line WATCHDOG=1
}

@test "no NOTIFY_SOCKET: --notify says nothing; one that is gone: one warning" {
	run -0 --separate-stderr dlock -S "$U" --notify K true
	assert_equal "$stderr" ''
	NOTIFY_SOCKET=$T/gone run -0 --separate-stderr dlock -S "$U" --notify K true
	assert_equal "$stderr" "dlock: K: warning: --notify: NOTIFY_SOCKET $T/gone: no such file or directory; no notifications"
	# without --notify, the command inherits it as it is
	NOTIFY_SOCKET=$T/gone run -0 dlock -S "$U" K sh -c 'echo "$NOTIFY_SOCKET"'
	assert_output "$T/gone"
}

@test "a watchdog shorter than a renewal period is warned of" {
	listen "$T/notify"
	NOTIFY_SOCKET=$T/notify WATCHDOG_USEC=2000000 run -0 --separate-stderr dlock -S "$U" --notify -t 30 K true
	assert_equal "$stderr" "dlock: K: warning: --notify: WatchdogSec=2s is shorter than a renewal period and a server's deadline (11s): systemd would stop a unit that works; give it the --ttl at least"
}

@test "--notify-pass: the command's READY=1 is forwarded, MAINPID= dropped" {
	listen "$T/notify"
	cat >"$T/send" <<'PY'
import os, socket, sys
a = os.environ["NOTIFY_SOCKET"]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for m in sys.argv[1:]:
    s.sendto(m.replace("|", "\n").encode(), "\0" + a[1:] if a[0] == "@" else a)
PY
	NOTIFY_SOCKET=$T/notify WATCHDOG_USEC=5000000 run -0 dlock -S "$U" --notify-pass -t 0.9 K \
		sh -c 'echo "$NOTIFY_SOCKET $WATCHDOG_USEC ${WATCHDOG_PID-unset}" >"$0"; "$1" "$2" "READY=1|STATUS=serving|MAINPID=1" WATCHDOG=1 && sleep 0.2' \
		"$T/env" "$PYTHON" "$T/send"
	[[ $(<"$T/env") =~ ^@[0-9a-f]{5}\ 5000000\ unset$ ]] || fail "the command's environment: $(<"$T/env")"
	wait_until 5 got_line 'STOPPING=1|STATUS=releasing K' || fail "got: $(got)"
	run -0 got
	assert_line --index 0 --regexp '^STATUS=holding K, fence [0-9]+$'
	assert_line --index 1 'READY=1|STATUS=serving'
	assert_line --index 2 'WATCHDOG=1'
	assert_line --index 3 'STOPPING=1|STATUS=releasing K'
	assert_equal "${#lines[@]}" 4
}

@test "--notify: not with -F, nor in the descriptor form" {
	run -64 --separate-stderr dlock -S "$U" --notify -F K true
	assert_equal "$stderr" "dlock: --notify: with -F the command takes dlock's PID, and so its place as the unit's main process: let it notify"
	run -64 --separate-stderr dlock -S "$U" --notify 0
	assert_equal "$stderr" "dlock: --notify: the descriptor form (dlock FD) runs no command to be ready"
}
