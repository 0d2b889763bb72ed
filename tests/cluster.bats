#!/usr/bin/env bats
# cluster.bats - a redis:// URL naming any node of a Redis Cluster: dlock
# follows MOVED and ASK to the node that owns the lock's slot. A real
# 3-master cluster, made once for the file in its temp dir; each test uses
# lock names of its own. Bad and looping redirections come from
# tests/fake_redis.py, which answers every command with a given error.

load helpers

# ---- the cluster ----------------------------------------------------------

C=${BATS_FILE_TMPDIR:-/nonexistent}/cluster

cluster_up() {	# every node says cluster_state:ok
	local p
	for p in $(<"$C/ports"); do
		redis-cli -p "$p" cluster info 2>/dev/null | tr -d '\r' |
			grep -qx 'cluster_state:ok' || return 1
	done
}

# cluster_port: a free port whose cluster bus port (+10000) is free too
cluster_port() {
	"$PYTHON" -c 'import socket, random
for _ in range(100):
    p = random.randint(20000, 55535)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
    except OSError:
        continue
    print(p); break'
}

setup_file() {
	local i p ports=()
	mkdir -p "$C"
	for i in 1 2 3; do
		p=$(cluster_port)
		mkdir -p "$C/$p"
		redis-server --port "$p" --bind 127.0.0.1 --dir "$C/$p" \
			--cluster-enabled yes --cluster-config-file "nodes-$p.conf" \
			--save '' --appendonly no >"$C/$p/log" 2>&1 </dev/null 3>&- &
		echo $! >"$C/$p/pid"
		ports+=("$p")
	done
	echo "${ports[*]}" >"$C/ports"
	for p in "${ports[@]}"; do
		wait_until 5 eval "[[ \$(redis-cli -p $p ping 2>/dev/null) == PONG ]]" ||
			{ echo "cluster node $p did not start: $(cat "$C/$p/log")" >&2; return 1; }
	done
	redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-yes \
		>"$C/create.log" 2>&1 || { cat "$C/create.log" >&2; return 1; }
	wait_until 20 cluster_up || { echo "cluster_state not ok" >&2; return 1; }
}

