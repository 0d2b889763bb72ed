# tests/nemesis/net.bash - the hosts of a test cluster and the network
# between them; sourced by tests/nemesis.sh (and tests/clusters.bats).
#
# A node is a host: a cluster member (m1, m2, ...), a client that runs
# workers (c1, c2), or adm, the client that looks on and is never cut off.
#
# NET=netns: each node has a network namespace of its own, linked by a veth
# to one bridge in a hub namespace (10.99.0.0/24), so that the root
# namespace is left alone and ports are the services' usual ones. A node is
# cut off from everyone by taking its link down (net_isolate), or from some
# nodes by a route to them through a neighbour that does not exist
# (net_cut): packets are dropped in silence, as in a real partition, not
# refused. NET=loop: every node is 127.0.0.1 with free ports; nothing can
# be cut off (net_isolate and net_cut fail, and the caller falls back to
# SIGSTOP). NET=auto (the default): netns where the machine allows it.
#
# Needs T (the run's directory) and wait_until, free_port.
# shellcheck shell=bash disable=SC2034	# variables tests/nemesis.sh reads

NET_PREFIX=10.99.0
NET_DEAD=$NET_PREFIX.254	# no node has it: a route through it is a cut
NET_DEAD_MAC=02:00:00:00:00:fe

# net_probe: why network namespaces cannot be used here (exit 1), or 0
net_probe() {
	local ns=dnp$$
	[[ $(id -u) == 0 ]] || { echo "not root"; return 1; }
	command -v ip >/dev/null || { echo "no ip(8)"; return 1; }
	command -v nsenter >/dev/null || { echo "no nsenter(1)"; return 1; }
	ip netns add "$ns" 2>&1 || return 1
	ip -n "$ns" link add name vp0 type veth peer name vp1 >/dev/null 2>&1 &&
		ip -n "$ns" link add name bp0 type bridge >/dev/null 2>&1
	local rc=$?
	ip netns del "$ns"
	((rc == 0)) || { echo "no veth or bridge in a namespace"; return 1; }
}

# net_init: NET (auto, netns, loop) decided; in netns, the hub and its bridge
net_init() {
	local why
	mkdir -p "$T/net"
	NET=${NET:-auto}
	if [[ $NET == auto ]]; then
		if why=$(net_probe); then NET=netns; else NET=loop NET_WHY=$why; fi
	fi
	echo "$NET" >"$T/net/mode"
	[[ $NET == netns ]] || return 0
	# Names unique to this run: several runs may share the machine.
	NET_ID=dn$(printf %04x $((RANDOM)))$$
	NET_HUB=${NET_ID}hub
	ip netns add "$NET_HUB" || return 1
	echo "$NET_HUB" >>"$T/net/namespaces"
	ip -n "$NET_HUB" link add name br0 type bridge &&
		ip -n "$NET_HUB" link set br0 up
}

# node_add NAME: a node; in netns, its namespace and link (address .N)
node_add() {
	local name=$1 n ns
	n=$(($(cat "$T/net/nodes" 2>/dev/null | wc -l) + 1))
	echo "$name" >>"$T/net/nodes"
	if [[ $NET != netns ]]; then
		echo 127.0.0.1 >"$T/net/$name.ip"
		return 0
	fi
	ns=$NET_ID-$name
	ip netns add "$ns" || return 1
	echo "$ns" >>"$T/net/namespaces"
	echo "$ns" >"$T/net/$name.ns"
	echo "$NET_PREFIX.$n" >"$T/net/$name.ip"
	ip -n "$NET_HUB" link add name "h-$name" type veth peer name eth0 netns "$ns" &&
		ip -n "$NET_HUB" link set "h-$name" master br0 up &&
		ip -n "$ns" link set lo up &&
		ip -n "$ns" addr add "$NET_PREFIX.$n/24" dev eth0 &&
		ip -n "$ns" link set eth0 up &&
		ip -n "$ns" neigh add "$NET_DEAD" lladdr "$NET_DEAD_MAC" nud permanent dev eth0
}

node_ip() { cat "$T/net/$1.ip"; }

