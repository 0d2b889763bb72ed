# tests/nemesis/zookeeper.bash - a ZooKeeper ensemble of three (m1..m3) for
# tests/nemesis.sh (see "The cluster" there): Debian's zookeeper run as
# plain JVMs (QuorumPeerMain, a myid file each), as
# tests/zookeeper_helpers.bash runs one server; tickTime 500 ms (sessions
# of 1 to 30 s), data on disk.
# shellcheck shell=bash disable=SC2034	# variables tests/nemesis.sh reads

MEMBERS=(m1 m2 m3)
FAULTS_DEFAULT=kill,stop,isolate,split,leader,quorum,client
ZK_CP=/usr/share/java/zookeeper.jar	# its manifest names its dependencies
ZK_JAVA_OPTS=(-Xms32m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
	-Dzookeeper.admin.enableServer=false)

_zk_c() { node_port "$1" client 2181; }

# zk_4lw MEMBER WORD: a four-letter word's answer, asked from adm
zk_4lw() {
	on adm timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2" && echo "$3" >&3 && cat <&3' \
		_ "$(node_ip "$1")" "$(_zk_c "$1")" "$2" 2>/dev/null
}

cluster_start() {
	local m i=0 peers=() hosts=
	command -v java >/dev/null && [[ -r $ZK_CP ]] || { echo "no java or $ZK_CP"; return 1; }
	for m in "${MEMBERS[@]}"; do node_add "$m" || return 1; done
	for m in "${MEMBERS[@]}"; do
		i=$((i + 1))
		peers+=("server.$i=$(node_ip "$m"):$(node_port "$m" peer 2888):$(node_port "$m" election 3888)")
		hosts+=${hosts:+,}$(node_ip "$m"):$(_zk_c "$m")
	done
	i=0
	for m in "${MEMBERS[@]}"; do
		i=$((i + 1))
		mkdir -p "$T/$m/data"
		echo "$i" >"$T/$m/data/myid"
		{
			echo "tickTime=500"
			echo "initLimit=10"
			echo "syncLimit=5"
			echo "dataDir=$T/$m/data"
			echo "clientPort=$(_zk_c "$m")"
			echo "clientPortAddress=$(node_ip "$m")"
			echo "admin.enableServer=false"
			echo "maxClientCnxns=0"
			echo "minSessionTimeout=1000"
			echo "maxSessionTimeout=30000"
			echo "4lw.commands.whitelist=srvr,cons,dump,ruok"
			printf '%s\n' "${peers[@]}"
		} >"$T/$m/zoo.cfg"
		member_start "$m"
	done
	for m in "${MEMBERS[@]}"; do
		wait_until 90 member_serving "$m" ||
			{ echo "zookeeper $m did not start: $(tail -n 5 "$T/$m/log")"; return 1; }
	done
	URL=zk://$hosts
	LOCK_ARGS=()
}

member_start() {
	spawn "$1" "$T/$1/log" java "${ZK_JAVA_OPTS[@]}" -cp "$ZK_CP" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$T/$1/zoo.cfg" >"$T/$1/pid"
}

member_pids() { cat "$T/$1/pid"; }
member_serving() { zk_4lw "$1" srvr | grep -Eq '^Mode: (leader|follower)'; }

cluster_ready() {
	local m
	for m in "${MEMBERS[@]}"; do member_serving "$m" || return 1; done
}

cluster_leader() {
	local m
	for m in "${MEMBERS[@]}"; do
		zk_4lw "$m" srvr | grep -qx 'Mode: leader' && { echo "$m"; return 0; }
	done
	return 1
}

# cluster_left KEY: ephemeral nodes under the lock (the leader's dump),
# and any member's client connection with a session (not the 4lw's)
cluster_left() {
	local m leader
	leader=$(cluster_leader) || { echo "no leader"; return 0; }
	zk_4lw "$leader" dump | grep -F "/dlock:$1/" | sed 's/^[[:space:]]*/node /'
	for m in "${MEMBERS[@]}"; do
		zk_4lw "$m" cons | grep -F 'sid=' | sed "s/^[[:space:]]*/$m session /"
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
