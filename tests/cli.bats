#!/usr/bin/env bats
# cli.bats - bad input: exit 64, one "dlock: " line on stderr, no server
# contacted, the command not run. --help and --version.

load helpers

setup() {
	common_setup
	start_redis r
	U=$(sock_url r)
	M=$T/marker
}

conns() {	# connections server r has accepted, counting this one
	rcli r info stats | tr -d '\r' | sed -n 's/^total_connections_received://p'
}

# usage_error ARGS...: `dlock ARGS` exits 64 with one "dlock: " line, prints
# nothing on stdout, does not run the command and does not talk to server r.
usage_error() {
	local conns0; conns0=$(conns)
	run -64 --separate-stderr dlock "$@"
	assert_output ''
	((${#stderr_lines[@]} == 1)) ||
		fail "want one stderr line, got ${#stderr_lines[@]}: $stderr"
	[[ ${stderr_lines[0]} == 'dlock: '* ]] ||
		fail "stderr does not start with 'dlock: ': $stderr"
	[[ ! -e $M ]] || fail "the command ran"
	assert_equal "$(conns)" "$((conns0 + 1))"	# only ours: dlock never connected
	assert_equal "$(all_keys r)" ''
}

@test "-t 0 is refused" { usage_error -S "$U" -t 0 K touch "$M"; }
@test "-t -1 is refused" { usage_error -S "$U" -t -1 K touch "$M"; }
@test "-t inf is refused" { usage_error -S "$U" -t inf K touch "$M"; }
@test "-t nan is refused" { usage_error -S "$U" -t nan K touch "$M"; }
@test "-t 1e3 is refused" { usage_error -S "$U" -t 1e3 K touch "$M"; }
@test "-t 0x10 is refused" { usage_error -S "$U" -t 0x10 K touch "$M"; }
@test "-t '' is refused" { usage_error -S "$U" -t '' K touch "$M"; }
@test "-t below the 0.2 s minimum is refused, saying so" {
	usage_error -S "$U" -t 0.19 K touch "$M"
	assert_equal "$stderr" "dlock: --ttl 0.19 is too short: at least 0.2 seconds (a shorter lease runs out before a busy host renews it)"
	usage_error -S "$U" -t 0.01 K touch "$M"
}
@test "--ttl=0 is refused" { usage_error -S "$U" --ttl=0 K touch "$M"; }
@test "-w -1 is refused" { usage_error -S "$U" -w -1 K touch "$M"; }
@test "-w inf is refused" { usage_error -S "$U" -w inf K touch "$M"; }
@test "-w nan is refused" { usage_error -S "$U" -w nan K touch "$M"; }
@test "--timeout=1,5 is refused" { usage_error -S "$U" --timeout=1,5 K touch "$M"; }
@test "-E 256 is refused" { usage_error -S "$U" -n -E 256 K touch "$M"; }
@test "-E -1 is refused" { usage_error -S "$U" -n -E -1 K touch "$M"; }
@test "-E x is refused" { usage_error -S "$U" -n -E x K touch "$M"; }
@test "an unknown long option is refused" { usage_error -S "$U" --frobnicate K touch "$M"; }
@test "an unknown short option is refused" { usage_error -S "$U" -Z K touch "$M"; }
@test "an option missing its argument is refused" { usage_error -S "$U" -w; }
@test "a missing KEY is refused" { usage_error -S "$U"; }
@test "a missing COMMAND is refused" { usage_error -S "$U" K; }
@test "an empty KEY is refused" { usage_error -S "$U" '' touch "$M"; }
@test "KEY -c with two arguments is refused" { usage_error -S "$U" K -c "touch $M" extra; }
@test "KEY -c without its argument is refused" { usage_error -S "$U" K -c; }
@test "--on-lost FOO is refused" { usage_error -S "$U" --on-lost FOO K touch "$M"; }
@test "--on-lost SIGFOO is refused" { usage_error -S "$U" --on-lost SIGFOO K touch "$M"; }
# SIGCONT follows the --on-lost signal: a stop would tell the job nothing
@test "--on-lost STOP is refused" { usage_error -S "$U" --on-lost STOP K touch "$M"; }
@test "--on-lost SIGTSTP is refused" { usage_error -S "$U" --on-lost SIGTSTP K touch "$M"; }
@test "--on-lost 18 (CONT) is refused" { usage_error -S "$U" --on-lost 18 K touch "$M"; }
@test "--kill-after soon is refused" { usage_error -S "$U" --kill-after soon K touch "$M"; }
@test "--kill-after -1 is refused" { usage_error -S "$U" --kill-after -1 K touch "$M"; }
@test "--max-hold x is refused" { usage_error -S "$U" --max-hold x K touch "$M"; }
@test "--wait-replicas x is refused" { usage_error -S "$U" --wait-replicas x K touch "$M"; }
@test "--min-hold -1 is refused" { usage_error -S "$U" --min-hold -1 K touch "$M"; }
@test "--min-hold abc is refused" { usage_error -S "$U" --min-hold abc K touch "$M"; }
@test "--min-hold 1e3 is refused" { usage_error -S "$U" --min-hold 1e3 K touch "$M"; }
@test "--min-hold '' is refused" { usage_error -S "$U" --min-hold '' K touch "$M"; }
@test "--unavailable maybe is refused" { usage_error -S "$U" --unavailable maybe K touch "$M"; }
@test "--unavailable '' is refused" { usage_error -S "$U" --unavailable= K touch "$M"; }
@test "--node-timeout equal to --ttl is refused" { usage_error -S "$U" -t 1 --node-timeout 1 K touch "$M"; }
@test "--node-timeout above --ttl is refused" { usage_error -S "$U" -t 1 --node-timeout 2 K touch "$M"; }

# flock refuses them together; and its byte ranges have no keyed meaning
@test "-F with -o is refused, as flock refuses it" {
	usage_error -S "$U" -F -o K touch "$M"
	assert_equal "$stderr" "dlock: -F and -o exclude each other (as in flock): with -F the command is dlock's process"
	usage_error -S "$U" --no-fork --close K touch "$M"
}
@test "flock's --fcntl, --start and --length are refused with the reason" {
	usage_error -S "$U" --fcntl K touch "$M"
	assert_equal "$stderr" "dlock: --fcntl: flock's byte-range (fcntl) locks have no keyed equivalent: a KEY is one lock"
	usage_error -S "$U" --start 1 K touch "$M"
	usage_error -S "$U" --length=2 K touch "$M"
}

@test "a URL with port 0 is refused" { usage_error -S redis://127.0.0.1:0 K touch "$M"; }
@test "a URL with port 99999 is refused" { usage_error -S redis://127.0.0.1:99999 K touch "$M"; }
@test "a URL without a host is refused" { usage_error -S redis://:@ K touch "$M"; }
@test "an http:// URL is refused" { usage_error -S http://x K touch "$M"; }
@test "a relative unix: path is refused" { usage_error -S unix:relative/sock K touch "$M"; }

@test "a rediss:// URL with port 0 is refused" { usage_error -S rediss://127.0.0.1:0 K touch "$M"; }
@test "--tls-ca without a rediss:// server is refused" { usage_error -S "$U" --tls-ca /etc/hosts K touch "$M"; }
@test "--tls-insecure without a rediss:// server is refused" { usage_error -S "$U" --tls-insecure K touch "$M"; }
@test "--tls-key without --tls-cert is refused" {
	usage_error -S rediss://127.0.0.1:6380 --tls-key /etc/hosts K touch "$M"
}
@test "an unreadable --tls-ca is refused before any server is asked" {
	usage_error -S rediss://127.0.0.1:6380 --tls-ca "$T/nonesuch" K touch "$M"
}

@test "a bad URL in DLOCK_SERVERS is refused" {
	DLOCK_SERVERS="$U http://x" usage_error K touch "$M"
}

# A setting that is there but empty is a mistake (a CI secret not filled
# in), not a wish for the default: where every host runs a local Redis, the
# default would give each host "the" lock alone.
@test "DLOCK_SERVERS set but empty is refused, naming it" {
	DLOCK_SERVERS= usage_error K touch "$M"
	assert_equal "$stderr" "dlock: DLOCK_SERVERS is empty: name a server, or unset it for the default"
	DLOCK_SERVERS=' , ' usage_error K touch "$M"
	[[ $stderr == *DLOCK_SERVERS* ]] || fail "stderr does not name DLOCK_SERVERS: $stderr"
}

@test "an empty -S is refused, naming it" {
	usage_error -S '' K touch "$M"
	assert_equal "$stderr" "dlock: --server is empty: name a server"
}

@test "an empty servers setting in the config file is refused, naming file and line" {
	printf 'ttl = 5\nservers =\n' >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	assert_equal "$stderr" "dlock: $T/conf:2: empty servers (remove the line for the default)"
}

@test "an unknown config key is refused, naming file and line" {
	printf '# dlock\nservers = %s\ncolour = blue\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	[[ $stderr == *"$T/conf:3"* ]] || fail "stderr does not name $T/conf:3: $stderr"
}

@test "a config line without '=' is refused, naming file and line" {
	printf 'servers = %s\n\njust words\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	[[ $stderr == *"$T/conf:3"* ]] || fail "stderr does not name $T/conf:3: $stderr"
}

@test "a duplicate config key is refused, naming file and line" {
	printf 'servers = %s\nprefix = a:\nprefix = b:\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	[[ $stderr == *"$T/conf:3"* ]] || fail "stderr does not name $T/conf:3: $stderr"
}

@test "a bad ttl in the config file is refused" {
	printf 'servers = %s\nttl = soon\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
}

@test "--min-hold and --unavailable name the values they take" {
	usage_error -S "$U" --min-hold -1 K touch "$M"
	assert_equal "$stderr" "dlock: bad --min-hold '-1': 0 (off) or seconds, up to 315360000"
	usage_error -S "$U" --min-hold abc K touch "$M"
	assert_equal "$stderr" "dlock: bad --min-hold 'abc': 0 (off) or seconds, up to 315360000"
	usage_error -S "$U" --unavailable maybe K touch "$M"
	assert_equal "$stderr" "dlock: bad --unavailable 'maybe': fail or run"
	usage_error -S "$U" --unavailable RUN K touch "$M"
	assert_equal "$stderr" "dlock: bad --unavailable 'RUN': fail or run"
}

@test "--min-hold longer than the lease is refused: it is never lengthened" {
	usage_error -S "$U" --min-hold 31 K touch "$M"
	assert_equal "$stderr" "dlock: --min-hold 31 is longer than the lease (--ttl 30): give --ttl 31 or more"
	usage_error -S "$U" -t 2 --min-hold 2.5 K touch "$M"
	assert_equal "$stderr" "dlock: --min-hold 2.5 is longer than the lease (--ttl 2): give --ttl 2.5 or more"
	printf 'servers = %s\nmin-hold = 60\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	# as long as the lease is fine, and 0 is off
	run -0 dlock -S "$U" -t 2 --min-hold 2 K touch "$M"
	rm "$M"
	run -0 dlock --config "$T/conf" --min-hold 0 K2 touch "$M"	# overrides the file's
}

@test "bad min-hold and unavailable in the config file are refused" {
	printf 'servers = %s\nmin-hold = -1\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	assert_equal "$stderr" "dlock: $T/conf:2: bad min-hold '-1': 0 (off) or seconds, up to 315360000"
	printf 'servers = %s\nunavailable = maybe\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	assert_equal "$stderr" "dlock: $T/conf:2: bad unavailable 'maybe': fail or run"
	# in every form, as a bad ttl is
	usage_error status --config "$T/conf" K
}

# Every config error names file and line, values' too.
@test "bad config values are refused, naming file and line" {
	printf 'servers = %s\ntls-insecure = maybe\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	assert_equal "$stderr" "dlock: $T/conf:2: bad tls-insecure 'maybe' (yes or no)"
	printf '# x\nservers = %s\n\nttl = soon\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	assert_equal "$stderr" "dlock: $T/conf:4: bad ttl 'soon' (seconds, at least 0.2)"
	printf 'ttl = 5\nservers = http://x\n' >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	[[ $stderr == "dlock: $T/conf:2: bad server URL 'http://x': "* ]] || fail "stderr: $stderr"
	# a bad value is refused even where a flag overrides it
	printf 'servers = %s\nttl = soon\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" -t 5 K touch "$M"
}

# A '#' starts a comment only at the start of a line: one after a value
# would otherwise be part of it (a password or a path may hold a '#').
@test "a comment after a config value is refused, naming file and line" {
	printf 'servers = %s\nttl=5 # comment\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	assert_equal "$stderr" "dlock: $T/conf:2: '#' after the value of ttl: a comment takes a line of its own"
	printf '  # indented, a comment\nservers = %s\n' "$U" >"$T/conf"
	run -0 dlock --config "$T/conf" K true
}

@test "a NUL byte in a config file is refused, naming file and line" {
	printf 'servers = %s\nttl = 5\0junk\n' "$U" >"$T/conf"
	usage_error --config "$T/conf" K touch "$M"
	assert_equal "$stderr" "dlock: $T/conf:2: a NUL byte (not a text file)"
}

# A FIFO hung dlock (open waits for a writer); a directory or a /proc file
# is no config file either: refused at once, with the reason.
@test "a directory, a FIFO or a /proc file as config is refused at once" {
	mkdir "$T/dir"
	usage_error --config "$T/dir" K touch "$M"
	assert_equal "$stderr" "dlock: $T/dir: a directory, not a config file"
	mkfifo "$T/fifo"
	run -64 --separate-stderr timeout 10 "$DLOCK" --config "$T/fifo" -S "$U" K touch "$M"
	assert_equal "$stderr" "dlock: $T/fifo: a FIFO, not a config file"	# not timeout's 124
	usage_error --config /proc/self/status K touch "$M"
	assert_equal "$stderr" "dlock: /proc/self/status: a file of /proc, not a config file"
	usage_error --config /dev/null K touch "$M"
	assert_equal "$stderr" "dlock: /dev/null: a device, not a config file"
	# at the XDG path too: found, but no file to read
	mkdir -p "$XDG_CONFIG_HOME/dlock"
	rm -f "$XDG_CONFIG_HOME/dlock/config"
	mkfifo "$XDG_CONFIG_HOME/dlock/config"
	run -64 --separate-stderr timeout 10 "$DLOCK" -S "$U" K touch "$M"
	assert_equal "$stderr" "dlock: $XDG_CONFIG_HOME/dlock/config: a FIFO, not a config file"
	[[ ! -e $M ]]
}

@test "--min-hold and --unavailable are the run form's alone" {
	local form
	for form in status history release acquire extend; do
		usage_error "$form" -S "$U" --min-hold 5 K
		assert_equal "$stderr" "dlock: --min-hold does not apply to 'dlock $form'"
		usage_error "$form" -S "$U" --unavailable run K
		assert_equal "$stderr" "dlock: --unavailable does not apply to 'dlock $form'"
	done
	# the config file's are for the jobs: the other forms leave them be
	printf 'servers = %s\nmin-hold = 60\nunavailable = run\n' "$U" >"$T/conf"
	run -1 --separate-stderr dlock status --config "$T/conf" K
	assert_output 'K: free'
}

@test "a missing --config file is refused, naming it" {
	usage_error -S "$U" --config "$T/no-such.conf" K touch "$M"
	[[ $stderr == *"$T/no-such.conf"* ]] || fail "stderr does not name the file: $stderr"
}

@test "a lock named as a subcommand is reached through run" {
	local w
	for w in acquire extend; do
		run -0 dlock run -S "$U" "$w" -- sh -c 'echo "$DLOCK_KEY"'
		assert_output "dlock:$w"
	done
}

@test "a bare dlock prints the usage line and where to read more, as flock" {
	local conns0; conns0=$(conns)
	run -64 --separate-stderr dlock
	assert_output ''
	assert_equal "$stderr" "Usage: dlock [options] KEY COMMAND [ARG...]
Try 'dlock --help' for more information."
	assert_equal "$(conns)" "$((conns0 + 1))"
}

@test "a number out of range names the range" {
	usage_error -S "$U" -t 99999999999 K touch "$M"
	assert_equal "$stderr" "dlock: bad --ttl '99999999999': at most 315360000 seconds (ten years)"
	usage_error -S "$U" -w 315360000.001 K touch "$M"
	assert_equal "$stderr" "dlock: bad --wait '315360000.001': at most 315360000 seconds (ten years)"
	usage_error -S "$U" -t 0 K touch "$M"
	assert_equal "$stderr" "dlock: bad --ttl '0': must be more than 0"
	usage_error -S "$U" -n -E 256 K touch "$M"
	assert_equal "$stderr" "dlock: bad --conflict-exit-code '256': 0 to 255"
	usage_error -S "$U" --limit 0 K touch "$M"
	assert_equal "$stderr" "dlock: bad --limit '0': 1 to 1000000"
	usage_error -S "$U" --wait-replicas 1001 K touch "$M"
	assert_equal "$stderr" "dlock: bad --wait-replicas '1001': 0 to 1000"
	# what is no number is only called bad
	usage_error -S "$U" -t 1e3 K touch "$M"
	assert_equal "$stderr" "dlock: bad --ttl '1e3'"
}

@test "-c before KEY is accepted; then nothing may follow KEY" {
	run -0 --separate-stderr dlock -S "$U" -c "touch '$M'" K
	[[ -e $M ]] || fail "the command string did not run"
	rm "$M"
	rcli r flushall >/dev/null	# the fencing counter that run left
	usage_error -S "$U" -c "touch '$M'" K extra
	usage_error -S "$U" -c "touch '$M'" K -c "touch '$M'"
}

@test "--help prints usage on stdout and exits 0" {
	local conns0; conns0=$(conns)
	run -0 --separate-stderr dlock --help
	assert_equal "$stderr" ''
	assert_output --partial 'KEY'
	assert_output --partial '--nonblock'
	run -0 --separate-stderr dlock -h
	assert_equal "$stderr" ''
	assert_output --partial '--nonblock'
	[[ ! -e $M ]]
	assert_equal "$(conns)" "$((conns0 + 1))"
}

@test "--version prints the version and exits 0" {
	run -0 --separate-stderr dlock --version
	assert_equal "$stderr" ''
	assert_output --regexp '^dlock [0-9]+\.[0-9]+\.[0-9]+$'
	run -0 --separate-stderr dlock -V
	assert_output --regexp '^dlock [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "history: -n is --count, --nonblock does not apply" {
	usage_error history -S "$U" --nonblock K
	[[ ${stderr_lines[0]} == "dlock: --nonblock does not apply to 'dlock history'" ]] ||
		fail "stderr: $stderr"
	usage_error history -S "$U" -n 0 K
	[[ ${stderr_lines[0]} == "dlock: bad --count '0': 1 to 1000000" ]] ||
		fail "stderr: $stderr"
}

# The first word that is neither an option nor an option's value decides
# the form: options may come before a subcommand and apply to it; a lock
# named as a subcommand is reached through run or after --. One row per
# order: status, a regex the output must match, the arguments (after -S).
@test "options and subcommands in any order: a table" {
	local row want re args
	rcli r set dlock:held x >/dev/null
	while IFS='|' read -r want re args; do
		[[ -n $want ]] || continue
		eval "args=($args)"
		run "-$want" --separate-stderr dlock "${args[@]}"
		[[ $output$stderr =~ $re ]] ||
			fail "dlock ${args[*]}: output '$output' stderr '$stderr' does not match /$re/"
	done <<-ROWS
	1|^K: free|status -S "$U" K
	1|^K: free|-S "$U" status K
	1|^K: free|status K -S "$U"
	1|^\{|--json -S "$U" status K
	1|^\{|-S "$U" --json status K
	0|^$|-S "$U" -q status held
	0|^dlock:status$|-S "$U" -- status sh -c 'echo \$DLOCK_KEY'
	0|^dlock:status$|run -S "$U" status -- sh -c 'echo \$DLOCK_KEY'
	0|^dlock:status$|-S "$U" run status -- sh -c 'echo \$DLOCK_KEY'
	0|^dlock:K$|-S "$U" -n K sh -c 'echo \$DLOCK_KEY'
	0|^dlock:K$|-S"$U" -w 5 K sh -c 'echo \$DLOCK_KEY'
	0|^dlock:K$|--server="$U" --wait=5 K sh -c 'echo \$DLOCK_KEY'
	0|^hi$|-S "$U" K -c 'echo hi'
	0|^[0-9a-f]{32}$|-S "$U" -t 5 acquire A
	0|^A: held|-S "$U" status A
	0|^broken: |-S "$U" --force release A
	64|does not apply to 'dlock status'|-w 5 -S "$U" status K
	64|does not apply to 'dlock history'|--nonblock -S "$U" history K
	0|^Usage:|help
	0|^Usage:|-S "$U" help
	0|^dlock [0-9]+\.[0-9]+\.[0-9]+$|version
	64|help takes no argument|help make
	64|version takes no argument|-S "$U" version K
	127|-n: command not found \(options go before KEY|-S "$U" nightly -n echo hi
	127|--ttl: command not found \(options go before KEY|-S "$U" nightly --ttl 5 echo hi
	127|^dlock: nightly: nosuchcommand: command not found$|-S "$U" nightly nosuchcommand
	ROWS
}
