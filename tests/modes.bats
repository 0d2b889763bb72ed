#!/usr/bin/env bats
# modes.bats - shared locks (-s) and semaphores (--limit N): shared holders
# coexist and exclude exclusive ones both ways, each holder has a lease of
# its own, --limit N admits N at once, a lock is held in one mode only,
# re-entry, and what redis-py's Lock makes of a shared lock. On one server
# of every engine (DLOCK_TEST_ENGINE; MySQL refuses -s and --limit, 64,
# which each test checks before it skips) and on three Redis (RedLock).

load helpers
load engine_helpers
load modes_helpers

setup_file() { engine_start; }
teardown_file() { engine_stop; }
setup() {
	engine_setup
	write_meet
}
teardown() { engine_teardown; }

check_shared_coexist() {
	start_bg a "${SRV[@]}" -s "$K" "$T/meet" "$T/a.in" "$T/b.in" "$T/go"
	start_bg b "${SRV[@]}" --shared "$K" "$T/meet" "$T/b.in" "$T/a.in" "$T/go"
	wait_until 5 test -e "$T/a.in" -a -e "$T/b.in" ||
		fail "the two shared holders did not run at once: $(cat "$T/a.err" "$T/b.err")"
	if_redis every_server zset type dlock:K
	if_redis every_server 2 zcard dlock:K
	if_redis every_server s get '{dlock:K}:mode'
	if_redis every_server 2 hlen '{dlock:K}:owner'
	on_redis || assert_equal "$(store_holders "$K")" 2
	touch "$T/go"
	reap a
	assert_equal "$bg_status" 0
	reap b
	assert_equal "$bg_status" 0
	nothing_left
}

@test "two -s holders run at the same time" {
	needs -s
	one_server
	check_shared_coexist
}

@test "RedLock: two -s holders run at the same time" {
	redis_only RedLock
	servers 3
	check_shared_coexist
}

check_shared_vs_exclusive() {
	hold s "${SRV[@]}" -s "$K"
	wait_ready s
	run -1 tdlock "${SRV[@]}" -n "$K" touch "$T/ran"
	run -1 tdlock "${SRV[@]}" -x -n "$K" touch "$T/ran"
	run -1 tdlock "${SRV[@]}" -e -w 0.3 "$K" touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "an exclusive command ran beside a shared holder"
	if_redis every_server 1 zcard dlock:K
	if_redis every_server "$(job_var s DLOCK_TOKEN)" zrange dlock:K 0 -1
	if ! on_redis; then
		assert_equal "$(store_holders "$K")" 1
		store_has_token "$K" "$(job_var s DLOCK_TOKEN)" || fail "holder: $(store_token "$K")"
	fi
	finish s
	assert_equal "$bg_status" 0

	hold x "${SRV[@]}" "$K"
	wait_ready x
	run -1 tdlock "${SRV[@]}" -s -n "$K" touch "$T/ran"
	run -1 tdlock "${SRV[@]}" --shared -w 0.3 "$K" touch "$T/ran"
	run -1 tdlock "${SRV[@]}" --limit 2 -n "$K" touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "a shared command ran beside an exclusive holder"
	if_redis every_server "$(job_var x DLOCK_TOKEN)" get dlock:K
	on_redis || store_has_token "$K" "$(job_var x DLOCK_TOKEN)" || fail "holder: $(store_token "$K")"
	finish x
	assert_equal "$bg_status" 0
	nothing_left
}

@test "shared and exclusive exclude each other both ways" {
	needs -s
	needs --limit
	one_server
	check_shared_vs_exclusive
}

@test "RedLock: shared and exclusive exclude each other both ways" {
	redis_only RedLock
	servers 3
	check_shared_vs_exclusive
}

