#!/usr/bin/env bats
# examples.bats - the man page's and README's examples for acquire/extend/
# release and the systemd fail-over unit, taken from those files and run as
# written against a real server (DLOCK_SERVERS names it, dlock is on PATH).
# The pipeline run end to end waits for dlock release.

load helpers

setup() {
	common_setup
	TOP=$BATS_TEST_DIRNAME/..
	mkdir -p "$T/bin"
	ln -s "$DLOCK" "$T/bin/dlock"
	export PATH=$T/bin:$PATH
	start_redis r
	DLOCK_SERVERS=$(sock_url r)
	export DLOCK_SERVERS
}

# man_example TEXT: the man page's code block after the paragraph that
# starts with TEXT, as the reader sees it (scdoc's \\ is \)
man_example() {
	awk -v start="$1" '
		index($0, start) == 1 { found = 1 }
		found && /^```$/ { if (inside) exit; inside = 1; next }
		inside' "$TOP/man/dlock.1.scd" | sed 's/\\\\/\\/g'
}

@test "the pipeline example stops when another holds the lock" {
	local script
	script=$(man_example 'A pipeline whose steps run as separate processes')
	run -0 dlock acquire -t 60 staging
	# -w 600 would wait ten minutes: the same script, not waiting
	printf '%s\n' "${script//-w 600/-n}" >"$T/pipeline.sh"
	run -1 --separate-stderr sh -x "$T/pipeline.sh"
	assert_output ''
	# it stopped at acquire: nothing after it ran, not even the eval
	# (vars holds what --export prints on failure: "exit 1", for an eval)
	[[ ${stderr_lines[-1]} == '+ vars=exit 1' ]] ||
		fail "went on after acquire failed: $stderr"
}

# serves PORT: the web server answers on PORT with the file it serves
serves() {
	"$PYTHON" -c 'import sys, urllib.request
sys.exit(urllib.request.urlopen(sys.argv[1], timeout=1).read() != b"here\n")' \
		"http://127.0.0.1:$1/index.html" 2>/dev/null
}

@test "the systemd unit's service moves to the standby when its host dies" {
	local unit exec port
	unit=$(man_example 'A service that runs on one host at a time')
	[[ $unit == *Restart=always* && $unit == *KillMode=mixed* ]] || fail "unit: $unit"
	# ExecStart, its continuation line joined
	exec=$(sed -n '/^ExecStart=/,/[^\\]$/p' <<<"$unit" | sed 's/^ExecStart=//; s/\\$//' | tr -s '\n\t' '  ')
	[[ $exec == '/usr/bin/dlock --notify -w 3600 -t 15 web-primary '* ]] || fail "ExecStart: $exec"
	# Two hosts, each with its own port and its own /var/www (this host's
	# servers come from DLOCK_SERVERS, as the unit's Environment= sets it).
	local a b
	a=$(free_port) b=$(free_port)
	mkdir -p "$T/a" "$T/b"
	echo here >"$T/a/index.html"
	echo here >"$T/b/index.html"
	exec=${exec#/usr/bin/dlock }
	exec=${exec/\/usr\/bin\/python3/$PYTHON}
	exec=${exec% }
	# shellcheck disable=SC2086 # the unit's words
	start_bg a ${exec/\/var\/www 8080/$T/a $a}
	wait_until 10 serves "$a" || fail "host a never served: $(cat "$T/a.err")"
	# shellcheck disable=SC2086
	start_bg b ${exec/\/var\/www 8080/$T/b $b}
	sleep 1
	serves "$b" && fail "both hosts serve"
	# host a dies: nothing renews its lease; b takes over when it runs out
	kill -KILL "$(<"$T/a.dlock")"
	wait_until 25 serves "$b" || fail "the standby never took over: $(cat "$T/b.err")"
	serves "$a" && fail "host a still serves"
	true
}

# words LINE: LINE's blank-separated words, one a line
words() { tr -s ' ' '\n' <<<"$1" | sed '/^$/d'; }

@test "the status examples run as written and show dlock status's form" {
	local ex cmd header
	ex=$(man_example 'Which host runs the service of the unit above')
	header=$(grep '^  HOST' <<<"$ex") || fail "no holders' header: $ex"
	hold h web-primary
	wait_ready h
	cmd=$(sed -n 's/^\$ \(dlock status web-primary\)$/\1/p' <<<"$ex")
	[[ $cmd ]] || fail "no 'dlock status web-primary' in: $ex"
	run -0 $cmd	# as written: words, no quotes
	assert_line --index 0 --regexp '^web-primary: held, exclusive, fencing counter [0-9]+$'
	assert_equal "$(words "${lines[1]}")" "$(words "$header")"
	[[ ${lines[2]} == *" $T/job $T/h exit" ]] || fail "holder line: ${lines[2]}"
	cmd=$(sed -n 's/^\$ \(dlock status -q .*\)$/\1/p' <<<"$ex")
	[[ $cmd ]] || fail "no 'dlock status -q' in: $ex"
	run -0 sh -c "$cmd"
	assert_output ''
	finish h
	run -0 sh -c "$cmd"
	assert_output 'no host serves web-primary'
}

@test "the history example runs as written and shows dlock history's form" {
	local ex cmd header
	ex=$(man_example 'Whether the nightly report ran')
	header=$(grep '^WHEN' <<<"$ex") || fail "no header: $ex"
	run -0 dlock -n nightly-report sh -c 'exit 0'
	run -3 dlock -n nightly-report sh -c 'exit 3'
	run -0 dlock -n nightly-report true
	cmd=$(sed -n 's/^\$ \(dlock history .*\)$/\1/p' <<<"$ex")
	[[ $cmd ]] || fail "no 'dlock history' in: $ex"
	run -0 $cmd	# as written: words, no quotes
	assert_equal "${#lines[@]}" 5
	assert_equal "$(words "${lines[0]}")" "$(words "$header")"
	assert_line --index 1 --regexp '^[^ ]+ ago +released .* 0 +[0-9.]+s +true$'
	assert_line --index 3 --regexp '^[^ ]+ ago +released .* 3 +[0-9.]+s +sh -c exit 3$'
}

@test "the descriptor form's --export example runs as written: the work gets the fence, make re-enters" {
	local script
	script=$(man_example '*dlock --export* _fd_ takes the lock')
	[[ $script == *'dlock --export -n 9'* ]] || fail "example: $script"
	printf '#!/bin/sh\necho "report $*" >>"%s/log"\n' "$T" >"$T/bin/write-report"
	printf '#!/bin/sh\necho "$* $DLOCK_FENCE" >>"%s/log"\n' "$T" >"$T/bin/make"
	chmod +x "$T/bin/write-report" "$T/bin/make"
	printf '%s\n' "${script//\/var\/lock\/job/$T/job}" >"$T/example.sh"
	run -0 sh "$T/example.sh"
	run -0 cat "$T/log"
	assert_line -n 0 --regexp '^report --fence [0-9]+$'
	assert_line -n 1 "publish ${lines[0]#report --fence }"
	wait_until 5 key_gone r "dlock:$T/job"
}

@test "the fleet's spread example runs as written: one line per acquisition, time and host" {
	local ex cmd
	command -v jq >/dev/null || skip_unless_strict "no jq"
	ex=$(man_example 'At fleet scale the firings spread')
	# the command: from "$ dlock history" to the line that closes its quote
	cmd=$(awk '/^\$ dlock history/ { on = 1; sub(/^\$ /, "") } on { print } on && /'"'"'$/ { exit }' <<<"$ex")
	[[ $cmd == "dlock history --json"*"| jq -r"* ]] || fail "no 'dlock history | jq' in: $ex"
	run -0 dlock -n sync-mirror true
	run -0 dlock -n sync-mirror true
	run -0 sh -c "$cmd"
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} $(hostname)\$"
}
