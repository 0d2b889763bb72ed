#!/usr/bin/env bats
# secrets.bats - a password in a -S URL does not show in ps or
# /proc/PID/cmdline while dlock runs; a password file that group or others
# can read gets one warning line, as ssh gives for a key file.

load helpers
load redlock_helpers	# start_sentinel

setup() {
	common_setup
	# Unique, so that a match is ours and not a parallel test's.
	PW=s3cr3t-$RANDOM$RANDOM
	# grep reads it from a file: on grep's own command line it would
	# find itself.
	printf '%s\n' "$PW" >"$T/pw.pattern"
}

# pw_server NAME [PASSWORD]: a server on TCP wanting PASSWORD ($PW), set
# once it runs, so that no redis-server command line holds it either.
pw_server() {
	start_redis_tcp "$1"
	rcli "$1" config set requirepass "${2:-$PW}" >/dev/null
	echo "${2:-$PW}" >"$T/$1/pass"
}

port() { cat "$T/$1/port"; }

# shows PATTERN-FILE: every process whose arguments contain a line of the
# file ("PID: ARGS"). A process may end while it is read: not an error.
shows() {
	local f
	for f in $(grep -lasF -f "$1" /proc/[0-9]*/cmdline); do
		printf '%s: %s\n' "${f//[!0-9]/}" "$(tr '\0' ' ' <"$f" 2>/dev/null)"
	done
}

# hidden ID ARGS: while ID's job runs, no process's arguments (ps reads
# /proc/PID/cmdline) hold $PW, and `ps -o args` of dlock ID is ARGS: the
# URL is still there, its password masked.
hidden() {
	local pid leaks
	pid=$(<"$T/$1.dlock")
	alive "$pid" || fail "dlock $1 is not running"
	leaks=$(shows "$T/pw.pattern")
	[[ -z $leaks ]] || fail "the password shows in: $leaks"
	assert_equal "$(ps -ww -o args= -p "$pid")" "$2"
	assert_equal "$(tr '\0' ' ' <"/proc/$pid/cmdline")" "$2 "
}

# stars PASSWORD: what ps shows in its place
stars() { printf '%*s' "${#1}" '' | tr ' ' '*'; }

@test "-S redis://:PASSWORD@: not in ps or /proc/PID/cmdline while dlock runs" {
	pw_server r
	hold h -S "redis://:$PW@127.0.0.1:$(port r)" K
	wait_ready h
	hidden h "$DLOCK -S redis://:$(stars "$PW")@127.0.0.1:$(port r) K $T/job $T/h exit"
	finish h
	assert_equal "$bg_status" 0
}

@test "-Sredis://USER:PASSWORD@ (one argument): the password is hidden, the user is not" {
	pw_server r
	rcli r acl setuser alice on ">$PW" '~*' '&*' '+@all' >/dev/null
	hold h "-Sredis://alice:$PW@127.0.0.1:$(port r)/2" K
	wait_ready h
	hidden h "$DLOCK -Sredis://alice:$(stars "$PW")@127.0.0.1:$(port r)/2 K $T/job $T/h exit"
	finish h
	assert_equal "$bg_status" 0
}

@test "--server= a sentinel URL and a redis:// one: the password after the sentinels' commas is hidden" {
	start_redis_tcp m
	start_sentinel s m "$(port m)"
	pw_server r
	# A second sentinel, down: the sentinel URL has commas of its own.
	local su="redis-sentinel://127.0.0.1:$(port s),127.0.0.1:$(free_port)/m"
	hold h --server="$su,redis://:$PW@127.0.0.1:$(port r)" K
	wait_ready h
	hidden h "$DLOCK --server=$su,redis://:$(stars "$PW")@127.0.0.1:$(port r) K $T/job $T/h exit"
	# Both servers hold it (two of two), so both URLs were read whole.
	assert_equal "$(rcli m get dlock:K)" "$(job_var h DLOCK_TOKEN)"
	assert_equal "$(rcli r get dlock:K)" "$(job_var h DLOCK_TOKEN)"
	finish h
	assert_equal "$bg_status" 0
}

