#!/usr/bin/env bats
# metrics.bats - --metrics-dir: DIR/dlock_NAME.prom after each run, in the
# Prometheus text format as prometheus_client's parser (and promtool, where
# installed) read it: outcome, exit status, times, renewals, last success;
# escaped names; a directory that cannot be written is one warning.

load helpers

setup() {
	common_setup
	start_redis r
	U=$(sock_url r)
	M=$T/metrics
	mkdir -p "$M"
}

# samples FILE: "NAME LABEL=VALUE,... VALUE" a sample, as prometheus_client
# parses FILE (it fails on what is not the text format)
samples() {
	"$PYTHON" - "$1" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
for fam in text_string_to_metric_families(open(sys.argv[1], encoding="utf-8").read()):
    assert fam.documentation and fam.type == "gauge", fam
    for s in fam.samples:
        labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
        print("%s %s %s" % (s.name, labels, repr(s.value)))
PY
}

# value FILE METRIC [OUTCOME]: the value of METRIC for lock K
value() {
	local l="engine=redis,lock=K"
	[[ -z ${3:-} ]] || l="engine=redis,lock=K,outcome=$3"
	samples "$1" | awk -v m="$2" -v l="$l" '$1 == m && $2 == l { print $3 }'
}

outcome() {	# outcome FILE: the outcome whose value is 1
	samples "$1" | awk '$1 == "dlock_last_outcome" && $3 == "1.0" {
		sub(/.*outcome=/, "", $2); print $2 }'
}

promtool_ok() {
	command -v promtool >/dev/null || skip_unless_strict "no promtool (Debian: prometheus)"
	promtool check metrics <"$1" || fail "promtool: $(promtool check metrics <"$1" 2>&1)"
}

@test "a run writes dlock_K.prom: outcome, exit status, times, renewals" {
	run -3 dlock -S "$U" --metrics-dir "$M" -t 0.6 K sh -c 'sleep 0.5; exit 3'
	[[ -e $M/dlock_K.prom ]] || fail "no file: $(ls -a "$M")"
	run -0 samples "$M/dlock_K.prom"
	assert_equal "$(outcome "$M/dlock_K.prom")" acquired
	assert_equal "$(value "$M/dlock_K.prom" dlock_last_exit_status)" 3.0
	assert_equal "$(value "$M/dlock_K.prom" dlock_last_success_timestamp_seconds)" 0.0
	awk 'BEGIN { exit !(ARGV[1] >= 0.5 && ARGV[1] < 5) }' \
		"$(value "$M/dlock_K.prom" dlock_last_held_seconds)" || fail "held: $output"
	awk 'BEGIN { exit !(ARGV[1] >= 1) }' \
		"$(value "$M/dlock_K.prom" dlock_last_renewals)" || fail "renewals: $output"
	assert_equal "$(value "$M/dlock_K.prom" dlock_last_renewal_failures)" 0.0
	local now ran
	now=$(date +%s) ran=$(value "$M/dlock_K.prom" dlock_last_run_timestamp_seconds)
	awk 'BEGIN { exit !(ARGV[1] - ARGV[2] < 10 && ARGV[2] - ARGV[1] < 10) }' "$now" "$ran" ||
		fail "last run $ran, now $now"
	# nothing left beside it: no temporary file
	assert_equal "$(ls -A "$M")" dlock_K.prom
	[[ $(stat -c %a "$M/dlock_K.prom") == 644 ]] || fail "mode $(stat -c %a "$M/dlock_K.prom")"
	promtool_ok "$M/dlock_K.prom"
}

@test "a success is remembered across a conflict and a failure" {
	run -0 dlock -S "$U" --metrics-dir "$M" K true
	local first
	first=$(value "$M/dlock_K.prom" dlock_last_success_timestamp_seconds)
	[[ $first != 0.0 && -n $first ]] || fail "no success: $(cat "$M/dlock_K.prom")"
	hold h -S "$U" K
	wait_ready h
	run -1 dlock -S "$U" --metrics-dir "$M" -n K true
	assert_equal "$(outcome "$M/dlock_K.prom")" conflict
	assert_equal "$(value "$M/dlock_K.prom" dlock_last_exit_status)" 1.0
	assert_equal "$(value "$M/dlock_K.prom" dlock_last_held_seconds)" 0.0
	assert_equal "$(value "$M/dlock_K.prom" dlock_last_success_timestamp_seconds)" "$first"
	run -7 dlock -S "$U" --metrics-dir "$M" -E 7 -w 0.3 K true
	awk 'BEGIN { exit !(ARGV[1] >= 0.3) }' \
		"$(value "$M/dlock_K.prom" dlock_last_wait_seconds)" || fail "waited: $(cat "$M/dlock_K.prom")"
	finish h
	promtool_ok "$M/dlock_K.prom"
}

