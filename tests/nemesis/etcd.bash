# tests/nemesis/etcd.bash - three etcd members (m1..m3) for tests/nemesis.sh
# (see "The cluster" there).
# etcd's own timing (heartbeat 100 ms, election 1 s: the defaults), data on
# disk, so that a member killed and started again comes back with its log.
# ETCD_FLAGS (default --pre-vote, 3.5's default) go to every member: without
# it (ETCD_FLAGS=), etcd 3.4 lets a member that comes back after being cut
# off depose the leader, an election that a 3 s lease does not outlive.
# shellcheck shell=bash disable=SC2034	# variables tests/nemesis.sh reads

export ETCDCTL_API=3
MEMBERS=(m1 m2 m3)
FAULTS_DEFAULT=kill,stop,isolate,split,leader,quorum,client

# etcd before 3.4.28 and 3.5.11 (Debian 12 ships 3.4.23): a leader
# SIGSTOPped past a lease's TTL revokes it as it wakes, though the holder
# kept it alive through another member (etcd issue 15247, fixed by pull
# request 16822): two jobs at once that no client can prevent, as the man
# page's CLUSTERS says. There, a member is stopped for less than the TTL,
# so that what is checked is dlock's part; STOP_MAX=... overrides.
_etcd_revokes_on_wake() {
	local v
	v=$(etcd --version 2>/dev/null | sed -n 's/^etcd Version: //p')
	[[ $v =~ ^3\.([0-9]+)\.([0-9]+) ]] || return 1
	((BASH_REMATCH[1] < 4 || (BASH_REMATCH[1] == 4 && BASH_REMATCH[2] < 28) ||
	  (BASH_REMATCH[1] == 5 && BASH_REMATCH[2] < 11)))
}
if [[ -z ${STOP_MAX:-} ]] && _etcd_revokes_on_wake; then
	STOP_MAX=$(awk -v t="$TTL" 'BEGIN { printf "%.1f", t * 0.7 }')
fi

_etcd_c() { node_addr "$1" client 2379; }
_etcd_p() { node_addr "$1" peer 2380; }

# ectl_on NODE ARGS...: etcdctl from NODE, every member its endpoint
ectl_on() {
	local node=$1 m eps=; shift
	for m in "${MEMBERS[@]}"; do eps+=${eps:+,}$(_etcd_c "$m"); done
	on "$node" etcdctl --endpoints="$eps" --command-timeout=2s --dial-timeout=1s "$@"
}

cluster_start() {
	local m cluster='' eps=''
	for m in "${MEMBERS[@]}"; do
		node_add "$m" || return 1
		cluster+=${cluster:+,}$m=http://$(_etcd_p "$m")
		eps+=${eps:+,}$(_etcd_c "$m")
	done
	echo "$cluster" >"$T/etcd.cluster"
	for m in "${MEMBERS[@]}"; do member_start "$m"; done
	for m in "${MEMBERS[@]}"; do
		wait_until 30 member_serving "$m" ||
			{ echo "etcd $m did not start: $(tail -n 5 "$T/$m/log")"; return 1; }
	done
	URL=etcd://$eps
	LOCK_ARGS=()
}

# member_start NAME: (again) with the data it had
member_start() {
	local m=$1 d=$T/$1
	mkdir -p "$d"
	# shellcheck disable=SC2086
	spawn "$m" "$d/log" etcd --name "$m" --data-dir "$d/data" \
		--listen-client-urls "http://$(_etcd_c "$m")" \
		--advertise-client-urls "http://$(_etcd_c "$m")" \
		--listen-peer-urls "http://$(_etcd_p "$m")" \
		--initial-advertise-peer-urls "http://$(_etcd_p "$m")" \
		--initial-cluster "$(<"$T/etcd.cluster")" --initial-cluster-state new \
		--initial-cluster-token "nemesis" \
		--heartbeat-interval 100 --election-timeout 1000 --log-level error \
		${ETCD_FLAGS---pre-vote} >"$d/pid"
}

member_pids() { cat "$T/$1/pid"; }

# member_serving NAME: NAME answers, as a member of a cluster with a leader
member_serving() {
	on adm etcdctl --endpoints="$(_etcd_c "$1")" --command-timeout=1s \
		--dial-timeout=1s endpoint health >/dev/null 2>&1
}

# cluster_ready: every member serving
cluster_ready() {
	local m
	for m in "${MEMBERS[@]}"; do member_serving "$m" || return 1; done
}

# cluster_leader: the member that leads, by its own word
cluster_leader() {
	local m
	for m in "${MEMBERS[@]}"; do
		on adm etcdctl --endpoints="$(_etcd_c "$m")" --command-timeout=1s \
			--dial-timeout=1s endpoint status -w fields 2>/dev/null |
			awk -F' : ' '/"MemberID"/ { id = $2 } /"Leader"/ { l = $2 }
				END { exit !(id != "" && id == l) }' && { echo "$m"; return 0; }
	done
	return 1
}

# cluster_left KEY: what is left of lock KEY (nothing: prints nothing):
# contenders' keys, and leases that are not the history's (8 days)
cluster_left() {
	local id
	ectl_on adm get --prefix "dlock:$1/" --keys-only | sed '/^$/d; s/^/key /'
	for id in $(ectl_on adm lease list | sed -n 's/^\([0-9a-f]\{1,\}\)$/\1/p'); do
		ectl_on adm lease timetolive "$id" |
			grep -Eq 'granted with TTL\(691200s\)|expired' || echo "lease $id"
	done
}

# client_cut_from: the members a cut-off client loses (a majority)
client_cut_from() { two_members; }

cluster_stop() {
	local m pid
	for m in "${MEMBERS[@]}"; do
		pid=$(cat "$T/$m/pid" 2>/dev/null) || continue
		kill -CONT "$pid" 2>/dev/null
		kill -KILL "$pid" 2>/dev/null
	done
	return 0
}
