#!/usr/bin/env bats
# valgrind.bats - memcheck over the paths that matter: acquire, wait,
# renew, lease lost, RedLock with a server dead, status, history,
# acquire/extend/release, release --force, shared, --limit, --fair (not
# -F: valgrind 3.19 has no pidfd_open, which -F needs). Each dlock (and each
# process it forks: the watchdog runs in a fork under valgrind) writes a
# log of its own; any error or definitely lost block in any of them fails
# the test. Leases are long: valgrind makes dlock's start slow, and the
# point here is memory, not time (lease.bats has the timing).
#
# Only in builds without a sanitizer (tests/meson.build): valgrind cannot
# run an ASan binary.

load helpers
load redlock_helpers

setup() {
	common_setup
	command -v valgrind >/dev/null || skip_unless_strict "no valgrind"
	REAL=$DLOCK
	mkdir -p "$T/vg"
	# a wrapper, so that helpers (start_bg, hold) run dlock under valgrind;
	# it execs, so $! is dlock's PID still
	cat >"$T/vgdlock" <<EOF
#!/bin/sh
exec valgrind -q --error-exitcode=99 --leak-check=full \\
	--errors-for-leak-kinds=definite --show-leak-kinds=definite \\
	--child-silent-after-fork=no --log-file="$T/vg/%p.log" "$REAL" "\$@"
EOF
	chmod +x "$T/vgdlock"
	DLOCK=$T/vgdlock
	DLK_TIMEOUT=60
	start_servers 3
	U=$(sock_url r1)
}

teardown() {
	stop_all
	local f bad=0
	for f in "$T"/vg/*.log; do
		[[ -s $f ]] || continue
		echo "# valgrind: $f" >&3
		sed 's/^/# /' "$f" >&3
		bad=1
	done
	((bad == 0)) || fail "valgrind found errors (above)"
}

waiting() { "$REAL" status -S "$U" --json K | grep -q '"waiting":[1-9]'; }

@test "valgrind: acquire, run, release; -n on a held lock" {
	run -0 dlk -S "$U" K sh -c 'echo "fence $DLOCK_FENCE"'
	assert_output --regexp '^fence [0-9]+$'
	hold h -S "$U" K
	wait_ready h 30
	run -1 dlk -S "$U" -n K true
	finish h 30
	assert_equal "$bg_status" 0
}

@test "valgrind: wait for a holder, then run" {
	hold h -S "$U" K
	wait_ready h 30
	start_bg w -S "$U" -w 60 K true
	wait_until 30 waiting || fail "the waiter does not wait: $(cat "$T/w.err")"
	finish h 30
	reap w 60
	assert_equal "$bg_status" 0
}

@test "valgrind: the lease renewed while the job runs (-t 3, 4 s)" {
	run -0 dlk -S "$U" -t 3 K sh -c 'sleep 4; echo done'
	assert_output done
	run -0 dlk history -S "$U" -n 1 K
	assert_line -n 1 --regexp ' released '
}

@test "valgrind: lease lost (the key deleted behind its back): 75" {
	hold h -S "$U" -t 3 K
	wait_ready h 30
	rcli r1 del dlock:K >/dev/null
	reap h 60
	assert_equal "$bg_status" 75
}

@test "valgrind: RedLock with a server dead: acquired on 2 of 3" {
	kill_server r2
	run -0 dlk "${SRV[@]}" --node-timeout 0.5 K sh -c 'echo ran'
	assert_output --partial ran
	run -0 dlk "${SRV[@]}" --node-timeout 0.5 -t 5 K sh -c 'sleep 2.5; echo renewed'
	assert_output --partial renewed
}

@test "valgrind: status and history, text and JSON" {
	hold h -S "$U" K
	wait_ready h 30
	run -0 dlk status -S "$U" K
	run -0 dlk status -S "$U" --json
	run -0 dlk status -S "$U"
	finish h 30
	run -0 dlk history -S "$U" K
	assert_line -n 1 --regexp ' released '
	run -0 dlk history -S "$U" --json K
}

@test "valgrind: acquire, extend, release --token; release --force" {
	run -0 dlk acquire -S "$U" K
	local token=$output
	run -0 dlk extend -S "$U" -t 60 --token "$token" K
	run -0 dlk release -S "$U" --token "$token" K
	key_gone r1 dlock:K
	hold h -S "$U" -t 30 K
	wait_ready h 30
	run -0 dlk release -S "$U" --force K
	assert_output --partial 'broken: '
	reap h 60
	assert_equal "$bg_status" 75
}

@test "valgrind: shared, --limit, --fair" {
	run -0 dlk -S "$U" -s K true
	run -0 dlk -S "$U" --limit 2 K true
	run -0 dlk -S "$U" --fair K true
}