teardown_file() {
	local f
	for f in "$C"/*/pid; do
		[[ -e $f ]] && kill "$(<"$f")" 2>/dev/null
	done
	true
}

ports() { cat "$C/ports"; }
curl_() { echo "redis://127.0.0.1:$1"; }	# curl_ PORT: a node's URL
cr() { local p=$1; shift; redis-cli -p "$p" "$@"; }	# cr PORT ARGS...

# owner KEY: the port of the master that serves KEY's slot
owner() {
	local p out
	for p in $(ports); do
		out=$(cr "$p" exists "$1" 2>&1)
		[[ $out == MOVED* || $out == ASK* ]] || { echo "$p"; return; }
	done
	fail "no node owns $1"
}
# others KEY: the ports of the other masters
others() {
	local o p
	o=$(owner "$1")
	for p in $(ports); do [[ $p == "$o" ]] || echo "$p"; done
}
node_id() { cr "$1" cluster myid; }
keys_on() { cr "$1" --scan --pattern "*$2*" | sort; }	# keys_on PORT NAME
exists_on() { [[ $(cr "$1" exists "$2") == 1 ]]; }
blocked_on() {	# blocked_on PORT CMD: some client of PORT is in CMD
	cr "$1" client list | grep -q "cmd=$2 "
}

# ---- tests -------------------------------------------------------------

@test "a URL of a node that does not own the slot takes the lock on the owner" {
	local o n
	o=$(owner dlock:c-first)
	n=$(others dlock:c-first | head -1)
	run --separate-stderr dlock -S "$(curl_ "$n")" c-first \
		sh -c "redis-cli -p $o exists dlock:c-first; redis-cli -p $o get dlock:c-first"
	assert_success
	[[ $stderr == "" ]] || fail "stderr: $stderr"
	assert_line -n 0 1
	[[ ${lines[1]} =~ ^[0-9a-f]{32}$ ]] || fail "no token on the owner: ${lines[1]}"
	# released on the owner; nothing of it on the others
	run exists_on "$o" dlock:c-first
	assert_failure
	for n in $(others dlock:c-first); do
		[[ -z $(keys_on "$n" c-first) ]] || fail "keys on $n: $(keys_on "$n" c-first)"
	done
}

@test "two dlocks through different nodes exclude each other" {
	local o a b
	o=$(owner dlock:c-excl)
	mapfile -t oth < <(others dlock:c-excl); a=${oth[0]} b=${oth[1]}
	dlock -S "$(curl_ "$a")" c-excl "$T/job" "$T/h" 2>"$T/h.err" &
	track $!
	wait_until 10 test -e "$T/h.ready" || fail "holder: $(cat "$T/h.err")"
	exists_on "$o" dlock:c-excl
	run dlock -S "$(curl_ "$b")" -n c-excl true
	assert_failure 1
	# and through the owner itself
	run dlock -S "$(curl_ "$o")" -n c-excl true
	assert_failure 1
	touch "$T/h.release"
	wait_until 10 eval '! exists_on '"$o"' dlock:c-excl'
	run dlock -S "$(curl_ "$b")" -n c-excl true
	assert_success
}

@test "a waiter through a non-owner blocks on the owner and is woken at release" {
	local o a b pid
	o=$(owner dlock:c-wake)
	mapfile -t oth < <(others dlock:c-wake); a=${oth[0]} b=${oth[1]}
	dlock -S "$(curl_ "$a")" c-wake "$T/job" "$T/h" 2>"$T/h.err" &
	track $!
	wait_until 10 test -e "$T/h.ready" || fail "holder: $(cat "$T/h.err")"
	dlock -S "$(curl_ "$b")" c-wake touch "$T/w.ran" 2>"$T/w.err" &
	pid=$!
	track $pid
	# its BLPOP went to the owner, not to the node it was given
	wait_until 10 blocked_on "$o" blpop || fail "no BLPOP on the owner: $(cat "$T/w.err")"
	run blocked_on "$b" blpop
	assert_failure
	[[ ! -e $T/w.ran ]] || fail "the waiter ran while the lock was held"
	touch "$T/h.release"
	wait_until 10 test -e "$T/w.ran" || fail "waiter not woken: $(cat "$T/w.err")"
	wait "$pid"
}

@test "the lease is renewed on the owner over a job longer than the TTL" {
	local o n
	o=$(owner dlock:c-renew)
	n=$(others dlock:c-renew | head -1)
	# -t 1, a 3 s job: the key must still be there after 2.5 s
	run --separate-stderr dlock -S "$(curl_ "$n")" -t 1 c-renew \
		sh -c "sleep 2.5; redis-cli -p $o exists dlock:c-renew"
	assert_success
	assert_output 1
	run exists_on "$o" dlock:c-renew
	assert_failure
}

# migrate_keys FROM TO NAME: the keys of lock NAME moved with MIGRATE
migrate_keys() {
	local from=$1 to=$2 keys
	keys=$(keys_on "$from" "$3")
	[[ -n $keys ]] || return 0
	# shellcheck disable=SC2086
	cr "$from" migrate 127.0.0.1 "$to" "" 0 5000 KEYS $keys >/dev/null
}

# stat PORT NAME: INFO commandstats / errorstats count of NAME on a node
stat() {
	local n
	n=$(cr "$1" info all | tr -d '\r' | sed -n "s/^$2:calls=\([0-9]*\).*/\1/p;s/^$2:count=//p")
	echo "${n:-0}"
}
asked() { (($(stat "$1" cmdstat_asking) > 0)); }
renewed() { (($(stat "$1" cmdstat_evalsha) + $(stat "$1" cmdstat_eval) > 0)); }

