#!/usr/bin/env bats
# logs.bats - --log-format json: every line dlock prints on stderr is one
# JSON object (time, level, lock, event, server, message, fields), usage
# errors included once the command line or the environment names the
# format; with --verbose, the wait, the grant, renewals and the release.

load helpers
load modes_helpers

setup() {
	common_setup
	start_redis r
	U=$(sock_url r)
}

# lines FILE: each line of FILE as JSON (python's parser), one line each
# "level event lock server | message | fields"; fails on a line that is
# not one JSON object with exactly the seven keys
lines_of() {
	"$PYTHON" - "$1" <<'PY'
import json, sys, re
for line in open(sys.argv[1], encoding="utf-8"):
    d = json.loads(line)
    assert sorted(d) == ["event", "fields", "level", "lock", "message", "server", "time"], d
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", d["time"]), d["time"]
    assert d["level"] in ("error", "warning", "info"), d
    assert isinstance(d["fields"], dict), d
    print(d["level"], d["event"], d["lock"], d["server"], "|", d["message"], "|",
          json.dumps(d["fields"], sort_keys=True))
PY
}

@test "an error is one JSON object naming the lock and the server" {
	run -69 --separate-stderr dlock -S "unix:$T/nothing" --log-format json K true
	echo "$stderr" >"$T/err"
	run -0 lines_of "$T/err"
	assert_equal "${#lines[@]}" 1
	assert_equal "$output" "error error K unix:$T/nothing | unix:$T/nothing: no such file or directory | {}"
	# the same in text, by default
	run -69 --separate-stderr dlock -S "unix:$T/nothing" K true
	assert_equal "$stderr" "dlock: K: unix:$T/nothing: no such file or directory"
}

@test "a name's control bytes: escaped in text (one line), as they are in JSON's lock" {
	run -69 --separate-stderr dlock -S "unix:$T/nothing" $'a\nb\x01' true
	assert_equal "$stderr" "dlock: a\\nb\\x01: unix:$T/nothing: no such file or directory"
	run -69 --separate-stderr dlock -S "unix:$T/nothing" --log-format json $'a\nb' true
	[[ $(jq -r .lock <<<"$stderr") == $'a\nb' ]] || fail "stderr: $stderr"
}

@test "usage errors: JSON when the command line or DLOCK_LOG_FORMAT says so" {
	run -64 --separate-stderr dlock --log-format json -w soon K true
	echo "$stderr" >"$T/err"
	run -0 lines_of "$T/err"
	assert_equal "$output" "error usage None None | bad --wait 'soon' | {}"
	# after the error, before the option: still known (read first)
	run -64 --separate-stderr dlock -w soon --log-format=json K true
	echo "$stderr" >"$T/err"
	run -0 lines_of "$T/err"
	assert_equal "$output" "error usage None None | bad --wait 'soon' | {}"
	DLOCK_LOG_FORMAT=json run -64 --separate-stderr dlock status --bogus
	echo "$stderr" >"$T/err"
	run -0 lines_of "$T/err"
	assert_equal "$output" "error usage None None | unknown option '--bogus' | {}"
	# after KEY, --log-format is the command's
	run -64 --separate-stderr dlock -w soon K cmd --log-format json
	assert_equal "$stderr" "dlock: bad --wait 'soon'"
	# a bad value is said in text, as is a bad DLOCK_LOG_FORMAT
	run -64 --separate-stderr dlock --log-format yaml K true
	assert_equal "$stderr" "dlock: bad --log-format 'yaml': text or json"
	DLOCK_LOG_FORMAT=yaml run -64 --separate-stderr dlock -S "$U" K true
	assert_equal "$stderr" "dlock: bad DLOCK_LOG_FORMAT 'yaml' (text or json)"
	# a usage error found later, in main
	run -64 --separate-stderr dlock -S "$U" --log-format json --min-hold 50 K true
	echo "$stderr" >"$T/err"
	run -0 lines_of "$T/err"
	assert_output --partial "error usage None None | --min-hold 50 is longer than the lease"
}

@test "the config file's log-format, and the command line over it" {
	printf 'log-format = json\n' >"$T/conf"
	run -69 --separate-stderr dlock --config "$T/conf" -S "unix:$T/nothing" K true
	echo "$stderr" >"$T/err"
	run -0 lines_of "$T/err"
	assert_output --partial "error error K unix:$T/nothing |"
	run -69 --separate-stderr dlock --config "$T/conf" --log-format text -S "unix:$T/nothing" K true
	assert_equal "$stderr" "dlock: K: unix:$T/nothing: no such file or directory"
	printf 'log-format = xml\n' >"$T/bad"
	run -64 --separate-stderr dlock --config "$T/bad" -S "$U" K true
	assert_equal "$stderr" "dlock: $T/bad:1: bad log-format 'xml' (text or json)"
}

@test "--verbose: the wait, the grant, each renewal, the release, in order" {
	hold h -S "$U" K
	wait_ready h
	start_bg w -S "$U" --log-format json --verbose -t 0.6 K sleep 0.5
	wait_until 5 grep -q '"event":"wait"' "$T/w.err" || fail "no wait: $(cat "$T/w.err")"
	finish h
	reap w
	assert_equal "$bg_status" 0
	run -0 lines_of "$T/w.err"
	echo "$output" | sed 's/^/# /' >&3
	run -0 awk '{ print $2 }' <<<"$output"
	assert_equal "$(uniq <<<"$output" | tr '\n' ' ')" "wait acquired renewed released "
	run -0 lines_of "$T/w.err"
	assert_line --regexp "^info wait K None \\| held by .* pid $(<"$T/h.dlock") \\($T/job $T/h exit\\) for [0-9]+s; waited 0s \\| \\{\"waited_ms\": [0-9]+\\}\$"
	assert_line --regexp '^info acquired K None \| acquired K after [0-9.]+s, fence [0-9]+ \| \{"fence": "[0-9]+", "waited_ms": [0-9]+\}$'
	assert_line --regexp '^info released K None \| released K after 0\.[0-9]+s \| \{"exit_status": 0, "held_ms": [0-9]+\}$'
	# no terminal codes, nothing but JSON lines; flock's lines on stdout
	grep -q $'[\r\e]' "$T/w.err" && fail "terminal codes: $(cat -v "$T/w.err")"
	assert_equal "$(head -1 "$T/w.out" | cut -d' ' -f2-4)" 'getting lock took'
}

@test "a lost lease is an error event 'lost'; the even-servers warning a warning" {
	# a command that says nothing when it is stopped (sh would)
	start_bg h -S "$U" --log-format json K sh -c 'touch "$0"; exec sleep 30' "$T/h.ready"
	wait_until 5 test -e "$T/h.ready" || fail "no job: $(cat "$T/h.err")"
	run -0 dlock -S "$U" release --force K
	reap h
	assert_equal "$bg_status" 75
	run -0 lines_of "$T/h.err" || fail "$(cat "$T/h.err")"
	assert_line --regexp '^error lost K None \| lease lost: broken by .*; stopping the job \| \{\}$'
	start_redis r2
	run -0 --separate-stderr dlock -S "$U" -S "$(sock_url r2)" --verbose --log-format json K true
	echo "$stderr" >"$T/err"
	run -0 lines_of "$T/err"
	assert_line "warning warning K None | warning: 2 servers: an even number tolerates no more failures than 1 | {}"
}
