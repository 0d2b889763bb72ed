# tests/nemesis/redis.bash - Redis with Sentinel for tests/nemesis.sh (see
# "The cluster" there), as three hosts, each a server and a sentinel: m1
# the master, m2 and m3 its replicas (quorum 2, down-after 1 s). dlock asks
# the sentinels (redis-sentinel://) and waits for one replica
# (--wait-replicas 1; REDIS_WAIT_REPLICAS=2 for both); the servers keep an
# append-only file fsynced at every write, as the man page's REDLOCK asks
# of a server that may restart.
# shellcheck shell=bash disable=SC2034	# variables tests/nemesis.sh reads

MEMBERS=(m1 m2 m3)
FAULTS_DEFAULT=kill,leader,stop,isolate,split,client,sentinel,failover
REDIS_MASTER=mymaster

_r_port() { node_port "$1" redis 6379; }
_s_port() { node_port "$1" sentinel 26379; }

# rcli_on MEMBER ARGS...: redis-cli to MEMBER's server, from adm
rcli_on() {
	local m=$1; shift
	on adm timeout 3 redis-cli -h "$(node_ip "$m")" -p "$(_r_port "$m")" "$@" 2>/dev/null
}
# scli_on MEMBER ARGS...: to MEMBER's sentinel
scli_on() {
	local m=$1; shift
	on adm timeout 3 redis-cli -h "$(node_ip "$m")" -p "$(_s_port "$m")" "$@" 2>/dev/null
}

cluster_start() {
	local m sent=
	command -v redis-server >/dev/null || { echo "no redis-server"; return 1; }
	for m in "${MEMBERS[@]}"; do node_add "$m" || return 1; done
	for m in "${MEMBERS[@]}"; do
		mkdir -p "$T/$m"
		printf '%s\n' "port $(_r_port "$m")" "bind $(node_ip "$m")" \
			"protected-mode no" "dir $T/$m" "save \"\"" \
			"appendonly yes" "appendfsync always" >"$T/$m/redis.conf"
		[[ $m == m1 ]] || echo "replicaof $(node_ip m1) $(_r_port m1)" >>"$T/$m/redis.conf"
		printf '%s\n' "port $(_s_port "$m")" "bind $(node_ip "$m")" \
			"protected-mode no" "dir $T/$m" \
			"sentinel monitor $REDIS_MASTER $(node_ip m1) $(_r_port m1) 2" \
			"sentinel down-after-milliseconds $REDIS_MASTER 1000" \
			"sentinel failover-timeout $REDIS_MASTER 5000" \
			"sentinel parallel-syncs $REDIS_MASTER 1" >"$T/$m/sentinel.conf"
		sent+=${sent:+,}$(node_addr "$m" sentinel 26379)
	done
	for m in "${MEMBERS[@]}"; do member_start "$m"; done
	wait_until 60 cluster_ready || { echo "the sentinels do not agree"; return 1; }
	URL=redis-sentinel://$sent/$REDIS_MASTER
	LOCK_ARGS=(--wait-replicas "${REDIS_WAIT_REPLICAS:-1}")
}

# A PID file PROC.pid and, in PROC.start, when that process started (the
# kernel's clock ticks since boot): a PID the kernel gave to another
# process since (a busy host wraps PIDs within a minute: pid_max 32768)
# is not ours, so it is neither taken for the member alive nor signalled.
_start_of() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $20 }'; }
# _ours PROC: the PID in PROC.pid, if that process is still the one spawned
_ours() {
	local p
	p=$(cat "$1.pid" 2>/dev/null) && ! dead "$p" &&
		[[ $(_start_of "$p") == "$(cat "$1.start" 2>/dev/null)" ]] && echo "$p"
}
_spawn_as() {	# _spawn_as PROC MEMBER LOG CMD...
	local f=$1 p; shift
	p=$(spawn "$@")
	echo "$p" >"$f.pid"
	_start_of "$p" >"$f.start"
}

# member_start MEMBER: whichever of its server and sentinel is not running
member_start() {
	local m=$1
	_ours "$T/$m/redis" >/dev/null ||
		_spawn_as "$T/$m/redis" "$m" "$T/$m/redis.log" redis-server "$T/$m/redis.conf"
	_ours "$T/$m/sentinel" >/dev/null ||
		_spawn_as "$T/$m/sentinel" "$m" "$T/$m/sentinel.log" redis-server \
			"$T/$m/sentinel.conf" --sentinel
}