@test "a slot migrated mid-run: ASK is followed to the importing node, MOVED after" {
	local key=dlock:c-move o n x slot pid p oth
	o=$(owner $key)
	mapfile -t oth < <(others $key); n=${oth[0]} x=${oth[1]}
	slot=$(cr "$o" cluster keyslot $key)
	# -t 6: a renewal every 2 s, so that a slow machine still has time to
	# finish the migration while the lease lasts: scripts of several keys
	# get TRYAGAIN on the importing node (all of a lock's keys do not exist)
	dlock -S "$(curl_ "$n")" -t 6 c-move "$T/job" "$T/h" 2>"$T/h.err" &
	pid=$!
	track $pid
	wait_until 10 test -e "$T/h.ready" || fail "holder: $(cat "$T/h.err")"
	# by hand, as redis-cli --cluster reshard does, with a pause between
	# the steps: IMPORTING, MIGRATING, the keys moved (so the old owner
	# answers ASK), and only then the slot given to the new owner (MOVED)
	cr "$x" config resetstat >/dev/null
	cr "$x" cluster setslot "$slot" importing "$(node_id "$o")" >/dev/null
	cr "$o" cluster setslot "$slot" migrating "$(node_id "$x")" >/dev/null
	migrate_keys "$o" "$x" c-move
	[[ -z $(keys_on "$o" c-move) ]] || fail "MIGRATE left keys: $(keys_on "$o" c-move)"
	# the next renewal is sent to the importing node
	wait_until 10 asked "$x" || fail "no ASKING on the importing node: $(cat "$T/h.err")"
	for p in $(ports); do
		cr "$p" cluster setslot "$slot" node "$(node_id "$x")" >/dev/null
	done
	cr "$x" config resetstat >/dev/null
	# renewed on the new owner, sent there by MOVED
	wait_until 10 renewed "$x" || fail "no renewal on the new owner: $(cat "$T/h.err")"
	exists_on "$x" $key || fail "the lease ran out after the move: $(cat "$T/h.err")"
	[[ ! -e $T/h.sig ]] || fail "the job was signalled: $(cat "$T/h.sig")"
	touch "$T/h.release"
	wait "$pid" || fail "dlock: $? $(cat "$T/h.err")"
	run exists_on "$x" $key
	assert_failure
	[[ -z $(keys_on "$o" c-move) ]] || fail "left on the old owner: $(keys_on "$o" c-move)"
	run cat "$T/h.err"
	assert_output ""
	# the next run, through the old owner, is sent on to the new one
	run dlock -S "$(curl_ "$o")" -n c-move sh -c "redis-cli -p $x exists $key"
	assert_success
	assert_output 1
}

# A release in the middle of a slot migration: every script of several keys
# gets TRYAGAIN once the slot is MIGRATING (some of a lock's keys do not
# exist, so the old owner says ASK, and the new one TRYAGAIN). The release
# was not retried ("release failed ... lapses within 30 s", the lock left
# for its TTL); a -w waiter that had been told the lock was held, and ran
# out meanwhile, exited 69 as if the servers could not be reached.
@test "a release during a slot migration is retried until the slot has moved" {
	local key=dlock:c-relmove o n x slot pid wpid oth p
	o=$(owner $key)
	mapfile -t oth < <(others $key); n=${oth[0]} x=${oth[1]}
	slot=$(cr "$o" cluster keyslot $key)
	dlock -S "$(curl_ "$n")" c-relmove "$T/job" "$T/h" 2>"$T/h.err" &
	pid=$!
	track $pid
	wait_until 10 test -e "$T/h.ready" || fail "holder: $(cat "$T/h.err")"
	dlock -S "$(curl_ "$n")" -w 1.5 c-relmove touch "$T/w.ran" 2>"$T/w.err" &
	wpid=$!
	track $wpid
	wait_until 10 blocked_on "$o" blpop || fail "the waiter is not waiting: $(cat "$T/w.err")"
	cr "$x" cluster setslot "$slot" importing "$(node_id "$o")" >/dev/null
	cr "$o" cluster setslot "$slot" migrating "$(node_id "$x")" >/dev/null
	touch "$T/h.release"	# the job ends: its release meets TRYAGAIN
	local st=0
	wait "$wpid" || st=$?
	assert_equal "$st" 1	# held, as it was last told
	[[ ! -e $T/w.ran ]] || fail "the waiter ran"
	alive "$pid" || fail "the holder gave up its release: $(cat "$T/h.err")"
	migrate_keys "$o" "$x" c-relmove
	for p in $(ports); do
		cr "$p" cluster setslot "$slot" node "$(node_id "$x")" >/dev/null
	done
	wait "$pid" || fail "dlock: $? $(cat "$T/h.err")"
	run cat "$T/h.err"
	assert_output ""
	run exists_on "$x" $key
	assert_failure
	run dlock -S "$(curl_ "$o")" -n c-relmove true
	assert_success
}