check_dead_shared_holder() {
	local ta tb s
	hold a "${SRV[@]}" -s -t 1 "$K"
	hold b "${SRV[@]}" -s -t 1 "$K"
	wait_ready a
	wait_ready b
	ta=$(job_var a DLOCK_TOKEN) tb=$(job_var b DLOCK_TOKEN)
	if_redis every_server 2 zcard dlock:K
	assert_equal "$(srv_holders)" 2
	end_pids KILL "$(<"$T/b.dlock")" "$(<"$T/b.pid")"
	if on_redis; then
		wait_until 5 lapsed_all "$tb" || fail "b's lease did not lapse"
	else
		wait_until 5 eval '[[ $(store_holders "$K") == 1 ]]' || fail "b's lease did not lapse"
	fi
	# Past b's lease, with a renewing for 1 s leases all along:
	run -1 tdlock "${SRV[@]}" -n "$K" touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "an exclusive command ran beside the surviving shared holder"
	alive "$(<"$T/a.dlock")" || fail "a's dlock died: $(cat "$T/a.err")"
	alive "$(<"$T/a.pid")" || fail "a's command died"
	[[ ! -e $T/a.sig ]] || fail "a's command got SIG$(<"$T/a.sig")"
	if_redis every_server 1 zcard dlock:K
	if_redis every_server "$ta" zrange dlock:K 0 -1
	for s in "${NAMES[@]}"; do
		lapsed "$s" "$ta" && fail "$s: a's lease lapsed too"
		assert_equal "$(rcli "$s" hkeys '{dlock:K}:owner')" "$ta"
	done
	if ! on_redis; then
		assert_equal "$(store_holders "$K")" 1
		store_has_token "$K" "$ta" || fail "holder: $(store_token "$K")"
	fi
	# The lock is still a working shared lock.
	run -0 tdlock "${SRV[@]}" -s -n "$K" true
	if_redis every_server 1 zcard dlock:K
	assert_equal "$(srv_holders)" 1
	finish a
	assert_equal "$bg_status" 0
	nothing_left
}

@test "a killed shared holder's lease lapses; the other keeps its own" {
	needs -s
	one_server
	check_dead_shared_holder
}

@test "RedLock: a killed shared holder's lease lapses; the other keeps its own" {
	redis_only RedLock
	servers 3
	check_dead_shared_holder
}

# $T/worker I SOCK...: logs "enter I" with its slot on each server (from
# {dlock:K}:slots, for the failure message) and "leave I" in $T/log; stays
# until three have entered (4 s at most), then 0.2 s more.
write_worker() {
	cat >"$T/worker" <<'EOF'
#!/bin/sh
log=$(dirname "$0")/log
i=$1; shift
slots=
for s; do
	slots="$slots$(redis-cli -s "$s" hget '{dlock:K}:slots' "$DLOCK_TOKEN"),"
done
echo "enter $i slots $slots" >>"$log"
n=0
while [ "$(grep -c enter "$log")" -lt 3 ] && [ $n -lt 80 ]; do
	n=$((n + 1))
	sleep 0.05
done
sleep 0.2
echo "leave $i" >>"$log"
EOF
	chmod +x "$T/worker"
}

