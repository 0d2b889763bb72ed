#!/usr/bin/env bats
# clusters.bats - tests/nemesis.sh, a short run on each engine's cluster:
# three etcd members, a ZooKeeper ensemble of three, a PostgreSQL primary
# with a streaming standby, a Redis master with two replicas and three
# sentinels, a MariaDB primary and replica; each member on a host of its
# own (network namespaces), started and stopped by the run. Four workers
# run critical sections under one lock while members are killed, paused,
# cut off and failed over, each kind of fault once; the run checks that no
# two sections overlapped, the counter is exact, the fences strictly
# increase, every broken holder was told (75), and nothing is left. Its
# report goes to the TAP output. The soak is the same script with more
# SECTIONS (README: Clusters).
#
# Runs alone (meson: is_parallel false): each run is timing under faults,
# and a cluster takes both cores while it elects and fails over.

load helpers

setup() {
	common_setup
	no_suite_budget	# the clusters' faults as users meet them
	[[ $(id -u) == 0 ]] ||
		skip_unless_strict "the clusters need root (network namespaces; PostgreSQL as its user)"
}

# nemesis ENGINE FAULTS: a short run, until each kind of fault in FAULTS
# (a comma-separated list) struck once; exit status and report in $status
# and $output, the report in the TAP output too
nemesis() {
	local engine=$1 faults=$2 kinds
	IFS=, read -ra kinds <<<"$faults"
	run env WORKERS=4 SECTIONS=4 TTL=3 GAP=0.5 DOWN_MAX=3 FAULTS="$faults" \
		MIN_FAULTS=${#kinds[@]} "$BATS_TEST_DIRNAME/nemesis.sh" "$engine"
	sed 's/^/# /' <<<"$output" >&3
	if [[ $output == *"no network namespaces"* ]]; then
		[[ ${DLOCK_TEST_STRICT:-0} != 1 ]] ||
			fail "DLOCK_TEST_STRICT: no network namespaces: no member or client cut off"
	fi
	((status != 2)) || fail "$engine: the cluster did not start"
	# the FAIL lines again, after "not ok": CI's excerpt of the log may
	# start there
	((status == 0)) || fail "$engine: a check failed: $(grep 'FAIL' <<<"$output" | head -n 5)
$(tail -n 30 <<<"$output")"
}

@test "etcd, 3 members: members killed, paused, cut off, the leader killed, a majority and a client cut off" {
	command -v etcd >/dev/null || skip_unless_strict "no etcd (etcd-server)"
	nemesis etcd kill,stop,isolate,split,leader,quorum,client
}

@test "ZooKeeper, an ensemble of 3: members killed, paused, cut off, the leader killed, a majority and a client cut off" {
	command -v java >/dev/null && [[ -r /usr/share/java/zookeeper.jar ]] ||
		skip_unless_strict "no ZooKeeper (zookeeper, default-jre-headless)"
	nemesis zookeeper kill,stop,isolate,split,leader,quorum,client
}

@test "PostgreSQL, primary and standby: the primary killed, either paused or cut off, a client cut off from the primary, the standby promoted (also lagging)" {
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
		skip_unless_strict "no PostgreSQL server"
	nemesis postgres leader,stop,isolate,client,failover,lagover
}

@test "Redis Sentinel, a master, 2 replicas, 3 sentinels: hosts paused, cut off, a client cut off, a sentinel killed, failovers" {
	command -v redis-server >/dev/null || skip_unless_strict "no redis-server"
	nemesis redis stop,isolate,split,client,sentinel,failover
}

@test "Redis Sentinel: the master's host killed (server and sentinel), started again" {
	command -v redis-server >/dev/null || skip_unless_strict "no redis-server"
	# The host's sentinel, started again, often learns of the failover in
	# its first second, and has the new master "since it started": main
	# took that for an old master (src/redis/sentinel.c: age + 1 s >= uptime), and a
	# new holder locked there up to 0.13 s before the old one was told,
	# about one such fault in seven. Its age counts from its start now.
	nemesis redis leader,leader,leader
}

@test "MariaDB, primary and replica behind an address: the primary killed, either paused or cut off, a client cut off, the replica promoted" {
	command -v mariadbd >/dev/null || skip_unless_strict "no MariaDB server"
	nemesis mysql leader,stop,isolate,client,failover
}

@test "MariaDB: the replica promoted while it lags (cut off from the primary for a second of grants)" {
	command -v mariadbd >/dev/null || skip_unless_strict "no MariaDB server"
	# The counter row the lost primary wrote had not reached the replica:
	# the fence's floor, the server's clock, still makes the next larger
	nemesis mysql lagover,lagover
}
