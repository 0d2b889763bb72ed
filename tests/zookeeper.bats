#!/usr/bin/env bats
# zookeeper.bats - the ZooKeeper engine (zk://) on real servers: one
# standalone ZooKeeper 3.8 and one three-member ensemble, started once for
# the file (setup_file) from Debian's zookeeper package and stopped in
# teardown_file, pass or fail. kazoo (python3-kazoo) takes the same locks
# the other way. Each test uses lock names of its own.

load helpers
load zookeeper_helpers

setup_file() {
	local ens
	mkdir -p "$ZK_DIR"
	start_ensemble e &
	ens=$!
	start_zk s || return 1
	wait "$ens" || return 1
}

teardown_file() {
	stop_zk_all
}

setup() {
	common_setup
	Z=$(zk_url s)
	H=$(zk_hosts s)
	ZE="zk://127.0.0.1:$(zk_port e1),127.0.0.1:$(zk_port e2),127.0.0.1:$(zk_port e3)"
}

children() { kz "${2:-$H}" children "/dlock:$1"; }	# children NAME [HOSTS]
no_contender() { [[ -z $(children "$@") ]]; }
n_contenders() { (($(children "$1" | wc -l) == $2)); }	# n_contenders NAME N
ours_re='^-[0-9a-f]{32}-(x|s|l[0-9]+)-[0-9]+__r?lock__[0-9]{10}$'

# ---- a lock ----------------------------------------------------------------

@test "a job under the lock: its node is kazoo's kind, DLOCK_FENCE its czxid, gone after" {
	hold h -S "$Z" K1
	wait_ready h
	local node; node=$(children K1)
	[[ $node =~ $ours_re ]] || fail "contender '$node'"
	[[ $node == -*-x-*__lock__* ]] || fail "not an exclusive contender: $node"
	assert_equal "$(job_var h DLOCK_KEY)" /dlock:K1
	local token; token=$(job_var h DLOCK_TOKEN)
	[[ $token =~ ^[0-9a-f]{64}$ ]] || fail "token '$token'"
	assert_equal "${node:1:32}" "${token:0:32}"
	assert_equal "$(job_var h DLOCK_FENCE)" "$(kz "$H" czxid "/dlock:K1/$node")"
	# the node's data is the holder info
	[[ $(kz "$H" get "/dlock:K1/$node") =~ ^$(hostname)$'\t'[0-9]+$'\t' ]] ||
		fail "data: $(kz "$H" get "/dlock:K1/$node")"
	finish h
	assert_equal "$bg_status" 0
	no_contender K1
}

@test "a lock taken before: DLOCK_FENCE is its node's czxid, read in the lock's one round trip" {
	dlock -S "$Z" K50 true	# its znodes made, its sequence numbers begun
	hold h -S "$Z" K50
	wait_ready h
	local node; node=$(children K50)
	assert_equal "$(job_var h DLOCK_FENCE)" "$(kz "$H" czxid "/dlock:K50/$node")"
	finish h
	# Answers 500 ms late (--node-timeout 5: no request given up): the
	# session's handshake and the lock's round (the znode read, the
	# multi, the children), 1 s; an exists of our node for its czxid
	# after them, as main made, 1.5 s
	local p t0 t1; p=$(free_port)
	"$PYTHON" "$BATS_TEST_DIRNAME/tcp_proxy.py" "$p" "$(zk_port s)" 500 \
		>"$T/proxy.log" 2>&1 </dev/null 3>&- &
	track $!
	wait_until 5 eval "(exec 9<>/dev/tcp/127.0.0.1/$p) 2>/dev/null"
	t0=$EPOCHREALTIME
	t1=$(dlock -S "zk://127.0.0.1:$p" --node-timeout 5 K50 bash -c 'echo $EPOCHREALTIME')
	awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 1.3) }' ||
		fail "the command started $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s after dlock"
}

@test "-n and -w on a held lock: 1 (or -E), their nodes gone, the holder untouched" {
	hold h -S "$Z" K2
	wait_ready h
	local node; node=$(children K2)
	run -1 dlock -S "$Z" -n K2 true
	run -7 dlock -S "$Z" -E 7 -w 0.5 K2 true
	assert_equal "$(children K2)" "$node"
	finish h
	assert_equal "$bg_status" 0
	no_contender K2
}