@test "one -S with a list (commas and blanks): every password is hidden" {
	pw_server r1 "$PW-1"
	pw_server r2 "$PW-22"
	pw_server r3 "$PW-333"
	hold h -S "redis://:$PW-1@127.0.0.1:$(port r1),redis://:$PW-22@127.0.0.1:$(port r2) redis://:$PW-333@127.0.0.1:$(port r3)" K
	wait_ready h
	hidden h "$DLOCK -S redis://:$(stars "$PW-1")@127.0.0.1:$(port r1),redis://:$(stars "$PW-22")@127.0.0.1:$(port r2) redis://:$(stars "$PW-333")@127.0.0.1:$(port r3) K $T/job $T/h exit"
	local s
	for s in r1 r2 r3; do
		assert_equal "$(rcli "$s" get dlock:K)" "$(job_var h DLOCK_TOKEN)"
	done
	finish h
	assert_equal "$bg_status" 0
}

@test "a password with a bare '@' in it (the URL parser takes the last '@')" {
	pw_server r "at@$PW"
	hold h -S "redis://:at@$PW@127.0.0.1:$(port r)" K
	wait_ready h
	hidden h "$DLOCK -S redis://:$(stars "at@$PW")@127.0.0.1:$(port r) K $T/job $T/h exit"
	finish h
	assert_equal "$bg_status" 0
}

@test "-F: the lease helper, which keeps dlock's arguments, shows no password" {
	pw_server r
	hold h -F -S "redis://:$PW@127.0.0.1:$(port r)" K
	wait_ready h
	local leaks helpers
	leaks=$(shows "$T/pw.pattern")
	[[ -z $leaks ]] || fail "the password shows in: $leaks"
	# The helper is found by its masked URL: it was looked at.
	printf '%s\n' ":$(stars "$PW")@127.0.0.1:$(port r)" >"$T/masked"
	helpers=$(shows "$T/masked")
	[[ -n $helpers ]] || fail "no process with the masked URL (the -F helper)"
	finish h
	assert_equal "$bg_status" 0
}

# ---- password files -----------------------------------------------------

# too_open MODE FILE: the warning, as ssh words it for a key file
too_open() {
	echo "dlock: warning: permissions 0$1 for '$2' are too open: group or others can read the password"
}

@test "--password-file readable by group or others: one warning line, and the password is used" {
	pw_server r
	echo "$PW" >"$T/pwfile"
	local mode
	for mode in 640 604 644 660 755; do
		chmod "$mode" "$T/pwfile"
		run -0 --separate-stderr dlock -S "redis://127.0.0.1:$(port r)" \
			--password-file "$T/pwfile" K echo ran
		assert_output ran
		assert_equal "$stderr" "$(too_open "$mode" "$T/pwfile")"
	done
}

@test "--password-file 0600 or 0400, or a pipe: no warning" {
	pw_server r
	echo "$PW" >"$T/pwfile"
	local mode
	for mode in 600 400 700 620; do
		chmod "$mode" "$T/pwfile"
		run -0 --separate-stderr dlock -S "redis://127.0.0.1:$(port r)" \
			--password-file "$T/pwfile" K echo ran
		assert_output ran
		assert_equal "$stderr" ''
	done
	run -0 --separate-stderr bash -c '"$DLOCK" -S "$1" --password-file <(echo "$2") K echo ran' \
		bash "redis://127.0.0.1:$(port r)" "$PW"
	assert_output ran
	assert_equal "$stderr" ''
}

@test "password-file in the config file, readable by others: the same warning" {
	pw_server r
	echo "$PW" >"$T/pwfile"
	chmod 644 "$T/pwfile"
	printf 'servers = redis://127.0.0.1:%s\npassword-file = %s\n' "$(port r)" "$T/pwfile" >"$T/conf"
	run -0 --separate-stderr dlock --config "$T/conf" K echo ran
	assert_output ran
	assert_equal "$stderr" "$(too_open 644 "$T/pwfile")"
}

@test "a password file that cannot be used is an error (64), without the warning" {
	: >"$T/pwfile"
	chmod 644 "$T/pwfile"
	run -64 --separate-stderr dlock -S "redis://127.0.0.1:1" --password-file "$T/pwfile" K touch "$T/ran"
	assert_equal "$stderr" "dlock: $T/pwfile: empty password"
	run -64 --separate-stderr dlock -S "redis://127.0.0.1:1" --password-file "$T/nosuch" K touch "$T/ran"
	assert_equal "$stderr" "dlock: $T/nosuch: no such file or directory"
	run -64 --separate-stderr dlock -S "redis://127.0.0.1:1" --password-file "$T" K touch "$T/ran"
	assert_equal "$stderr" "dlock: $T: is a directory"
	[[ ! -e $T/ran ]] || fail "the command ran"
}