member_pids() { _ours "$T/$1/redis"; _ours "$T/$1/sentinel"; }

member_serving() {
	[[ $(rcli_on "$1" ping) == PONG ]] &&
		[[ $(scli_on "$1" ping) == PONG ]]
}

# redis_master: the member whose address every sentinel gives
redis_master() {
	local m addr='' a
	for m in "${MEMBERS[@]}"; do
		a=$(scli_on "$m" sentinel get-master-addr-by-name "$REDIS_MASTER" | paste -sd:)
		[[ -n $a ]] || return 1
		[[ -z $addr || $a == "$addr" ]] || return 1
		addr=$a
	done
	for m in "${MEMBERS[@]}"; do
		[[ $(node_addr "$m" redis 6379) == "$addr" ]] &&
			{ echo "$m"; return 0; }
	done
	return 1
}

# _replicas_seen SENTINEL: the replicas that sentinel knows of, one line
# each: "IP:PORT FLAGS MASTER-HOST LINK-STATUS"
_replicas_seen() {
	scli_on "$1" sentinel replicas "$REDIS_MASTER" | paste - - | awk -F'\t' '
		$1 == "name" { n = $2 } $1 == "flags" { f[n] = $2 }
		$1 == "master-host" { h[n] = $2 } $1 == "master-link-status" { s[n] = $2 }
		END { for (k in f) print k, f[k], h[k], s[k] }'
}

# cluster_ready: the sentinels agree on a master that says it is one, with
# a quorum of sentinels, and the other servers replicate from it, as each
# sentinel sees too. A sentinel learns of a replica from the master's INFO
# (every 10 s), and one it has not seen when the master fails stays with
# the old master for ever: Sentinel reconfigures only the replicas it
# knows (a fault within seconds of a replica's first sync left one
# replicating from the old master, and the cluster never served again).
cluster_ready() {
	local m r s seen
	m=$(redis_master) || return 1
	rcli_on "$m" role | head -n 1 | grep -qx master || return 1
	[[ $(scli_on "$m" sentinel ckquorum "$REDIS_MASTER") == OK* ]] || return 1
	for r in "${MEMBERS[@]}"; do
		[[ $r == "$m" ]] || {
			rcli_on "$r" info replication | tr -d '\r' | grep -qx master_link_status:up &&
				rcli_on "$r" info replication | tr -d '\r' |
				grep -qx "master_host:$(node_ip "$m")"
		} || return 1
	done
	for s in "${MEMBERS[@]}"; do
		seen=$(_replicas_seen "$s") || return 1
		for r in "${MEMBERS[@]}"; do
			[[ $r == "$m" ]] ||
				grep -qx "$(node_addr "$r" redis 6379) slave $(node_ip "$m") ok" <<<"$seen" ||
				return 1
		done
	done
}

cluster_leader() { redis_master; }
client_cut_from() { redis_master; }

fault_sentinel() {
	local m down p
	m=$(random_member) down=$(rand_s 0.2 "$DOWN_MAX")
	p=$(_ours "$T/$m/sentinel") && kill -KILL "$p"
	sleep "$down"
	member_start "$m"
	echo "$m $down"
}

master_moved_from() { local now; now=$(redis_master) && [[ $now != "$1" ]]; }

# SENTINEL FAILOVER: the replica made master at once; the old master is
# told to follow it some seconds later
fault_failover() {
	local m s now
	m=$(redis_master) s=$(random_member)
	scli_on "$s" sentinel failover "$REDIS_MASTER" >/dev/null
	wait_until 20 master_moved_from "$m"
	now=$(redis_master)
	echo "$m>${now:-?} 0"
}

# cluster_left KEY: keys of the lock on the servers, but its fencing
# counter, ticket counter and history (they outlive holders)
cluster_left() {
	local m
	for m in "${MEMBERS[@]}"; do
		rcli_on "$m" --scan | grep -vx -e "{dlock:$1}:fence" -e "{dlock:$1}:ticket" \
			-e "{dlock:$1}:history" | sed "s/^/$m key /"
	done
}

cluster_stop() {
	local m p
	for m in "${MEMBERS[@]}"; do
		for p in $(member_pids "$m"); do
			kill -CONT "$p" 2>/dev/null
			kill -KILL "$p" 2>/dev/null
		done
	done
	return 0
}