@test "waiters take the lock in arrival order once it is released" {
	hold h -S "$Z" K3
	wait_ready h
	for w in w1 w2 w3; do
		start_bg "$w" -S "$Z" K3 sh -c 'echo $0 >>"$1"' "$w" "$T/order"
		local n=${w#w}
		wait_until 10 n_contenders K3 $((n + 1)) || fail "$w did not queue"
	done
	finish h
	for w in w1 w2 w3; do reap "$w"; assert_equal "$bg_status" 0; done
	assert_equal "$(tr '\n' ' ' <"$T/order")" "w1 w2 w3 "
	no_contender K3
}

@test "-s: shared holders together; an exclusive one waits, and a reader after it waits for it" {
	hold r1 -S "$Z" -s K4
	hold r2 -S "$Z" -s K4
	wait_ready r1
	wait_ready r2
	[[ $(children K4) == *__rlock__*$'\n'*__rlock__* ]] || fail "$(children K4)"
	hold x -S "$Z" K4
	wait_until 10 n_contenders K4 3 || fail "the writer did not queue"
	hold r3 -S "$Z" -s K4
	wait_until 10 n_contenders K4 4 || fail "the third reader did not queue"
	sleep 0.3
	[[ ! -e $T/x.ready && ! -e $T/r3.ready ]] || fail "ran beside the readers"
	finish r1
	finish r2
	wait_ready x
	[[ ! -e $T/r3.ready ]] || fail "a reader ran beside the writer"
	finish x
	wait_ready r3
	finish r3
	no_contender K4
}

@test "--limit 2: two at once, the third when one of them ends" {
	hold a -S "$Z" --limit 2 K5
	hold b -S "$Z" --limit 2 K5
	wait_ready a
	wait_ready b
	hold c -S "$Z" --limit 2 K5
	wait_until 10 n_contenders K5 3 || fail "c did not queue"
	sleep 0.3
	[[ ! -e $T/c.ready ]] || fail "a third holder"
	finish b
	wait_ready c
	finish a
	finish c
	no_contender K5
}

@test "fences strictly increase, also once the lock's znode is made again" {
	local f1 f2 f3
	f1=$(dlock -S "$Z" K6 sh -c 'echo $DLOCK_FENCE')
	f2=$(dlock -S "$Z" K6 sh -c 'echo $DLOCK_FENCE')
	kz "$H" delete /dlock:K6	# the sequence numbers start again
	f3=$(dlock -S "$Z" K6 sh -c 'echo $DLOCK_FENCE')
	((f1 < f2 && f2 < f3)) || fail "fences $f1 $f2 $f3"
}

@test "re-entry: a nested dlock on the same lock runs at once, with the same fence" {
	run -0 timeout 10 "$DLOCK" -S "$Z" K7 sh -c \
		'echo $DLOCK_FENCE; "$0" -S "$1" -n K7 sh -c "echo \$DLOCK_FENCE"' "$DLOCK" "$Z"
	assert_equal "${lines[0]}" "${lines[1]}"
	no_contender K7
}

# ---- modes: nested and not (as Redis: tests/modes.bats) ---------------------

# one_line FILE PATTERN: dlock said one line in FILE (a job's stderr may
# be there too), and it matches the glob
one_line() {
	local said
	said=$(grep '^dlock: ' "$1")
	[[ $(grep -c '^dlock: ' "$1") == 1 && $said == $2 ]] || fail "$1: $(cat "$1")"
}

@test "nested in an exclusive holder's job: -x, -s and --limit all re-enter" {
	run -0 --separate-stderr timeout 20 "$DLOCK" -S "$Z" K30 sh -c '
		d=$0 z=$1
		"$d" -S "$z" -n K30 sh -c "exit 3"; echo "x $?"
		"$d" -S "$z" -n -s K30 sh -c "exit 4"; echo "s $?"
		"$d" -S "$z" -w 5 --limit 2 K30 sh -c "exit 5"; echo "limit $?"' "$DLOCK" "$Z"
	assert_line "x 3"
	assert_line "s 4"
	assert_line "limit 5"
	assert_equal "$stderr" ""
	no_contender K30
}

@test "nested in a shared holder's job: -s re-enters; -x and --limit 64, nothing run, the lock kept" {
	hold other -S "$Z" -s K31
	wait_ready other
	run -0 --separate-stderr timeout 20 "$DLOCK" -S "$Z" -s K31 sh -c '
		d=$0 z=$1 t=$2
		"$d" -S "$z" -w 5 K31 touch "$t.x" 2>"$t.x.err"; echo "x $?"
		"$d" -S "$z" -n --limit 2 K31 touch "$t.l" 2>"$t.l.err"; echo "limit $?"
		"$d" -S "$z" -s -n K31 sh -c "exit 4"; echo "s $?"' "$DLOCK" "$Z" "$T/n31"
	assert_line "x 64"
	assert_line "limit 64"
	assert_line "s 4"
	one_line "$T/n31.x.err" "dlock: K31: *the outer dlock holds the lock shared: a nested exclusive request cannot re-enter it"
	one_line "$T/n31.l.err" "dlock: K31: *the lock is held shared"
	[[ ! -e $T/n31.x && ! -e $T/n31.l ]] || fail "a nested command ran"
	# the outer lock ended 0 (not lost), the other holder alone is left
	n_contenders K31 1
	finish other
	assert_equal "$bg_status" 0
	no_contender K31
}

@test "nested in a --limit 2 holder's job: --limit 2 re-enters; -x, -s and --limit 3 64" {
	run -0 --separate-stderr timeout 20 "$DLOCK" -S "$Z" --limit 2 K32 sh -c '
		d=$0 z=$1 t=$2
		"$d" -S "$z" -n K32 touch "$t.x" 2>"$t.x.err"; echo "x $?"
		"$d" -S "$z" -w 5 -s K32 touch "$t.s" 2>"$t.s.err"; echo "s $?"
		"$d" -S "$z" -n --limit 3 K32 touch "$t.l3" 2>"$t.l3.err"; echo "limit3 $?"
		"$d" -S "$z" -n --limit 2 K32 sh -c "exit 6"; echo "limit2 $?"' "$DLOCK" "$Z" "$T/n32"
	assert_line "x 64"
	assert_line "s 64"
	assert_line "limit3 64"
	assert_line "limit2 6"
	one_line "$T/n32.x.err" "dlock: K32: *the outer dlock holds the lock with --limit 2: a nested exclusive request cannot re-enter it"
	one_line "$T/n32.s.err" "dlock: K32: *the lock is held with --limit 2"
	one_line "$T/n32.l3.err" "dlock: K32: *the lock is held with --limit 2"
	[[ ! -e $T/n32.x && ! -e $T/n32.s && ! -e $T/n32.l3 ]] || fail "a nested command ran"
	no_contender K32
}

@test "held --limit 2: --limit 3 and -s are 64 at once (-n, -w or neither); held -s: --limit 2 is 64" {
	hold h -S "$Z" --limit 2 K33
	wait_ready h
	local node; node=$(children K33)
	run -64 --separate-stderr dlock -S "$Z" --limit 3 K33 touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	[[ $stderr == "dlock: K33: "*"held with --limit 2"* ]] || fail "stderr: $stderr"
	run -64 --separate-stderr dlock -S "$Z" -s K33 touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	[[ $stderr == "dlock: K33: "*"held with --limit 2"* ]] || fail "stderr: $stderr"
	run -64 --separate-stderr dlock -S "$Z" -n -s K33 touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	run -64 --separate-stderr timeout 5 "$DLOCK" -S "$Z" -w 30 --limit 3 K33 touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	# an exclusive request only waits, as against any holder
	run -1 dlock -S "$Z" -n K33 touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran"
	assert_equal "$(children K33)" "$node"
	finish h
	assert_equal "$bg_status" 0

	hold s -S "$Z" -s K33
	wait_ready s
	node=$(children K33)
	run -64 --separate-stderr dlock -S "$Z" --limit 2 K33 touch "$T/ran"
	assert_equal "${#stderr_lines[@]}" 1
	[[ $stderr == "dlock: K33: "*"held shared"* ]] || fail "stderr: $stderr"
	run -64 --separate-stderr dlock -S "$Z" -n --limit 2 K33 touch "$T/ran"
	[[ $stderr == "dlock: K33: "*"held shared"* ]] || fail "stderr: $stderr"
	[[ ! -e $T/ran ]] || fail "the command ran"
	assert_equal "$(children K33)" "$node"
	finish s
	assert_equal "$bg_status" 0
	no_contender K33
}

@test "a shared waiter is refused (64) once --limit holders take the lock before it" {
	hold x -S "$Z" K34
	wait_ready x
	hold l -S "$Z" --limit 2 K34
	wait_until 10 n_contenders K34 2 || fail "the --limit one did not queue"
	start_bg s -S "$Z" -s K34 touch "$T/ran"
	wait_until 10 n_contenders K34 3 || fail "the shared one did not queue"
	finish x
	wait_ready l
	reap s 5	# while l holds, not once it ends
	assert_equal "$bg_status" 64
	one_line "$T/s.err" "dlock: K34: *the lock is held with --limit 2"
	[[ ! -e $T/ran ]] || fail "the command ran"
	n_contenders K34 1
	finish l
	assert_equal "$bg_status" 0
	no_contender K34
}

# ---- kazoo and Curator ----------------------------------------------------

@test "kazoo's Lock and dlock exclude each other, both ways" {
	kz_lock k "$H" lock /dlock:K8
	wait_until 10 test -e "$T/k.ready" || fail "kazoo: $(cat "$T/k.out")"
	run -1 dlock -S "$Z" -n K8 true
	start_bg d -S "$Z" K8 sh -c 'echo got >"$0"' "$T/d.got"
	wait_until 10 n_contenders K8 2 || fail "dlock did not queue"
	[[ ! -e $T/d.got ]] || fail "dlock ran beside kazoo"
	touch "$T/k.release"
	reap d
	assert_equal "$bg_status" 0
	# release --force of kazoo's: no '0.0s left' of a session not ours
	kz_lock k2 "$H" lock /dlock:K8
	wait_until 10 test -e "$T/k2.ready" || fail "kazoo: $(cat "$T/k2.out")"
	run -0 --separate-stderr dlock release -S "$Z" --force K8
	assert_output --regexp "^broken: another client's lock, value '[^']*'$"
	touch "$T/k2.release"
	# and the other way
	hold h -S "$Z" K8
	wait_ready h
	run -0 kz_try "$H" lock /dlock:K8 0
	assert_output timeout
	finish h
	run -0 kz_try "$H" lock /dlock:K8 5
	assert_output acquired
	no_contender K8
}

@test "kazoo's ReadLock shares with dlock -s, its WriteLock waits for it" {
	hold h -S "$Z" -s K9
	wait_ready h
	run -0 kz_try "$H" read /dlock:K9 5
	assert_output acquired
	run -0 kz_try "$H" write /dlock:K9 0
	assert_output timeout
	kz_lock kr "$H" read /dlock:K9
	wait_until 10 test -e "$T/kr.ready" || fail "kazoo: $(cat "$T/kr.out")"
	finish h
	run -0 dlock -S "$Z" -s -n K9 true
	run -1 dlock -S "$Z" -n K9 true
	# kazoo's readers hold it shared: no --limit beside them
	run -64 --separate-stderr dlock -S "$Z" -n --limit 2 K9 true
	[[ $stderr == "dlock: K9: "*"held shared"* ]] || fail "stderr: $stderr"
	touch "$T/kr.release"
	wait_until 10 no_contender K9 || fail "kazoo's node stays"
}

@test "a Curator contender (_c_GUID-lock-SEQ) counts as an exclusive one" {
	kz "$H" mkdir /dlock:K10
	kz "$H" ephemeral /dlock:K10/_c_0f3e1a42-lock- curator 3 >"$T/cur" &
	track $!
	wait_until 10 n_contenders K10 1 || fail "no Curator node"
	run -1 dlock -S "$Z" -n K10 true
	run -0 dlock -S "$Z" -w 10 K10 true	# once its session ends
}

# ---- the lease -------------------------------------------------------------

@test "release --force: the holder's node goes, the holder is told at once (75)" {
	hold h -S "$Z" -t 30 K11
	wait_ready h
	run -0 --separate-stderr dlock release -S "$Z" K11 --force
	assert_output --regexp "^broken: .* pid $(<"$T/h.dlock") \(.*job"
	reap h 5	# well before the 30 s session timeout
	assert_equal "$bg_status" 75
	assert_equal "$(cat "$T/h.sig")" TERM
	grep -q 'was deleted' "$T/h.err" || fail "$(cat "$T/h.err")"
	no_contender K11
	run -1 dlock release -S "$Z" K11 --force
}

@test "our node deleted by another client: the holder exits 75 at once" {
	hold h -S "$Z" -t 30 K12
	wait_ready h
	kz "$H" delete "/dlock:K12/$(children K12)"
	reap h 5
	assert_equal "$bg_status" 75
	grep -q 'lease lost' "$T/h.err" || fail "$(cat "$T/h.err")"
}

@test "the server killed while a job runs: 75 within the session timeout" {
	hold h -S "$Z" -t 3 K13
	wait_ready h
	kill -KILL "$(zk_pid s)"
	local t0=$SECONDS
	reap h 10
	assert_equal "$bg_status" 75
	((SECONDS - t0 <= 4)) || fail "told after $((SECONDS - t0)) s"
	grep -q 'lease lost' "$T/h.err" || fail "$(cat "$T/h.err")"
	restart_zk s
	# the server restores the session, and expires it
	wait_until 15 no_contender K13 || fail "the node outlived its session"
}

@test "one of three ensemble members killed: the job goes on" {
	# room for an election, if it was the leader (with -t 5 the two left
	# took longer than the session once, four tests at a time)
	hold h -S "$ZE" -t 10 K14
	wait_ready h
	local sid i victim=
	sid=$(job_var h DLOCK_TOKEN)
	sid=$((16#${sid:0:16}))
	for i in 1 2 3; do
		zk_4lw "$(zk_port e$i)" cons | grep -qi "sid=0x$(printf %x "$sid")" && victim=e$i
	done
	[[ -n $victim ]] || fail "no member serves session $sid"
	kill -KILL "$(zk_pid "$victim")"
	sleep 11	# longer than the session timeout
	alive "$(<"$T/h.dlock")" || fail "dlock ended: $(cat "$T/h.err")"
	finish h
	assert_equal "$bg_status" 0
	local up=e1; [[ $victim == e1 ]] && up=e2
	wait_until 10 no_contender K14 "127.0.0.1:$(zk_port $up)"
}

@test "-F: the helper takes the session over and keeps the lease" {
	hold h -F -S "$Z" -t 2 K15
	wait_ready h
	assert_equal "$(<"$T/h.pid")" "$(<"$T/h.dlock")"
	local node; node=$(children K15)
	sleep 3	# more than the session timeout: renewed from the helper
	assert_equal "$(children K15)" "$node"
	finish h
	assert_equal "$bg_status" 0
	wait_until 5 no_contender K15 || fail "not released"
}

@test "--min-hold: the lock stays that long after a quick job" {
	run -0 dlock -S "$Z" --min-hold 1.5 K16 true
	no_contender K16
	start_bg m -S "$Z" --min-hold 1.5 K16 true
	wait_until 5 n_contenders K16 1
	run -1 dlock -S "$Z" -n K16 true
	reap m
	assert_equal "$bg_status" 0
	no_contender K16
}

# ---- inspection ------------------------------------------------------------

@test "status: the holder's info and session, the waiters in queue order" {
	hold h -S "$Z" K17
	wait_ready h
	start_bg w1 -S "$Z" K17 true
	wait_until 10 n_contenders K17 2
	start_bg w2 -S "$Z" K17 true
	wait_until 10 n_contenders K17 3
	run -0 dlock status -S "$Z" K17
	assert_line --index 0 --regexp '^K17: held, exclusive, 2 waiting, fencing counter [0-9]+$'
	assert_output --regexp "pid +$(<"$T/h.pid")|  $(<"$T/h.dlock")"
	assert_output --partial '[session 0x'
	assert_output --partial 'waiting, in queue order'
	run -0 dlock status --json -S "$Z" K17
	assert_equal "$(jq -r '.locks[0].fair_queue | length' <<<"$output")" 2
	assert_equal "$(jq -r '.locks[0].holders[0].fence' <<<"$output")" \
		"$(job_var h DLOCK_FENCE)"
	finish h
	reap w1
	reap w2
	run -1 dlock status -S "$Z" K17
	assert_output 'K17: free'
}

@test "status without KEY lists the locks under the prefix" {
	hold h -S "$Z" --prefix lst: A1
	wait_ready h
	run -0 dlock status -S "$Z" --prefix lst: --json
	assert_equal "$(jq -r '[.locks[] | select(.state == "held") | .name] | join(",")' <<<"$output")" A1
	finish h
}

# the names status lists, comma-separated, sorted: listed PREFIX
listed() { dlock status -S "$Z" --prefix "$1" --json | jq -r '[.locks[].name] | join(",")'; }

@test "status without KEY: exactly the locks held or waited for, each once, by its full name" {
	local P=lst2:
	# used once, free since: not listed (its znode stays)
	dlock -S "$Z" --prefix $P gone true
	dlock -S "$Z" --prefix $P gone/too true
	# held: names with '/', whose parents are no locks, and the descriptor
	# form's (a path); a lock inside another's name; one only waited for
	# is held by someone, so listed once
	hold a -S "$Z" --prefix $P a
	hold ab -S "$Z" --prefix $P a/b
	hold xyz -S "$Z" --prefix $P -s x/y/z
	wait_ready a
	wait_ready ab
	wait_ready xyz
	start_bg w -S "$Z" --prefix $P a/b true
	wait_until 10 eval '(($(kz "$H" children "/${P}a/b" | wc -l) == 2))'
	: >"$T/file"
	(
		exec 9>"$T/file" && dlock -S "$Z" --prefix $P 9 && touch "$T/fd.held" &&
			wait_until 30 test -e "$T/fd.release"
	) 3>&- &
	track $!
	wait_until 10 test -e "$T/fd.held" || fail "the descriptor form did not lock"
	run -0 listed $P
	assert_output "$T/file,a,a/b,x/y/z"
	run -0 dlock status -S "$Z" --prefix $P
	refute_output --partial 'free'
	finish a
	finish ab
	reap w
	finish xyz
	touch "$T/fd.release"
	wait_until 10 eval '[[ $(listed $P) == "" ]]' || fail "still listed: $(listed $P)"
	# kazoo's locks under the prefix are locks too (foreign holders)
	kz_lock k "$H" lock "/${P}kz/x"
	wait_until 10 test -e "$T/k.ready"
	run -0 listed $P
	assert_output kz/x
	touch "$T/k.release"
}

@test "history: acquired and released with the exit status; --history N keeps about N" {
	run -3 dlock -S "$Z" K18 sh -c 'exit 3'
	run -0 dlock history --json -S "$Z" K18
	assert_equal "$(jq -r '[.events[].event] | join(" ")' <<<"$output")" "released acquired"
	assert_equal "$(jq -r '.events[0].exit' <<<"$output")" 3
	# a job that runs a while: "acquired" is written meanwhile
	hold h -S "$Z" K18
	wait_ready h
	wait_until 5 eval '[[ $(dlock history --json -S "$Z" K18 | jq -r ".events[0].event") == acquired ]]' ||
		fail "no acquired event while the job runs"
	finish h
	local i
	for i in 1 2 3 4 5 6; do dlock -S "$Z" --history 4 K18 true; done
	run -0 dlock history --json -S "$Z" K18
	assert_equal "$(jq -r '.events | length' <<<"$output")" 4
	(($(kz "$H" children /.dlock-history/dlock:K18 | wc -l) <= 5)) || fail "not trimmed"
	# a large N is trimmed by some releases, not all (each would list the
	# history's children): it stays within N + N/4
	local n max=0
	for i in $(seq 40); do
		dlock -S "$Z" --history 24 K18 true
		n=$(kz "$H" children /.dlock-history/dlock:K18 | wc -l)
		((n > max)) && max=$n
	done
	echo "# --history 24: at most $max events" >&3
	((max >= 24 && max <= 30)) || fail "--history 24: at most $max events, want 24 to 30"
}

# events NAME: the lock's history, newest first, as "event fence" words
events() { dlock history --json -S "$Z" "$1" | jq -r '[.events[] | "\(.event):\(.fence)"] | join(" ")'; }

@test "history: acquired is written as the lock is taken, also for a lost, a broken and a stepped holder" {
	local f
	# a name's first use: its history's znode is made with it
	hold h -S "$Z" H1
	wait_ready h
	f=$(job_var h DLOCK_FENCE)
	run -0 events H1
	assert_output "acquired:$f"
	# a waiter that gives up leaves no event; the one that waits and
	# takes it has its own, written as it takes it, with its fence
	run -1 dlock -S "$Z" -w 0.3 H1 true
	hold w -S "$Z" H1
	wait_until 10 n_contenders H1 2
	run -0 events H1
	assert_output "acquired:$f"
	finish h
	wait_ready w
	run -0 events H1
	assert_output "acquired:$(job_var w DLOCK_FENCE) released:$f acquired:$f"
	# broken: the holder's own "acquired" stays, then broken and lost
	run -0 dlock release --force -S "$Z" H1
	reap w
	assert_equal "$bg_status" 75
	f=$(job_var w DLOCK_FENCE)
	run -0 events H1
	[[ $output == "lost:$f broken:$f acquired:$f "* ]] || fail "events: $output"
	# the steps: acquired at dlock acquire, released at dlock release
	local token
	token=$(dlock acquire -S "$Z" H2)
	run -0 dlock history --json -S "$Z" H2
	assert_equal "$(jq -r '[.events[].event] | join(" ")' <<<"$output")" acquired
	assert_equal "$(jq -r '.events[0].token' <<<"$output")" "${token:0:32}"
	run -0 dlock release -S "$Z" H2 --token "$token"
	run -0 dlock history --json -S "$Z" H2
	assert_equal "$(jq -r '[.events[].event] | join(" ")' <<<"$output")" "released acquired"
}

@test "dlock killed by SIGKILL: the watchdog writes 'killed'; the lapse it announces holds" {
	local t0 said
	hold h -S "$Z" -t 2 K40
	wait_ready h
	t0=$(now_ms)
	kill -KILL "$(<"$T/h.dlock")"
	# (status, quick to ask: 1 once the lock is free)
	wait_until 10 eval '! dlock status -S "$Z" K40 >/dev/null' ||
		fail "the node outlived the session"
	# the watchdog's words: within the session's timeout and a tick
	said=$(sed -n 's/.*the lock lapses within \([0-9.]*\) s$/\1/p' "$T/h.err")
	[[ -n $said ]] || fail "stderr: $(cat "$T/h.err")"
	(($(now_ms) - t0 <= $(awk -v s="$said" 'BEGIN { print int(s * 1000) }') + 200)) ||
		fail "gone after $(($(now_ms) - t0)) ms, said within $said s"
	wait_until 10 eval '[[ $(events K40) == killed:* ]]' ||
		fail "no killed event: $(events K40)"
	run -0 dlock history --json -S "$Z" K40
	assert_equal "$(jq -r '.events[0].fence' <<<"$output")" "$(job_var h DLOCK_FENCE)"
	assert_equal "$(jq -r '[.events[].event] | join(" ")' <<<"$output")" "killed acquired"
}

@test "acquire, extend and release in separate processes" {
	local token node
	token=$(dlock acquire -S "$Z" -t 3 K19)
	[[ $token =~ ^[0-9a-f]{64}$ ]] || fail "token '$token'"
	node=$(children K19)
	[[ -n $node ]] || fail "no node once dlock acquire exited"
	run -1 dlock -S "$Z" -n K19 true
	sleep 2
	run -0 dlock extend -S "$Z" -t 3 K19 --token "$token"
	sleep 2	# past the first 3 s: only the extension keeps it
	assert_equal "$(children K19)" "$node"
	run -0 dlock release -S "$Z" K19 --token "$token"
	no_contender K19
	run -1 dlock release -S "$Z" K19 --token "$token"
	run -1 dlock extend -S "$Z" K19 --token "$token"
	# not extended: it lapses with the session
	dlock acquire -S "$Z" -t 2 K19 >/dev/null
	wait_until 6 no_contender K19 || fail "the session outlived its timeout"
}

@test "a job's dlock extend -t 1 does not shorten its running dlock's session" {
	# the job extends its own lock with a short TTL, as a pipeline
	# would, then runs past that TTL: the lock stays its own
	run --separate-stderr dlock -S "$Z" -t 30 KX sh -c '
		"$DLOCK" extend -S "$0" -t 1 KX; echo "extend: $?" >&2
		i=0; while [ $i -lt 12 ]; do
			"$DLOCK" -S "$0" -n -k KX2 true || exit 4	# (a heartbeat of our own)
			sleep 0.5; i=$((i + 1))
		done
		"$DLOCK" status -S "$0" --json KX' "$Z"
	[[ $status == 0 ]] || fail "exit $status; stderr: $stderr"
	# (the extend itself fails, 69: its take-over of the session and
	# the running dlock's client pull the session to and fro)
	[[ $output == *'"state":"held"'* ]] || fail "status: $output; stderr: $stderr"
	[[ $stderr != *'lease lost'* ]] || fail "stderr: $stderr"
	no_contender KX
}

# ---- the README ----------------------------------------------------------------

# readme_zk: the code lines of README's "### ZooKeeper", one a line
readme_zk() {
	sed -n '/^### ZooKeeper$/,/^##* [^Z]/p' "$BATS_TEST_DIRNAME/../README.md" |
		sed -n 's/^    //p'
}

@test "README's ZooKeeper examples run as written (the ensemble's hosts for zk1..zk3)" {
	local code=() i e1 all
	mapfile -t code < <(readme_zk)  # (not "lines": run sets it)
	((${#code[@]} == 5)) || fail "README's ZooKeeper code lines: ${code[*]}"
	# zk1 is a member that serves: an earlier test kills one for good, and
	# the two left may still be electing a leader under load
	serving_member() {
		for i in e1 e2 e3; do
			zk_serving "$(zk_port $i)" && { echo "127.0.0.1:$(zk_port $i)"; return 0; }
		done
		return 1
	}
	wait_until 30 serving_member >/dev/null || fail "no member of the ensemble serves"
	e1=$(serving_member)
	all=127.0.0.1:$(zk_port e1),127.0.0.1:$(zk_port e2),127.0.0.1:$(zk_port e3)
	mkdir -p "$T/bin"
	ln -s "$DLOCK" "$T/bin/dlock"
	# (Debian's is not on PATH, and finds its zkEnv.sh beside itself)
	printf '#!/bin/sh\nexec /usr/share/zookeeper/bin/zkCli.sh "$@"\n' >"$T/bin/zkCli.sh"
	chmod +x "$T/bin/zkCli.sh"
	ln -s "$PYTHON" "$T/bin/python3"
	printf '#!/bin/sh\ntouch "$0.ran"\nwhile [ ! -e "$0.release" ]; do sleep 0.05; done\n' >"$T/nightly.sh"
	chmod +x "$T/nightly.sh"
	for i in "${!code[@]}"; do
		code[i]=${code[i]//zk1:2181,zk2:2181,zk3:2181/$all}
		code[i]=${code[i]//zk1:2181/$e1}
	done
	cd "$T"
	export PATH=$T/bin:$PATH
	# the job, held; what each tool shows of it
	bash -c "${code[0]}" 3>&- &
	track $!
	wait_until 10 test -e nightly.sh.ran || fail "the job did not start"
	# zkCli.sh, a JVM, may lose its connection on a loaded host
	# (ConnectionLoss): tried 5 times, a second apart
	for i in 1 2 3 4 5; do
		run bash -c "${code[1]}"
		((status == 0)) && break
		sleep 1
	done
	assert_success
	assert_output --regexp '\[-[0-9a-f]{32}-x-[0-9]+__lock__0000000000\]'
	run -0 bash -c "${code[2]}"
	assert_output --partial "$(hostname)"
	assert_output --partial 'nightly.sh'
	run -0 bash -c "${code[3]}"
	assert_line --index 0 --regexp '^nightly: held, exclusive'
	# with a user: waits for the first, then runs
	bash -c "${code[4]}" 3>&- &
	track $!
	wait_until 10 eval '[[ $(kz "$e1" children /jobs/dlock:nightly | wc -l) == 2 ]]'
	rm nightly.sh.ran
	touch nightly.sh.release
	wait_until 10 test -e nightly.sh.ran || fail "the second job did not run"
	[[ $(kz "$e1" acl /jobs/dlock:nightly) == *'world:anyone'* ]] || fail "acl"
}

# ---- settings and errors ------------------------------------------------------

@test "bad URLs and what ZooKeeper cannot do: 64, nothing contacted" {
	run -64 --separate-stderr dlock -S "zks://127.0.0.1:1" K true
	[[ $stderr == *'without TLS'* ]] || fail "stderr: $stderr"
	run -64 dlock -S "zk://127.0.0.1:99999" K true
	run -64 dlock -S "zk://127.0.0.1:1?x=1" K true
	run -64 dlock -S "zk://127.0.0.1:1//a" K true
	run -64 --separate-stderr dlock -S "$Z" -S "$ZE" K true
	[[ $stderr == *'one server URL'* ]] || fail "stderr: $stderr"
	run -64 --separate-stderr dlock -S "$Z" -S redis://127.0.0.1:1 K true
	[[ $stderr == *'cannot be mixed'* ]] || fail "stderr: $stderr"
	run -64 --separate-stderr dlock -S "$Z" --wait-replicas 1 K true
	[[ $stderr == *'ZooKeeper cannot --wait-replicas'* ]] || fail "stderr: $stderr"
	run -64 dlock -S "$Z" --tls-ca /dev/null K true
	run -64 dlock -S "$Z" 'a//b' true
	# a contender's marker in a name would leave a node that lock a
	# takes for a contender ahead of all
	run -64 --separate-stderr dlock -S "$Z" 'a/x__lock__0000000000' true
	[[ $stderr == *"'__lock__' and '__rlock__' name the contenders"* ]] || fail "stderr: $stderr"
	run -64 dlock -S "$Z" 'b__rlock__1' true
	run -0 dlock -S "$Z" -n a true
}

@test "a name with control bytes: 64, one line, the bytes escaped as C writes them" {
	run -64 --separate-stderr dlock -S "$Z" -n $'a\nb\x01c\xc2\x85' touch "$T/ran"
	assert_equal "$stderr" "dlock: a\\nb\\x01c\\xc2\\x85: bad lock name for ZooKeeper ('/dlock:a\\nb\\x01c\\xc2\\x85'): a control character"
	[[ ! -e $T/ran ]] || fail "the command ran"
}

@test "an unreachable ensemble: 69, naming the cause" {
	local port; port=$(free_port)
	run -69 --separate-stderr dlock -S "zk://127.0.0.1:$port" -w 1 K true
	assert_equal "$stderr" "dlock: K: zk://127.0.0.1:$port: cannot connect: connection refused"
}

@test "a host name that does not resolve: 69, naming it; a chroot with a trailing slash is the chroot" {
	run -69 --separate-stderr dlock -S zk://nosuchhost.invalid:2181 -n K true
	[[ $stderr == 'dlock: K: zk://nosuchhost.invalid:2181: cannot resolve nosuchhost.invalid: '* ]] ||
		fail "stderr: $stderr"
	run -69 --separate-stderr dlock -S zk://a.invalid,b.invalid -n K true
	[[ $stderr == 'dlock: K: zk://a.invalid,b.invalid: cannot resolve a.invalid, b.invalid: '* ]] ||
		fail "stderr: $stderr"
	# one that does not, beside one that does: the library uses the other
	run -0 dlock -S "zk://nosuchhost.invalid:2181,$H" -n K true
	run -0 dlock -S "$Z/slash/" K sh -c 'echo "$DLOCK_KEY"'
	assert_output /slash/dlock:K
	run -64 dlock -S "$Z/slash//" K true
}

@test "a server that answers 'unimplemented' (older than 3.5): 69, one line naming the version needed" {
	zk_unimplemented "$T/old.port"
	run -69 --separate-stderr dlock -S "zk://127.0.0.1:$(<"$T/old.port")" -n K touch "$T/ran"
	assert_equal "$stderr" "dlock: K: zk://127.0.0.1:$(<"$T/old.port"): /dlock:K: the server does not implement the request: dlock needs ZooKeeper 3.5 or later"
	[[ ! -e $T/ran ]] || fail "the command ran"
	run -69 --separate-stderr dlock status -S "zk://127.0.0.1:$(<"$T/old.port")" K
	[[ $stderr == *'dlock needs ZooKeeper 3.5 or later' ]] || fail "stderr: $stderr"
}

@test "exit codes for the server's answers: a name inside a contender 64, an ACL 77" {
	# a Curator contender is an ephemeral node: no lock fits below it
	kz "$H" mkdir /dlock:K44
	kz "$H" ephemeral /dlock:K44/_c_x-lock- '' 10 >/dev/null 3>&- &
	track $!
	wait_until 10 eval '[[ -n $(children K44) ]]'
	run -64 --separate-stderr dlock -S "$Z" -n "K44/$(children K44)" true
	[[ $stderr == *'a lock name inside another lock'"'"'s contender'* ]] || fail "stderr: $stderr"
	kz "$H" setacls /dlock:K45 world:r
	run -77 dlock -S "$Z" -n K45 true
}

# A multi's answer brings each created node's path back in a buffer the
# caller sizes: a cut path would make our node another client's
@test "a 600-byte name: taken at once (-n, -w, no -w), excludes kazoo, status and history read it" {
	local long; long=L$(printf 'n%.0s' {1..600})
	run -0 --separate-stderr dlock -S "$Z" -n "$long" echo ran
	assert_output ran
	assert_equal "$stderr" ''
	no_contender "$long"
	run -0 timeout 10 "$DLOCK" -S "$Z" "$long" true
	hold h -S "$Z" -w 5 "$long"
	wait_ready h
	n_contenders "$long" 1 || fail "contenders: $(children "$long")"
	run -0 kz_try "$H" lock "/dlock:$long" 0
	assert_output timeout
	run -0 dlock status -S "$Z" --json "$long"
	assert_equal "$(jq -r '.locks[0].holders | length' <<<"$output")" 1
	# a waiter behind it: queued once, in when the holder leaves
	start_bg w -S "$Z" "$long" true
	wait_until 10 n_contenders "$long" 2
	finish h
	assert_equal "$bg_status" 0
	reap w
	assert_equal "$bg_status" 0
	no_contender "$long"
	run -0 dlock history --json -S "$Z" "$long"
	assert_equal "$(jq -r '[.events[] | select(.event == "released")] | length' <<<"$output")" 4
}

@test "a 3000-byte DLOCK_PREFIX and a 3000-byte name: taken, nothing left" {
	local pre long
	pre=P$(printf 'p%.0s' {1..3000}):
	long=L$(printf 'n%.0s' {1..3000})
	DLOCK_PREFIX=$pre run -0 --separate-stderr dlock -S "$Z" -n "$long" echo ran
	assert_output ran
	assert_equal "$stderr" ''
	run -0 kz "$H" children "/$pre$long"
	assert_output ''
	DLOCK_PREFIX=$pre run -0 dlock history -S "$Z" "$long"
	assert_output --partial released
}

@test "a release the lock node's ACL refuses (world:rc): one line, the job's status, the lock free at once" {
	kz "$H" setacls /dlock:K46 world:rc
	run -3 --separate-stderr dlock -S "$Z" -n K46 sh -c 'echo ran; exit 3'
	assert_output ran
	((${#stderr_lines[@]} == 1)) || fail "stderr: $stderr"
	[[ $stderr == "dlock: K46: release refused: $Z: deleting /dlock:K46/-"*"__lock__"*": not allowed"*"; ended the session instead, which deleted our node" ]] ||
		fail "stderr: $stderr"
	run -0 kz "$H" children /dlock:K46
	assert_output ''
	# the next holder: at once, not after the session's timeout
	local t0; t0=$(now_ms)
	run -0 dlock -S "$Z" -w 30 K46 true
	(($(now_ms) - t0 < 5000)) || fail "the next holder waited $(($(now_ms) - t0)) ms"
	# release --token: the same
	local token; token=$(dlock acquire -S "$Z" K46)
	n_contenders K46 1
	run -0 --separate-stderr dlock release -S "$Z" K46 --token "$token"
	[[ $stderr == "dlock: K46: release refused: $Z: deleting /dlock:K46/-"*"; ended the session instead, which deleted our node" ]] ||
		fail "stderr: $stderr"
	no_contender K46
}

@test "digest auth from the URL: the right password works, a wrong one is refused (77)" {
	# a lock node an administrator made for alice alone
	kz "$H" setacl /auth/dlock:K20 alice:secret
	run -0 dlock -S "zk://alice:secret@$H/auth" K20 true
	run -77 --separate-stderr dlock -S "zk://alice:wrong@$H/auth" K20 true
	[[ $stderr == *'not allowed'* ]] || fail "stderr: $stderr"
	DLOCK_PASSWORD=secret run -0 dlock -S "zk://alice@$H/auth" K20 true
}

@test "a digest the library refused between two connection attempts is added once connected: no 'invalid acl'" {
	# the library answers zoo_add_auth() with ZINVALIDSTATE while it is
	# between two connection attempts: dlock's call, right after the
	# session's start, met that when the first member tried refused at
	# once (CI, a member down); its creates then had no identity for
	# their ACL. The preloaded library gives that answer to the first
	# call, every time.
	command -v cc >/dev/null || skip_unless_strict "no C compiler"
	cc -shared -fPIC -o "$T/refuse.so" "$BATS_TEST_DIRNAME/zk_auth_refused.c" -ldl
	ZK_AUTH_REFUSED=$T/refused LD_PRELOAD=$T/refuse.so \
		run -0 --separate-stderr dlock -S "zk://carol:pc@$H/auth2" K47 true
	[[ -e $T/refused ]] || fail "the preloaded library did not refuse"
	run -0 kz "$H" acl /auth2/dlock:K47
	assert_line --regexp '^digest:carol:.* rwcda$'
	# a node that is carol's alone: reached only with the digest
	kz "$H" setacls /auth2/dlock:K48 carol:pc:rwcda
	rm "$T/refused"
	ZK_AUTH_REFUSED=$T/refused LD_PRELOAD=$T/refuse.so \
		run -0 --separate-stderr dlock -S "zk://carol:pc@$H/auth2" K48 true
	[[ -e $T/refused ]] || fail "the preloaded library did not refuse"
}

@test "two users: the first one's run leaves the lock open to the other; a node made for one stays so" {
	local A="zk://alice:pa@$H/users" B="zk://bob:pb@$H/users"
	# alice's first run makes the chroot, the lock's znode, its history's
	run -0 dlock -S "$A" K41 true
	run -0 dlock -S "$B" K41 true
	run -0 dlock -S "zk://$H/users" K41 true
	# bob waits for alice, and sees who she is; alice's history is his
	hold a -S "$A" K41
	wait_ready a
	run -0 dlock status -S "$B" K41
	assert_output --regexp " $(<"$T/a.dlock") "
	refute_output --partial 'another client'
	start_bg b -S "$B" K41 true
	wait_until 10 eval '(($(kz "$H" children /users/dlock:K41 | wc -l) == 2))'
	finish a
	reap b
	assert_equal "$bg_status" 0
	run -0 dlock history --json -S "$B" K41
	assert_equal "$(jq -r '[.events[] | select(.event == "acquired")] | length' <<<"$output")" 5
	# the nodes that stay: anyone may queue, take, give back, break;
	# only their creator may change them or their ACL
	run -0 kz "$H" acl /users/dlock:K41
	assert_line 'world:anyone rcd'
	assert_line --regexp '^digest:alice:.* rwcda$'
	run -0 kz "$H" acl /users/.dlock-history/dlock:K41
	assert_line 'world:anyone rcd'
	# a lock node made for alice alone (the way to protect a name):
	# bob is refused, and it stays hers
	kz "$H" setacls /users/dlock:K42 alice:pa:rwcda world:r
	run -0 dlock -S "$A" K42 true
	run -77 --separate-stderr dlock -S "$B" K42 true
	[[ $stderr == "dlock: K42: zk://bob:***@$H/users: "*"not allowed"* ]] || fail "stderr: $stderr"
	run -0 kz "$H" acl /users/dlock:K42
	assert_output $'digest:alice:x rwcda\nworld:anyone r'
}

@test "release --force refused by the lock node's ACL: 77, one line, no 'broken', the holder untouched" {
	kz "$H" setacls /dlock:K43 alice:pa:rwcda bob:pb:r
	hold h -S "zk://alice:pa@$H" K43
	wait_ready h
	run -77 --separate-stderr dlock release --force -S "zk://bob:pb@$H" K43
	assert_output ''
	((${#stderr_lines[@]} == 1)) || fail "stderr: $stderr"
	[[ $stderr == "dlock: K43: zk://bob:***@$H: cannot delete the holder's node /dlock:K43/-"*"__lock__"*": not allowed by the ACL of /dlock:K43"* ]] ||
		fail "stderr: $stderr"
	run -0 dlock status -S "zk://bob:pb@$H" K43
	[[ -z $(cat "$T/h.sig" 2>/dev/null) ]] || fail "the holder was told: $(cat "$T/h.sig")"
	finish h
	assert_equal "$bg_status" 0
}

@test "a chroot in the URL: the lock under it, the chroot made if missing" {
	hold h -S "$Z/apps/x" K21
	wait_ready h
	assert_equal "$(job_var h DLOCK_KEY)" /apps/x/dlock:K21
	[[ -n $(kz "$H" children /apps/x/dlock:K21) ]] || fail "no contender under the chroot"
	run -0 kz_try "$H/apps/x" lock /dlock:K21 0
	assert_output timeout
	finish h
}

@test "--ttl beyond the server's maximum: the server's, and --verbose says so" {
	run -0 --separate-stderr dlock -S "$Z" --verbose -t 100 K22 true
	[[ $stderr =~ session\ 0x[0-9a-f]+,\ timeout\ 60\ s\ \(the\ server ]] || fail "stderr: $stderr"
	# asked for more than the client's int of milliseconds holds twice
	run -0 --separate-stderr dlock -S "$Z" --verbose -t 1073742 K22 true
	[[ $stderr =~ timeout\ 60\ s\ \(the\ server ]] || fail "stderr: $stderr"
}

# ttl_of NAME: the TTL status shows its (first) holder with, in ms
ttl_of() { dlock status --json -S "$Z" "$1" | jq -r '.locks[0].holders[0].ttl_ms'; }

@test "status shows the TTL the server granted: bounded by its limits, and as dlock extend changed it" {
	# the test servers grant 1 s to 60 s
	hold lo -S "$Z" -t 0.9 --node-timeout 0.8 K46
	hold hi -S "$Z" -t 100 K47
	wait_ready lo
	wait_ready hi
	run -0 ttl_of K46
	assert_output 1000
	run -0 ttl_of K47
	assert_output 60000
	run -0 dlock status -S "$Z" K47
	assert_output --partial 'timeout 1m0s]'
	finish lo
	finish hi
	local token
	token=$(dlock acquire -S "$Z" -t 2 K48)
	run -0 ttl_of K48
	assert_output 2000
	run -0 dlock extend -S "$Z" -t 30 K48 --token "$token"
	run -0 ttl_of K48
	assert_output 30000
	run -0 dlock status -S "$Z" K48
	assert_output --partial 'timeout 30s]'
	# and back: the node's name says 2 s, the data no more than that
	run -0 dlock extend -S "$Z" -t 2 K48 --token "$token"
	run -0 ttl_of K48
	assert_output 2000
	run -0 dlock release -S "$Z" K48 --token "$token"
}

@test "--limit 2: the holders' slots are 1 and 2, as on every engine" {
	hold a -S "$Z" --limit 2 K49
	wait_ready a
	hold b -S "$Z" --limit 2 K49
	wait_ready b
	run -0 dlock status --json -S "$Z" K49
	assert_equal "$(jq -r '[.locks[0].holders[].slot] | join(",")' <<<"$output")" 1,2
	finish a
	finish b
}

@test "no descriptor of the client library's reaches the command" {
	local ls_fds='cd /proc/$$/fd && for f in *; do [ "$f" -gt 2 ] && echo "$f $(readlink "$f" | sed "s/\\[.*//")"; done'
	sh -c "$ls_fds" >"$T/mine"
	dlock -S "$Z" K23 sh -c "$ls_fds" >"$T/theirs"
	diff "$T/mine" "$T/theirs" || fail "the command has other descriptors"
}

@test "the client library's threads take no signal: every one is blocked in them" {
	hold h -S "$Z" K25
	wait_ready h
	local pid t mask n=0
	pid=$(<"$T/h.dlock")
	for t in /proc/"$pid"/task/*; do
		[[ ${t##*/} == "$pid" ]] && continue
		mask=$(sed -n 's/^SigBlk:\t//p' "$t/status")
		# HUP INT QUIT USR1 ALRM TERM CHLD
		(((16#$mask & 0x16207) == 0x16207)) || fail "thread ${t##*/} blocks only $mask"
		n=$((n + 1))
	done
	((n >= 2)) || fail "no library threads in dlock ($n)"
	finish h
}

@test "dlock stopped past its lease: the watchdog stops the job, 75 after" {
	# -t 4: the SIGKILL follows the TERM by a twentieth of the TTL, too
	# short at -t 2 for the job's sh to record the TERM under load (see
	# job.bats, "the job is stopped before the lease lapses")
	hold h -S "$Z" -t 4 K26
	wait_ready h
	kill -STOP "$(<"$T/h.dlock")"
	wait_until 10 test -e "$T/h.sig" || fail "the job was not told"
	kill -CONT "$(<"$T/h.dlock")"
	reap h
	assert_equal "$bg_status" 75
	assert_equal "$(cat "$T/h.sig")" TERM
	# the loss said once: not again as a failed release (session expired)
	one_line "$T/h.err" "dlock: K26: lease lost: *"
}

@test "the server stopped past the lease: 75, the loss said once, no failed release" {
	hold h -S "$Z" -t 2 K35
	wait_ready h
	kill -STOP "$(zk_pid s)"
	wait_until 15 dead "$(<"$T/h.dlock")"
	kill -CONT "$(zk_pid s)"	# before anything may fail
	reap h
	assert_equal "$bg_status" 75
	one_line "$T/h.err" "dlock: K35: lease lost: *"
	# the server, back, expires the session
	wait_until 15 no_contender K35 || fail "the node outlived its session"
}

@test "dlock killed by SIGKILL: its node goes with its session" {
	hold h -S "$Z" -t 2 K27
	wait_ready h
	kill -KILL "$(<"$T/h.dlock")"
	wait_until 10 no_contender K27 || fail "the node outlived the session"
	run -0 dlock -S "$Z" -n --fair K27 true
}

@test "-k: two locks, one token; a nested dlock re-enters either; acquire's token re-enters" {
	run -0 timeout 10 "$DLOCK" -S "$Z" -k K28a -k K28b sh -c \
		'echo "$DLOCK_TOKEN"; "$0" -S "$1" -n K28b sh -c "echo \$DLOCK_TOKEN"' "$DLOCK" "$Z"
	assert_equal "${lines[0]}" "${lines[1]}"
	no_contender K28a
	no_contender K28b
	local vars
	vars=$(dlock acquire --export -S "$Z" -t 10 K28a)
	(
		eval "$vars"
		dlock -S "$Z" -n K28a true
	) || fail "acquire's token did not re-enter"
	(eval "$vars"; dlock release -S "$Z" K28a) || fail "not released by DLOCK_TOKEN"
	no_contender K28a
}

@test "SIGTERM while waiting: 143, its node gone" {
	hold h -S "$Z" K24
	wait_ready h
	start_bg w -S "$Z" K24 true
	wait_until 10 n_contenders K24 2
	kill -TERM "$(<"$T/w.dlock")"
	reap w
	assert_equal "$bg_status" 143
	n_contenders K24 1
	finish h
}
