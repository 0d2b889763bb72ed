# functions.sh - the part of util-linux's tests/functions.sh that its flock
# tests call, for dlock's tests/utillinux.bats: the same names, and the
# same comparison (a test's output against expected/, its error log against
# the .err file beside it, an absent one meaning an empty log). Each result
# is a line in $UL_RESULTS: "ok NAME", "FAILED NAME: why" (the diff in
# $UL_RESULTS.diff) or "skip NAME: why". The runner sets UL_OUTDIR,
# UL_EXPECTED, UL_FLOCK, UL_STRERROR and UL_RESULTS.

ts_init() {
	TS_TESTNAME=${0##*/}
	TS_COMPONENT=flock
	TS_OUTDIR=$UL_OUTDIR
	mkdir -p "$TS_OUTDIR" || exit 1
	TS_OUTPUT=$TS_OUTDIR/$TS_TESTNAME
	TS_ERRLOG=$TS_OUTPUT.err
	TS_EXPECTED=$UL_EXPECTED/$TS_COMPONENT/$TS_TESTNAME
	: >"$TS_OUTPUT"
	: >"$TS_ERRLOG"
	TS_CMD_FLOCK=$UL_FLOCK
	TS_HELPER_STRERROR=$UL_STRERROR
	TS_SUBNAME=
}

ts_result() { echo "$*" >>"$UL_RESULTS"; }

ts_skip() {
	ts_result "skip $TS_TESTNAME: $*"
	exit 0
}

ts_check_test_command() { [ -x "$1" ] || ts_skip "no $1"; }
ts_check_prog() { command -v "$1" >/dev/null || ts_skip "no $1"; }
ts_log() { echo "$1" >>"$TS_OUTPUT"; }
ts_cd() { cd "$1" || ts_die "cannot cd to $1"; }

ts_failed() {
	ts_result "FAILED $TS_TESTNAME${TS_SUBNAME:+-$TS_SUBNAME}: $*"
	exit 1
}

ts_die() {
	ts_result "FAILED $TS_TESTNAME: died: $*"
	exit 1
}

# compare NAME: the output and the error log against the expected ones
ts_compare() {
	local err=$TS_EXPECTED.err fail=
	[ -f "$err" ] || err=/dev/null
	diff -u "$TS_EXPECTED" "$TS_OUTPUT" >>"$UL_RESULTS.diff" 2>&1 || fail=output
	diff -u "$err" "$TS_ERRLOG" >>"$UL_RESULTS.diff" 2>&1 || fail="$fail error-log"
	if [ -n "$fail" ]; then
		ts_result "FAILED $1: $fail differs"
	else
		ts_result "ok $1"
	fi
}

ts_init_subtest() {
	TS_SUBNAME=$1
	TS_MAIN_OUTPUT=$TS_OUTPUT
	TS_MAIN_ERRLOG=$TS_ERRLOG
	TS_MAIN_EXPECTED=$TS_EXPECTED
	TS_OUTPUT=$TS_OUTDIR/$TS_TESTNAME-$1
	TS_ERRLOG=$TS_OUTPUT.err
	TS_EXPECTED=$UL_EXPECTED/$TS_COMPONENT/$TS_TESTNAME-$1
	: >"$TS_OUTPUT"
	: >"$TS_ERRLOG"
}

ts_finalize_subtest() {
	ts_compare "$TS_TESTNAME-$TS_SUBNAME"
	[ -z "$1" ] || ts_result "# $TS_TESTNAME-$TS_SUBNAME: $1"
	TS_OUTPUT=$TS_MAIN_OUTPUT
	TS_ERRLOG=$TS_MAIN_ERRLOG
	TS_EXPECTED=$TS_MAIN_EXPECTED
	TS_SUBNAME=
}

ts_finalize() {
	ts_compare "$TS_TESTNAME"
	exit 0
}