@test "outcomes: unavailable, broken, lost, failed" {
	run -69 dlock -S "unix:$T/nothing" --metrics-dir "$M" K true
	assert_equal "$(outcome "$M/dlock_K.prom")" unavailable
	assert_equal "$(value "$M/dlock_K.prom" dlock_last_exit_status)" 69.0
	# broken: dlock release --force tells the holder at once
	hold h -S "$U" --metrics-dir "$M" K
	wait_ready h
	run -0 dlock -S "$U" release --force K
	reap h
	assert_equal "$bg_status" 75
	assert_equal "$(outcome "$M/dlock_K.prom")" broken
	# lost: the key deleted behind the holder's back, found at a renewal
	hold l -S "$U" --metrics-dir "$M" -t 0.6 K
	wait_ready l
	rcli r del dlock:K >/dev/null
	reap l
	assert_equal "$bg_status" 75
	assert_equal "$(outcome "$M/dlock_K.prom")" lost
	run -127 dlock -S "$U" --metrics-dir "$M" K /no/such/command
	assert_equal "$(outcome "$M/dlock_K.prom")" failed
	assert_equal "$(value "$M/dlock_K.prom" dlock_last_exit_status)" 127.0
}

@test "a name is escaped in the file name, and is the lock label as it is" {
	local name='nightly/db "1"\x'
	run -0 dlock -S "$U" --metrics-dir "$M" "$name" true
	assert_equal "$(ls -A "$M")" 'dlock_nightly_2fdb_20_221_22_5cx.prom'
	run -0 samples "$M/dlock_nightly_2fdb_20_221_22_5cx.prom"
	assert_line --partial "dlock_last_exit_status engine=redis,lock=$name 0.0"
	run -0 dlock -S "$U" --metrics-dir "$M" a_b true
	[[ -e $M/dlock_a_5fb.prom ]] || fail "$(ls -A "$M")"
	promtool_ok "$M/dlock_nightly_2fdb_20_221_22_5cx.prom"
}

@test "-k: a file for each key" {
	run -0 dlock -S "$U" --metrics-dir "$M" -k A -k B true
	assert_equal "$(ls -A "$M" | sort | tr '\n' ' ')" 'dlock_A.prom dlock_B.prom '
	samples "$M/dlock_B.prom" | grep -q '^dlock_last_outcome engine=redis,lock=B,outcome=acquired 1.0$' ||
		fail "$(cat "$M/dlock_B.prom")"
}

@test "a directory that cannot be written: one warning, the command's exit status" {
	run -5 --separate-stderr dlock -S "$U" --metrics-dir "$T/none" K sh -c 'exit 5'
	assert_equal "${#stderr_lines[@]}" 1
	[[ $stderr == "dlock: K: warning: --metrics-dir: $T/none: no such file or directory" ]] ||
		fail "stderr: $stderr"
	[[ ! -e $T/none ]]
}

@test "DLOCK_METRICS_DIR and the config file's metrics-dir; -F writes it from its helper" {
	DLOCK_METRICS_DIR=$M run -0 dlock -S "$U" E true
	[[ -e $M/dlock_E.prom ]] || fail "DLOCK_METRICS_DIR: $(ls -A "$M")"
	printf 'metrics-dir = %s\n' "$M" >"$T/conf"
	run -0 dlock --config "$T/conf" -S "$U" C true
	[[ -e $M/dlock_C.prom ]] || fail "config: $(ls -A "$M")"
	DLOCK_METRICS_DIR= run -0 dlock --config "$T/conf" -S "$U" N true
	[[ ! -e $M/dlock_N.prom ]] || fail "an empty DLOCK_METRICS_DIR is none"
	run -0 dlock -S "$U" --metrics-dir "$M" -F F sh -c 'exit 0'
	wait_until 5 test -e "$M/dlock_F.prom" || fail "-F: $(ls -A "$M")"
	run -0 samples "$M/dlock_F.prom"
	assert_line 'dlock_last_outcome engine=redis,lock=F,outcome=acquired 1.0'
	refute_line --partial dlock_last_exit_status
}
