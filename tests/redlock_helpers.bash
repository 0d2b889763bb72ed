# redlock_helpers.bash - for redlock.bats, on top of helpers.bash: groups of
# servers, faults (kill, restart, SIGSTOP), a sentinel, servers behind a
# delaying relay in network namespaces of their own.

# dlk ARGS...: dlock in the foreground, but never for ever (124 on a hang)
dlk() { timeout -k 2 "${DLK_TIMEOUT:-20}" "$DLOCK" "$@"; }

us_now() { local t=${EPOCHREALTIME//[.,]/}; echo $((10#$t)); }	# microseconds

# start_servers N: servers r1..rN on unix sockets; SRV holds "-S URL" for each
start_servers() {
	local i
	SRV=()
	for ((i = 1; i <= $1; i++)); do
		start_redis "r$i"
		SRV+=(-S "$(sock_url "r$i")")
	done
}

kill_server() {	# kill_server NAME: SIGKILL (disowned: no "Killed" line)
	local pid; pid=$(server_pid "$1")
	disown "$pid" 2>/dev/null || true
	end_pids KILL "$pid"
}
restart_server() { start_redis "$1"; }	# same socket, empty (no persistence)
stop_server() { kill -STOP "$(server_pid "$1")"; }
cont_server() { kill -CONT "$(server_pid "$1")"; }

# holding TOKEN NAME...: how many of the servers hold dlock:K with TOKEN
holding() {
	local token=$1 n=0 s; shift
	for s; do
		[[ $(rcli "$s" get dlock:K) == "$token" ]] && n=$((n + 1))
	done
	echo "$n"
}

# no_lock_keys NAME...: neither dlock:K nor its holder hash on any of them
no_lock_keys() {
	local s
	for s; do
		key_gone "$s" dlock:K || fail "$s still has dlock:K: $(rcli "$s" get dlock:K)"
		key_gone "$s" '{dlock:K}:owner' || fail "$s still has {dlock:K}:owner"
	done
}
lock_keys_gone() {	# the same, as a condition for wait_until
	local s
	for s; do
		key_gone "$s" dlock:K && key_gone "$s" '{dlock:K}:owner' || return 1
	done
}

# ---- replication and sentinel -------------------------------------------

repl_field() { rcli "$1" info replication | tr -d '\r' | sed -n "s/^$2://p"; }
link_up() { [[ $(repl_field "$1" master_link_status) == up ]]; }
n_replicas() { [[ $(repl_field "$1" connected_slaves) == "$2" ]]; }	# NAME N
replica_online() { rcli "$1" info replication | grep -q '^slave0:.*state=online'; }

# start_sentinel NAME MASTER-NAME MASTER-PORT: a sentinel on a free port in
# $T/NAME/port, monitoring 127.0.0.1:MASTER-PORT (quorum 1); its PID in
# $T/NAME/pid, so stop_all stops it.
start_sentinel() {
	local name=$1 master=$2 mport=$3 d=$T/$1 try port
	mkdir -p "$d"
	for try in 1 2 3; do
		port=$(free_port)
		printf '%s\n' "port $port" "bind 127.0.0.1" "dir $d" \
			"sentinel monitor $master 127.0.0.1 $mport 1" >"$d/sentinel.conf"
		redis-server "$d/sentinel.conf" --sentinel >"$d/log" 2>&1 </dev/null 3>&- &
		echo $! >"$d/pid"
		echo "$port" >"$d/port"
		if wait_until 5 sentinel_knows "$name" "$master"; then
			return 0
		fi
		end_pids KILL "$(<"$d/pid")"
	done
	fail "sentinel $name did not start: $(cat "$d/log")"
}
sentinel_knows() {	# sentinel_knows NAME MASTER: it answers with an address
	redis-cli -p "$(<"$T/$1/port")" sentinel get-master-addr-by-name "$2" 2>/dev/null |
		head -n 1 | grep -qx 127.0.0.1
}

# ---- network namespaces -------------------------------------------------

# netns_servers N DELAY_MS: server nI in namespace dkr<pid>n<I> (its own
# loopback, a veth pair to this one: 10.198.I.1 here, 10.198.I.2 there),
# behind relay.py adding DELAY_MS to every round trip; unix socket
# $T/nI/sock for checks. NSRV holds "-S redis://10.198.I.2:7000" for each.
# Returns 1 (reason in $T/netns.err) when namespaces or veths are refused.
NET=10.198
netns_servers() {
	local n=$1 delay=$2 i ns hv d relay=$BATS_TEST_DIRNAME/bench/relay.py
	NSRV=()
	{
		[[ $(id -u) == 0 ]] || { echo "not root"; return 1; }
		command -v ip >/dev/null || { echo "no ip(8)"; return 1; }
		! ip -4 addr show | grep -q "inet $NET\." || { echo "$NET.x in use here"; return 1; }
		! ip -4 route show | grep -q "^$NET\." || { echo "$NET.x routed here"; return 1; }
		[[ -r $relay ]] || { echo "no $relay"; return 1; }
	} >"$T/netns.err" 2>&1 || return 1
	for ((i = 1; i <= n; i++)); do
		ns=dkr$$n$i hv=dkr$$h$i d=$T/n$i
		mkdir -p "$d"
		{
			ip netns add "$ns" && echo "ns $ns" >>"$T/netns" &&
			ip link add "$hv" type veth peer name vn$i netns "$ns" &&
			echo "link $hv" >>"$T/netns" &&
			ip addr add "$NET.$i.1/30" dev "$hv" && ip link set "$hv" up &&
			ip -n "$ns" link set lo up &&
			ip -n "$ns" addr add "$NET.$i.2/30" dev vn$i &&
			ip -n "$ns" link set vn$i up &&
			ip route get "$NET.$i.2" | grep -q " dev $hv "
		} >>"$T/netns.err" 2>&1 || return 1
		# ip netns exec execs: $! is the server's PID
		ip netns exec "$ns" redis-server --port 6379 --bind 127.0.0.1 \
			--unixsocket "$d/sock" --unixsocketperm 700 --dir "$d" \
			--save '' --appendonly no >"$d/log" 2>&1 </dev/null 3>&- &
		echo $! >"$d/pid"
		wait_until 5 up "n$i" || fail "redis n$i (in $ns): no PONG: $(cat "$d/log")"
		ip netns exec "$ns" "$PYTHON" "$relay" "$NET.$i.2:7000" 127.0.0.1:6379 \
			"$delay" >"$d/relay.out" 2>"$d/relay.err" </dev/null 3>&- &
		track $!
		wait_until 5 grep -qx ready "$d/relay.out" ||
			fail "relay n$i did not start: $(cat "$d/relay.err")"
		NSRV+=(-S "redis://$NET.$i.2:7000")
	done
}

netns_cleanup() {	# after stop_all: links and namespaces made here
	local what name
	[[ -e ${T:-/nonexistent}/netns ]] || return 0
	while read -r what name; do
		case $what in
		link) ip link del "$name" 2>/dev/null || true ;;
		ns) ip netns del "$name" 2>/dev/null || true ;;
		esac
	done <"$T/netns"
	rm -f "$T/netns"
}