# slots_upto PORT SLOT: how many of the node's slots are SLOT or below,
# which is how many slots redis-cli --cluster reshard moves (lowest first)
# until it has moved SLOT
slots_upto() {
	cr "$1" cluster nodes | awk -v s="$2" '/myself/ {
		for (i = 9; i <= NF; i++) {
			if ($i ~ /^\[/) continue
			k = split($i, r, "-"); a = r[1]; b = k > 1 ? r[2] : r[1]
			if (a <= s) n += (b < s ? b : s) - a + 1
		}
		print n + 0 }'
}

@test "redis-cli --cluster reshard of the lock's slot during a run keeps the lease renewing" {
	local name key o n x slot pid count oth
	# a lock whose slot comes early in its owner's, so that the reshard
	# is quick
	for name in c-rs-{1..400}; do
		key=dlock:$name
		o=$(owner "$key")
		slot=$(cr "$o" cluster keyslot "$key")
		count=$(slots_upto "$o" "$slot")
		((count <= 40)) && break
	done
	((count <= 40)) || fail "no lock name with an early slot"
	mapfile -t oth < <(others "$key"); n=${oth[0]} x=${oth[1]}
	dlock -S "$(curl_ "$n")" -t 1 "$name" "$T/job" "$T/h" 2>"$T/h.err" &
	pid=$!
	track $pid
	wait_until 10 test -e "$T/h.ready" || fail "holder: $(cat "$T/h.err")"
	redis-cli --cluster reshard "127.0.0.1:$o" --cluster-from "$(node_id "$o")" \
		--cluster-to "$(node_id "$x")" --cluster-slots "$count" --cluster-yes \
		>"$T/reshard.log" 2>&1 || fail "reshard: $(tail -5 "$T/reshard.log")"
	wait_until 20 cluster_up
	[[ $(owner "$key") == "$x" ]] || fail "the slot did not move: $(tail -3 "$T/reshard.log")"
	sleep 1.5	# past the TTL
	exists_on "$x" "$key" || fail "the lease ran out after the reshard: $(cat "$T/h.err")"
	touch "$T/h.release"
	wait "$pid" || fail "dlock: $? $(cat "$T/h.err")"
	run exists_on "$x" "$key"
	assert_failure
	[[ -z $(keys_on "$o" "$name") ]] || fail "left on the old owner: $(keys_on "$o" "$name")"
	run cat "$T/h.err"
	assert_output ""
}