# node_port NAME SERVICE USUAL: the port of NAME's SERVICE: USUAL in its own
# namespace, else a free one, the same for the whole run
node_port() {
	local f=$T/net/$1.$2.port
	if [[ ! -e $f ]]; then
		if [[ $NET == netns ]]; then echo "$3" >"$f"; else free_port >"$f"; fi
	fi
	cat "$f"
}

# node_addr NAME SERVICE USUAL: host:port
node_addr() { echo "$(node_ip "$1"):$(node_port "$1" "$2" "$3")"; }

# on NAME CMD...: CMD in NAME's network namespace (exec'd: same PID)
on() {
	local name=$1; shift
	if [[ $NET == netns ]]; then
		nsenter --net="/run/netns/$(<"$T/net/$name.ns")" -- "$@"
	else
		"$@"
	fi
}

# spawn NAME LOG CMD...: CMD in the background in NAME's namespace, its
# output appended to LOG; prints its PID (the command's own: exec'd), not
# a job of this shell (no "Killed" line when a fault kills it). 3>&-: bats
# would wait for it otherwise.
spawn() {
	local name=$1 log=$2; shift 2
	if [[ $NET == netns ]]; then
		set -- nsenter --net="/run/netns/$(<"$T/net/$name.ns")" -- "$@"
	fi
	(exec "$@" >>"$log" 2>&1 </dev/null 3>&-) &
	echo $!
	disown $!
}

# net_isolate NAME / net_rejoin NAME: NAME's link down / up again
net_isolate() {
	[[ $NET == netns ]] || return 1
	ip -n "$NET_HUB" link set "h-$1" down
}
net_rejoin() {
	[[ $NET == netns ]] || return 1
	ip -n "$NET_HUB" link set "h-$1" up
}

# net_cut NAME PEER...: NAME and each PEER no longer reach each other (a
# route through the dead neighbour, both ways); a PEER @ADDRESS (an
# address that moves between nodes) is cut on NAME's side only. net_heal
# NAME: every cut of NAME's undone
net_cut() {
	local name=$1 peer; shift
	[[ $NET == netns ]] || return 1
	for peer; do
		if [[ $peer == @* ]]; then
			on "$name" ip route add "${peer#@}/32" via "$NET_DEAD" dev eth0 || return 1
		else
			on "$name" ip route add "$(node_ip "$peer")/32" via "$NET_DEAD" dev eth0 &&
				on "$peer" ip route add "$(node_ip "$name")/32" via "$NET_DEAD" dev eth0 ||
				return 1
		fi
		echo "$name $peer" >>"$T/net/cuts"
	done
}
net_heal() {
	local name=$1 a b
	[[ $NET == netns && -e $T/net/cuts ]] || return 0
	while read -r a b; do
		[[ $a == "$name" ]] || { echo "$a $b"; continue; }
		if [[ $b == @* ]]; then
			on "$a" ip route del "${b#@}/32" 2>/dev/null
		else
			on "$a" ip route del "$(node_ip "$b")/32" 2>/dev/null
			on "$b" ip route del "$(node_ip "$a")/32" 2>/dev/null
		fi
	done <"$T/net/cuts" >"$T/net/cuts.new"
	mv "$T/net/cuts.new" "$T/net/cuts"
}

# net_heal_all: every link up, every cut undone
net_heal_all() {
	local name a cuts
	[[ $NET == netns ]] || return 0
	while read -r name; do
		ip -n "$NET_HUB" link set "h-$name" up 2>/dev/null
	done <"$T/net/nodes"
	[[ -e $T/net/cuts ]] || return 0
	mapfile -t cuts <"$T/net/cuts"
	for a in "${cuts[@]}"; do net_heal "${a%% *}"; done
}

# net_cleanup: the namespaces go (after their processes: stop those first)
net_cleanup() {
	local ns
	[[ -e ${T:-/nonexistent}/net/namespaces ]] || return 0
	while read -r ns; do
		ip netns del "$ns" 2>/dev/null
	done <"$T/net/namespaces"
	rm -f "$T/net/namespaces"
}
