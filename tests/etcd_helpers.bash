# etcd_helpers.bash - etcd servers for tests/etcd.bats: members of Debian's
# etcd-server in a temp dir, on free ports, started once per test file
# (well under a second each) and always stopped; etcdctl (etcd-client)
# to look and to interfere.

export ETCDCTL_API=3

# start_etcd DIR NAME...: a cluster of those members (one NAME: a single
# server), each in DIR/NAME with its pid, client endpoint (ep) and log;
# short heartbeats so that a member's death is noticed in a second.
start_etcd() {
	local dir=$1 n cluster="" name; shift
	for name; do
		mkdir -p "$dir/$name"
		free_port >"$dir/$name/cport"
		free_port >"$dir/$name/pport"
		cluster+="${cluster:+,}$name=http://127.0.0.1:$(<"$dir/$name/pport")"
	done
	for name; do
		local d=$dir/$name
		etcd --name "$name" --data-dir "$d/data" \
			--listen-client-urls "http://127.0.0.1:$(<"$d/cport")" \
			--advertise-client-urls "http://127.0.0.1:$(<"$d/cport")" \
			--listen-peer-urls "http://127.0.0.1:$(<"$d/pport")" \
			--initial-advertise-peer-urls "http://127.0.0.1:$(<"$d/pport")" \
			--initial-cluster "$cluster" --initial-cluster-token "t$$" \
			--heartbeat-interval 50 --election-timeout 500 \
			--log-level error >"$d/log" 2>&1 3>&- &
		echo $! >"$d/pid"
		echo "127.0.0.1:$(<"$d/cport")" >"$d/ep"
	done
	for name; do
		wait_until 20 etcd_up "$dir/$name" ||
			{ cat "$dir/$name/log" >&3; return 1; }
	done
}

etcd_up() { etcdctl --endpoints="$(<"$1/ep")" --command-timeout=1s endpoint health >/dev/null 2>&1; }

# stop_etcd DIR NAME...: TERM, then KILL after 5 s.
stop_etcd() {
	local dir=$1 name pid; shift
	for name; do
		[[ -e $dir/$name/pid ]] || continue
		pid=$(<"$dir/$name/pid")
		kill -CONT "$pid" 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
	done
	for name; do
		[[ -e $dir/$name/pid ]] || continue
		pid=$(<"$dir/$name/pid")
		wait_until 5 dead "$pid" || kill -KILL "$pid" 2>/dev/null || true
		wait_until 5 dead "$pid" || true
	done
}

# ectl ARGS...: etcdctl on the file's server
ectl() { etcdctl --endpoints="$EP" --command-timeout=3s "$@"; }

# The lock's contenders' keys, one a line: dlock:NAME/HEX
lock_keys() { ectl get --prefix "dlock:$1/" --keys-only | sed '/^$/d'; }
no_lock_key() { [[ -z $(lock_keys "$1") ]]; }
n_keys() { (($(lock_keys "$1" | wc -l) == $2)); }	# n_keys NAME N: N contenders

# dlock's lock leases, one ID a line: not the history's (granted for 8
# days), nor etcdctl lock's sessions (10 s; it does not revoke them).
lock_leases() {
	local id
	for id in $(ectl lease list | sed -n 's/^\([0-9a-f]*\)$/\1/p'); do
		ectl lease timetolive "$id" | grep -Eq 'granted with TTL\((691200|10)s\)|expired' ||
			echo "$id"
	done
}
# (what is left is printed with its TTL, for the failure's message)
no_lease_left() {
	local left id
	left=$(lock_leases)
	[[ -z $left ]] && return 0
	for id in $left; do
		echo "lease left: $(ectl lease timetolive --keys "$id")" >&2
	done
	return 1
}