@test "status lists the locks of every master, and reads locks on several nodes" {
	local name p want=() seen=" " pid
	# one lock on each master, held through the first node
	for name in c-ls-{1..60}; do
		p=$(owner "dlock:$name")
		[[ $seen == *" $p "* ]] && continue
		seen+="$p "
		want+=("$name")
		((${#want[@]} == 3)) && break
	done
	((${#want[@]} == 3)) || fail "no lock names on every master"
	for name in "${want[@]}"; do
		dlock -S "$(curl_ "$(ports | cut -d' ' -f1)")" "$name" "$T/job" "$T/$name" \
			2>"$T/$name.err" &
		track $!
		wait_until 10 test -e "$T/$name.ready" || fail "$name: $(cat "$T/$name.err")"
	done
	for p in $(ports); do
		run --separate-stderr dlock status -S "$(curl_ "$p")"
		assert_success
		for name in "${want[@]}"; do
			assert_line --regexp "^$name +held"
		done
	done
	# and named, several at once: their slots differ
	run --separate-stderr dlock status -S "$(curl_ "$(ports | cut -d' ' -f2)")" "${want[@]}"
	assert_success
	for name in "${want[@]}"; do
		assert_line --regexp "^$name: held"
	done
	for name in "${want[@]}"; do touch "$T/$name.release"; done
}

# start_fake NAME: tests/fake_redis.py in front of a cluster node, answering
# every command with the first line of $T/NAME.state
start_fake() {
	local name=$1
	: >"$T/$name.state"
	"$PYTHON" "$BATS_TEST_DIRNAME/fake_redis.py" "127.0.0.1:$(ports | cut -d' ' -f1)" \
		--state "$T/$name.state" >"$T/$name.fake" 2>"$T/$name.fake.err" </dev/null 3>&- &
	track $!
	wait_until 5 grep -q '^ready ' "$T/$name.fake" ||
		fail "fake_redis $name did not start: $(cat "$T/$name.fake.err")"
}
fake_port() { sed -n 's/^ready //p' "$T/$1.fake"; }

@test "an unparsable MOVED is one clear error, 70, and nothing runs" {
	start_fake f
	echo "MOVED twelve 127.0.0.1:6379" >"$T/f.state"
	run --separate-stderr dlock -S "redis://127.0.0.1:$(fake_port f)" c-bad touch "$T/ran"
	assert_failure 70
	[[ $stderr == "dlock: c-bad: redis://127.0.0.1:$(fake_port f): bad cluster redirection: MOVED twelve 127.0.0.1:6379" ]] ||
		fail "stderr: $stderr"
	[[ ! -e $T/ran ]]
}

@test "a redirection loop is bounded: 69 with the cause" {
	local p redirect
	start_fake f
	p=$(fake_port f)
	for redirect in "MOVED 42 127.0.0.1:$p" "MOVED 42 :$p" "ASK 42 127.0.0.1:$p"; do
		echo "$redirect" >"$T/f.state"
		run --separate-stderr dlock -S "redis://127.0.0.1:$p" -w 0.5 c-loop touch "$T/ran"
		[[ $status == 69 ]] || fail "$redirect: status $status: $stderr"
		[[ $stderr == *"5 cluster redirections in a row, the last $redirect"* ]] ||
			fail "$redirect: stderr: $stderr"
		(($(wc -l <<<"$stderr") == 1)) || fail "more than one line: $stderr"
		[[ ! -e $T/ran ]]
	done
}

@test "a plain server is not asked about clusters" {
	start_redis_tcp r
	rcli r config resetstat >/dev/null
	run dlock -S "$(tcp_url r)" c-plain true
	assert_success
	run rcli r info commandstats
	refute_output --partial cluster
	refute_output --partial asking
}

@test "nodes of one cluster given as several servers (RedLock) are refused" {
	local o oth
	o=$(owner dlock:c-seeds)
	mapfile -t oth < <(others dlock:c-seeds)
	run --separate-stderr dlock -S "$(curl_ "$o")" -S "$(curl_ "${oth[0]}")" \
		-S "$(curl_ "${oth[1]}")" c-seeds touch "$T/ran"
	assert_failure 64
	[[ $stderr == *"a node of the same Redis Cluster as "*"give one URL of a cluster"* ]] ||
		fail "stderr: $stderr"
	[[ ! -e $T/ran ]]
	wait_until 5 eval '! exists_on '"$o"' dlock:c-seeds' || fail "the lock was left"
}

# ---- seed lists (redis+cluster://) and several keys ------------------------

@test "redis+cluster://: seeds that are down are passed over within one try (-n)" {
	local o n d1 d2
	o=$(owner dlock:c-seedlist)
	n=$(others dlock:c-seedlist | head -1)
	d1=$(free_port) d2=$(free_port)
	run --separate-stderr dlock -n \
		-S "redis+cluster://127.0.0.1:$d1,127.0.0.1:$d2,127.0.0.1:$n" c-seedlist \
		sh -c "redis-cli -p $o exists dlock:c-seedlist"
	assert_success
	assert_output 1
	[[ $stderr == "" ]] || fail "stderr: $stderr"
	# in DLOCK_SERVERS, the commas between seeds stay in the URL
	DLOCK_SERVERS="redis+cluster://127.0.0.1:$d1,127.0.0.1:$n" \
		run --separate-stderr dlock -n c-seedlist \
		sh -c "redis-cli -p $o exists dlock:c-seedlist"
	assert_success
	assert_output 1
	run exists_on "$o" dlock:c-seedlist
	assert_failure
}

@test "redis+cluster://: a waiter and a holder through different seed lists exclude each other" {
	local o oth d
	o=$(owner dlock:c-seedexcl)
	mapfile -t oth < <(others dlock:c-seedexcl)
	d=$(free_port)
	dlock -S "redis+cluster://127.0.0.1:$d,127.0.0.1:${oth[0]}" -t 1 c-seedexcl \
		"$T/job" "$T/h" 2>"$T/h.err" &
	track $!
	wait_until 10 test -e "$T/h.ready" || fail "holder: $(cat "$T/h.err")"
	run dlock -n -S "redis+cluster://127.0.0.1:${oth[1]},127.0.0.1:$o" c-seedexcl true
	assert_failure 1
	# held past its 1 s TTL: the lease is renewed on the owner
	sleep 1.5
	exists_on "$o" dlock:c-seedexcl || fail "the lease lapsed"
	touch "$T/h.release"
	wait_until 10 eval '! exists_on '"$o"' dlock:c-seedexcl'
}

@test "redis+cluster://: every seed down is 69, naming the last seed tried" {
	local d1 d2
	d1=$(free_port) d2=$(free_port)
	run --separate-stderr dlock -n -S "redis+cluster://127.0.0.1:$d1,127.0.0.1:$d2" \
		c-seeddown touch "$T/ran"
	assert_failure 69
	[[ $stderr == *"redis+cluster://127.0.0.1:$d1,127.0.0.1:$d2 (seed 127.0.0.1:$d2): "*"refused"* ]] ||
		fail "stderr: $stderr"
	[[ ! -e $T/ran ]]
}

@test "redis+cluster://: a bad seed list is 64, before anything runs" {
	run --separate-stderr dlock -S "redis+cluster://127.0.0.1:1,,127.0.0.1:2" c-bad touch "$T/ran"
	assert_failure 64
	[[ $stderr == *"empty seed node address"* ]] || fail "stderr: $stderr"
	run --separate-stderr dlock -S "redis+cluster://127.0.0.1:1/3" c-bad touch "$T/ran"
	assert_failure 64
	[[ $stderr == *"database 0"* ]] || fail "stderr: $stderr"
	[[ ! -e $T/ran ]]
}

# two_names PREFIX: two lock names PREFIX-N whose keys live on different masters
two_names() {
	local i first='' o1=''
	for i in $(seq 0 50); do
		if [[ -z $first ]]; then
			first=$1-$i o1=$(owner "dlock:$1-$i")
		elif [[ $(owner "dlock:$1-$i") != "$o1" ]]; then
			echo "$first $1-$i"
			return
		fi
	done
	fail "no two names of $1 on different masters"
}

@test "-k: keys on different masters are all taken, each on its owner, and all given back" {
	local a b oa ob n
	read -r a b < <(two_names c-mk)
	oa=$(owner "dlock:$a") ob=$(owner "dlock:$b")
	n=$(ports | tr ' ' '\n' | head -1)
	run --separate-stderr dlock -S "$(curl_ "$n")" -k "$a" -k "$b" \
		sh -c "redis-cli -p $oa exists dlock:$a; redis-cli -p $ob exists dlock:$b; echo \$DLOCK_KEYS"
	assert_success
	[[ $stderr == "" ]] || fail "stderr: $stderr"
	assert_line -n 0 1
	assert_line -n 1 1
	assert_line -n 2 "dlock:$a dlock:$b"
	run exists_on "$oa" "dlock:$a"
	assert_failure
	run exists_on "$ob" "dlock:$b"
	assert_failure
}

@test "-k: across masters, all or nothing: one key held leaves nothing on the other" {
	local a b oa ob
	read -r a b < <(two_names c-mkheld)
	oa=$(owner "dlock:$a") ob=$(owner "dlock:$b")
	# b is held by another job
	dlock -S "$(curl_ "$ob")" "$b" "$T/job" "$T/h" 2>"$T/h.err" &
	track $!
	wait_until 10 test -e "$T/h.ready" || fail "holder: $(cat "$T/h.err")"
	run dlock -n -S "$(curl_ "$oa")" -k "$b" -k "$a" touch "$T/ran"
	assert_failure 1
	[[ ! -e $T/ran ]]
	run exists_on "$oa" "dlock:$a"
	assert_failure
	# and with -w, it gets both once b is released
	dlock -w 10 -S "$(curl_ "$oa")" -k "$a" -k "$b" touch "$T/ran" 2>"$T/w.err" &
	track $!
	local w=$!
	sleep 0.3
	[[ ! -e $T/ran ]] || fail "ran while $b was held"
	touch "$T/h.release"
	wait_until 10 test -e "$T/ran" || fail "waiter: $(cat "$T/w.err")"
	wait "$w"
}

@test "redis+cluster://: a seed that is a standalone server is refused (64), nothing taken there" {
	start_redis_tcp r
	run --separate-stderr dlock -n -S "redis+cluster://127.0.0.1:$(<"$T/r/port")" c-plain touch "$T/ran"
	assert_failure 64
	[[ $stderr == *"not a Redis Cluster node"*"cluster support disabled"* ]] || fail "stderr: $stderr"
	[[ ! -e $T/ran ]]
	[[ -z $(rcli r --scan) ]] || fail "keys left: $(rcli r --scan)"
}

@test "redis+cluster://: a round a seed may have run is not run again at the next seed" {
	local o fake
	o=$(owner dlock:c-drop)
	# a relay to the owner that runs the commands and loses the connection
	# before the reply: the first seed took the lock, and the second, the
	# same owner, would find it taken by this very round
	touch "$T/drop"
	"$PYTHON" "$BATS_TEST_DIRNAME/fake_redis.py" "127.0.0.1:$o" --drop "$T/drop" \
		>"$T/fake" 2>"$T/fake.err" </dev/null 3>&- &
	track $!
	wait_until 5 grep -q '^ready ' "$T/fake" || fail "fake_redis: $(cat "$T/fake.err")"
	fake=127.0.0.1:$(sed -n 's/^ready //p' "$T/fake")
	run -69 --separate-stderr dlock -n --connect-budget 0 -S "redis+cluster://$fake,127.0.0.1:$o" c-drop touch "$T/ran"
	[[ $stderr == *"(seed $fake): "* ]] || fail "stderr: $stderr"
	[[ ! -e $T/ran ]] || fail "the command ran"
	run exists_on "$o" dlock:c-drop
	assert_failure	# given back, not left for a TTL
	# waiting, the next try goes to the next seed, at once
	local t0; t0=$(now_ms)
	run -0 dlock -w 10 -t 20 -S "redis+cluster://$fake,127.0.0.1:$o" c-drop touch "$T/ran"
	(($(now_ms) - t0 < 5000)) || fail "took $(($(now_ms) - t0)) ms"
	run exists_on "$o" dlock:c-drop
	assert_failure
}

@test "redis+cluster://: a seed that does not answer in time sends the next try to the next seed" {
	local o t0
	o=$(owner dlock:c-hung)
	start_redis_tcp hung
	kill -STOP "$(server_pid hung)"
	t0=$(now_ms)
	run -0 dlock --node-timeout 0.5 -w 10 \
		-S "redis+cluster://127.0.0.1:$(<"$T/hung/port"),127.0.0.1:$o" c-hung touch "$T/ran"
	kill -CONT "$(server_pid hung)"
	(($(now_ms) - t0 < 4000)) || fail "took $(($(now_ms) - t0)) ms"
	[[ -e $T/ran ]]
	run exists_on "$o" dlock:c-hung
	assert_failure
}
