#!/usr/bin/env bats
# utillinux.bats - util-linux's own tests of flock(1), run against dlock
# through tests/util-linux/flock (dlock under flock's name, against a real
# redis-server) and tests/util-linux/functions.sh: every sub-test's output
# and error log must equal util-linux's expected files. See
# tests/util-linux/README.md for what is run verbatim and what is skipped.

load helpers

setup() {
	common_setup
	start_redis r
	UL=$BATS_TEST_DIRNAME/util-linux
	export UL_DLOCK_SERVER=$(sock_url r)
	export UL_OUTDIR=$T/out UL_EXPECTED=$T/expected UL_RESULTS=$T/results
	export UL_FLOCK=$UL/flock UL_STRERROR=$UL/strerror
	mkdir -p "$T/expected/flock" "$T/ts/flock"
	cp "$UL"/expected/flock/* "$T/expected/flock/"
	cp "$UL/functions.sh" "$T/"
	: >"$UL_RESULTS"
}

# ul_run NAME [SECONDS]: util-linux's ts/flock/NAME, as copied to $T/ts
# (where it finds functions.sh two levels up), within SECONDS
ul_run() {
	[[ -e $T/ts/flock/$1 ]] || cp "$UL/ts/flock/$1" "$T/ts/flock/"
	timeout "${2:-60}" bash "$T/ts/flock/$1" </dev/null 3>&- ||
		fail "$1: exit $?: $(cat "$UL_RESULTS")"
	[[ -s $UL_RESULTS ]] || fail "$1: no result"
	if grep -q '^FAILED' "$UL_RESULTS"; then
		fail "$(cat "$UL_RESULTS" "$UL_RESULTS.diff" 2>/dev/null)"
	fi
}

# results_are NAME...: an "ok" line for each NAME, and no other line
results_are() {
	local want
	want=$(printf 'ok %s\n' "$@")
	assert_equal "$(grep -v '^#' "$UL_RESULTS")" "$want"
}

@test "util-linux flock: the flock(2) pass, verbatim (fd case included)" {
	# The --fcntl pass is dropped (see the fcntl test below): a copy, with
	# the one word taken out of the loop, checked to be there once.
	local loop='for api in flock fcntl ; do'
	(($(grep -cxF "$loop" "$UL/ts/flock/flock") == 1)) ||
		fail "ts/flock/flock no longer has '$loop'"
	sed "s/^$loop\$/for api in flock ; do/" "$UL/ts/flock/flock" >"$T/ts/flock/flock"
	# and its part of the whole test's output
	sed -n '1,/^Unlocked$/p' "$UL/expected/flock/flock" >"$T/expected/flock/flock"
	[[ $(wc -l <"$T/expected/flock/flock") == 4 ]] ||
		fail "expected/flock/flock: $(cat "$T/expected/flock/flock")"
	ul_run flock
	results_are flock-non-block flock-no-fork flock-shared flock-exclusive \
		flock-fd flock-timeout flock-time-check flock
}

@test "util-linux flock: close (--close, --fd, --command), verbatim" {
	ul_run close
	results_are close
}

@test "util-linux flock: unlock (the descriptor form, --unlock, --verbose), verbatim" {
	ul_run unlock
	results_are unlock
}

@test "util-linux flock: the --fcntl cases and range-lock are refused by design" {
	# What they test has no keyed meaning: dlock refuses the options (64).
	run -64 "$UL_FLOCK" --fcntl --shared "$T/lockfile" true
	run -64 "$UL_FLOCK" --start 1 --length 2 "$T/lockfile" true
	skip "flock-fcntl-* and range-lock: byte-range (fcntl) locks have no keyed equivalent; dlock refuses --fcntl, --start and --length (64)"
}