check_limit() {
	local i max s socks=()
	write_worker
	for s in "${NAMES[@]}"; do socks+=("$(sock "$s")"); done
	for i in $(seq 10); do
		start_bg "w$i" "${SRV[@]}" --limit 3 "$K" "$T/worker" "$i" "${socks[@]}"
	done
	for i in $(seq 10); do
		reap "w$i" 30
		((bg_status == 0)) || fail "w$i: status $bg_status: $(cat "$T/w$i.err")"
	done
	assert_equal "$(grep -c enter "$T/log")" 10
	assert_equal "$(grep -c leave "$T/log")" 10
	max=$(awk '$1 == "enter" { n++; if (n > max) max = n } $1 == "leave" { n-- }
		END { print max }' "$T/log")
	echo "# at most $max at once" >&3
	((max == 3)) || fail "$max ran at once with --limit 3: $(tr '\n' ';' <"$T/log")"
	nothing_left
}

@test "--limit 3: 10 workers, never more than 3 at once, all finish" {
	needs --limit
	one_server
	check_limit
}

@test "RedLock: --limit 3: 10 workers, never more than 3 at once, all finish" {
	redis_only RedLock
	servers 3
	check_limit
}

# $T/reader: a shared holder's command, 1 s long; $T/writer: the exclusive
# one, 0.5 s. Each marks itself running, then looks for the other kind: a
# reader and the writer that overlap at all see each other at the start of
# the later one, and leave $T/overlap.
write_readers_writer() {
	cat >"$T/reader" <<'EOF2'
#!/bin/sh
d=$(dirname "$0")
: >"$d/r.$$"
[ -e "$d/w.on" ] && echo "reader $$ beside the writer" >>"$d/overlap"
sleep 1
rm -f "$d/r.$$"
EOF2
	cat >"$T/writer" <<'EOF2'
#!/bin/sh
d=$(dirname "$0")
date +%s%N >"$d/w.in"
: >"$d/w.on"
set -- "$d"/r.*
[ -e "$1" ] && echo "writer beside readers: $*" >>"$d/overlap"
sleep 0.5
rm -f "$d/w.on"
EOF2
	chmod +x "$T/reader" "$T/writer"
}

# Readers arrive every 0.3 s for 8 s, each holding 1 s: the lock is never
# free of readers. A writer that comes after 1 s must get in all the same,
# within about two reader lifetimes (the readers that hold it then finish;
# the ones that come later wait behind the writer), and never beside one.
check_writer_not_starved() {
	local n t0 waited_ms spawner f
	write_readers_writer
	(
		n=0 end=$((SECONDS + 8))
		while ((SECONDS < end)); do
			n=$((n + 1))
			{
				timeout -k 2 30 "$DLOCK" "${SRV[@]}" -s "$K" "$T/reader" \
					>"$T/reader$n.err" 2>&1 </dev/null
				echo $? >"$T/reader$n.status"
			} &
			sleep 0.3
		done
		wait
	) 3>&- &
	spawner=$!
	track $spawner
	sleep 1
	t0=$(date +%s%N)
	run -0 --separate-stderr tdlock "${SRV[@]}" -w 5 "$K" "$T/writer"
	waited_ms=$((($(<"$T/w.in") - t0) / 1000000))
	echo "# the writer got in after $waited_ms ms" >&3
	# Two reader lifetimes and a half: a busy machine (CI runs two tests
	# at once) starts each reader late; a starved writer waits all of -w.
	((waited_ms < 3000)) || fail "the writer waited $waited_ms ms"
	# The readers keep coming, get in again after the writer, and end.
	wait_until 30 dead "$spawner" || fail "the readers did not end"
	n=0
	for f in "$T"/reader*.status; do
		n=$((n + 1))
		assert_equal "$(<"$f")" 0
	done
	# 26 when each start is instant; a loaded machine spawns fewer, and
	# a dozen still overlap one another (each holds 1 s, one every 0.3 s)
	((n >= 12)) || fail "only $n readers"
	[[ ! -e $T/overlap ]] || fail "$(cat "$T/overlap")"
	nothing_left
}

@test "a writer gets in under a stream of readers (writers first)" {
	needs -s
	one_server
	check_writer_not_starved
}

@test "RedLock: a writer gets in under a stream of readers (writers first)" {
	redis_only RedLock
	servers 3
	check_writer_not_starved
}

# writer_marked N: N exclusive waiters are marked on every server (Redis),
# wait in the store (the others: the readers hold it, so every waiter is)
writer_marked() {
	if on_redis; then
		all_are "$1" zcard '{dlock:K}:writers'
	else
		waiting "$K" "$1"
	fi
}

# A waiting writer holds up new shared requests (-s -n fails), even while
# the lock is held only shared; one that gives up or is killed does not.
check_writer_mark() {
	local t0 ms
	hold r1 "${SRV[@]}" -s "$K"
	wait_ready r1
	# a writer that gives up: no mark left, readers get in at once
	run -1 tdlock "${SRV[@]}" -w 0.5 "$K" touch "$T/ran"
	wait_until 2 writer_marked 0 || fail "a writer that gave up is still marked"
	run -0 tdlock "${SRV[@]}" -s -n "$K" true
	# a writer that waits: -s -n fails, -s waits for it
	start_bg w "${SRV[@]}" "$K" touch "$T/w.ran"
	wait_until 5 writer_marked 1 || fail "the waiting writer is not marked"
	run -1 tdlock "${SRV[@]}" -s -n "$K" touch "$T/ran"
	hold r2 "${SRV[@]}" -s "$K"
	sleep 0.5
	[[ ! -e $T/r2.ready ]] || fail "a reader got in before the waiting writer"
	[[ ! -e $T/ran ]] || fail "a reader ran"
	finish r1
	assert_equal "$bg_status" 0
	reap w
	assert_equal "$bg_status" 0
	[[ -e $T/w.ran ]] || fail "the writer did not run"
	wait_ready r2	# woken by the writer's release
	finish r2
	assert_equal "$bg_status" 0
	nothing_left

	# a writer killed while it waits holds readers up only until its
	# mark lapses (6 s + 2 * --node-timeout after its last try, 6.4 s):
	# a reader waiting behind it tries again then, told so by its
	# refusals, and drops the mark
	# (-t 2: where a waiter holds a place in the store, its session or
	# lease, ZooKeeper's and etcd's, lapses then)
	hold r3 "${SRV[@]}" -s "$K"
	wait_ready r3
	start_bg w2 "${SRV[@]}" --node-timeout 0.2 -t 2 "$K" touch "$T/w2.ran"
	wait_until 5 writer_marked 1 || fail "the waiting writer is not marked"
	end_pids KILL "$(<"$T/w2.dlock")"
	t0=$(now_ms)
	# (PostgreSQL: the killed waiter's session ends at once)
	[[ $ENGINE == postgres ]] || run -1 tdlock "${SRV[@]}" -s -n "$K" touch "$T/ran"
	hold r4 "${SRV[@]}" -s "$K"
	wait_ready r4 10
	ms=$(($(now_ms) - t0))
	echo "# a reader got in $ms ms after the waiting writer was killed" >&3
	((ms < 8000)) || fail "a reader got in $ms ms after the writer was killed (its liveness: 6.4 s)"
	writer_marked 0 || fail "a killed writer's mark is still there"
	run -0 tdlock "${SRV[@]}" -s -n "$K" true
	[[ ! -e $T/w2.ran ]] || fail "the killed writer ran"
	finish r4
	assert_equal "$bg_status" 0
	finish r3
	assert_equal "$bg_status" 0
	nothing_left
}

@test "a waiting writer holds up new readers; one that gives up or dies does not" {
	needs -s
	one_server
	check_writer_mark
}

@test "RedLock: a waiting writer holds up new readers; one that gives up or dies does not" {
	redis_only RedLock
	servers 3
	check_writer_mark
}

check_mode_mismatch() {
	hold h "${SRV[@]}" --limit 2 "$K"
	wait_ready h
	run -64 --separate-stderr tdlock "${SRV[@]}" --limit 3 "$K" touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	[[ $stderr == "dlock: $K: "*"held with --limit 2"* ]] || fail "stderr: $stderr"
	run -64 --separate-stderr tdlock "${SRV[@]}" -s "$K" touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	[[ $stderr == "dlock: $K: "*"held with --limit 2"* ]] || fail "stderr: $stderr"
	run -64 --separate-stderr tdlock "${SRV[@]}" -n -s "$K" touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	[[ ! -e $T/ran ]] || fail "the command ran"
	if_redis every_server 1 zcard dlock:K
	if_redis every_server 2 get '{dlock:K}:mode'
	assert_equal "$(srv_holders)" 1
	finish h
	assert_equal "$bg_status" 0

	hold s "${SRV[@]}" -s "$K"
	wait_ready s
	run -64 --separate-stderr tdlock "${SRV[@]}" --limit 2 "$K" touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	[[ $stderr == "dlock: $K: "*"held shared"* ]] || fail "stderr: $stderr"
	[[ ! -e $T/ran ]] || fail "the command ran"
	if_redis every_server s get '{dlock:K}:mode'
	assert_equal "$(srv_holders)" 1
	finish s
	assert_equal "$bg_status" 0
	nothing_left
}

@test "a --limit 2 lock refuses --limit 3 and -s with 64 (and -s refuses --limit)" {
	needs -s
	needs --limit
	one_server
	check_mode_mismatch
}

@test "RedLock: a --limit 2 lock refuses --limit 3 and -s with 64" {
	redis_only RedLock
	servers 3
	check_mode_mismatch
}

check_shared_reentry() {
	local socks="" s
	for s in "${NAMES[@]}"; do socks+=" $(sock "$s")"; done
	# The outer command runs dlock again on the same key, -s -n.
	start_bg re "${SRV[@]}" -s "$K" sh -c '
		p=$1 socks=$2 k=$3; shift 3
		echo "$DLOCK_TOKEN" >"$p.outer"
		"$DLOCK" "$@" -s -n "$k" sh -c "
			echo \"\$DLOCK_TOKEN\" >\"$p.inner\"
			for s in $socks; do redis-cli -s \"\$s\" zcard dlock:K; done >\"$p.zcard\"
			: >\"$p.in\"
			i=0; while [ ! -e \"$p.seen\" ] && [ \$i -lt 200 ]; do i=\$((i + 1)); sleep 0.05; done
			echo inner"' sh "$T/re" "$socks" "$K" "${SRV[@]}"
	# while the inner command runs: one holder in the store
	wait_until 10 test -e "$T/re.in" || fail "no inner command: $(cat "$T/re.err")"
	assert_equal "$(srv_holders)" 1
	touch "$T/re.seen"
	reap re 20
	assert_equal "$bg_status" 0
	assert_equal "$(<"$T/re.out")" inner
	is_token "$(<"$T/re.outer")"
	assert_equal "$(<"$T/re.inner")" "$(<"$T/re.outer")"
	if on_redis; then
		assert_equal "$(sort -u "$T/re.zcard")" 1
		assert_equal "$(wc -l <"$T/re.zcard")" "${#NAMES[@]}"
	fi
	nothing_left
}

@test "re-entry in shared mode: the inner dlock adds no holder" {
	needs -s
	one_server
	check_shared_reentry
}

@test "RedLock: re-entry in shared mode: the inner dlock adds no holder" {
	redis_only RedLock
	servers 3
	check_shared_reentry
}

# Inside a shared holder's job, an exclusive dlock on the same key must
# not re-enter (it would not exclude the other shared holders): 64 with
# the reason, the inner command does not run, and the outer lock stays.
check_no_upgrade() {
	hold other "${SRV[@]}" -s "$K"
	wait_ready other
	run -0 tdlock "${SRV[@]}" -s "$K" sh -c '
		k=$1; shift
		"$DLOCK" "$@" -n "$k" touch "$0.x"; echo "x $?"
		"$DLOCK" "$@" -n --limit 2 "$k" touch "$0.l"; echo "limit $?"
		"$DLOCK" "$@" -s -n "$k" true; echo "s $?"' "$T/ran" "$K" "${SRV[@]}"
	assert_line "x 64"
	assert_line "limit 64"
	assert_line "s 0"
	assert_output --partial "the outer dlock holds the lock shared: a nested exclusive request cannot re-enter it"
	assert_output --partial "the lock is held shared"
	[[ ! -e $T/ran.x && ! -e $T/ran.l ]] || fail "a nested command ran"
	# the other holder and the outer lock were left alone
	finish other
	assert_equal "$bg_status" 0
	nothing_left
}

@test "a nested exclusive dlock inside a shared holder's job is refused (no upgrade)" {
	needs -s
	needs --limit
	one_server
	check_no_upgrade
}

@test "RedLock: a nested exclusive dlock inside a shared holder's job is refused (no upgrade)" {
	redis_only RedLock
	servers 3
	check_no_upgrade
}

@test "a dlock -s holder makes redis-py's non-blocking acquire fail" {
	redis_only "redis-py's Lock"
	"$PYTHON" -c 'import redis' 2>/dev/null ||
		skip_unless_strict "$PYTHON has no redis module (python3-redis)"
	servers 1
	hold s "${SRV[@]}" -s K
	wait_ready s
	run -0 "$PYTHON" - "$(sock r1)" <<'EOF'
import sys
import redis
lock = redis.Redis(unix_socket_path=sys.argv[1]).lock("dlock:K", timeout=30)
try:
    print(lock.acquire(blocking=False))
except redis.exceptions.ResponseError as e:
    print("error:", e)
EOF
	echo "# redis-py: $output" >&3
	[[ $output == False || $output == "error: WRONGTYPE"* ]] ||
		fail "redis-py's acquire: $output"
	every_server zset type dlock:K
	every_server "$(job_var s DLOCK_TOKEN)" zrange dlock:K 0 -1
	finish s
	assert_equal "$bg_status" 0
}

# Every engine numbers --limit slots 1 to n in status and --json (issue 29,
# 7); the keys stay :slots:0 to :slots:n-1.
check_limit_slots() {
	hold a "${SRV[@]}" --limit 2 K
	wait_ready a
	hold b "${SRV[@]}" --limit 2 K
	wait_ready b
	every_server 1 exists '{dlock:K}:slots:0'
	every_server 1 exists '{dlock:K}:slots:1'
	run -0 --separate-stderr dlock status "${SRV[@]}" --json K
	assert_regex "$output" '"slot": ?1[,}]'
	assert_regex "$output" '"slot": ?2[,}]'
	refute_regex "$output" '"slot": ?0[,}]'
	# the SLOT column of the two holders' rows (SINCE is two words: "0.5s ago")
	run -0 --separate-stderr dlock status "${SRV[@]}" K
	assert_equal "$(awk 'NR == 2 { for (f = 1; f <= NF; f++) if ($f == "SLOT") c = f + 1 }
		(NR == 3 || NR == 4) && c { print $c }' <<<"$output" | sort | tr '\n' ' ')" '1 2 '
	finish a
	finish b
}

@test "--limit: status numbers the slots 1 to n" {
	servers 1
	check_limit_slots
}

@test "RedLock: --limit: status numbers the slots 1 to n" {
	servers 3
	check_limit_slots
}
