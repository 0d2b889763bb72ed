# tests/nemesis/postgres.bash - a PostgreSQL primary and a streaming hot
# standby (m1, m2; pg_basebackup -R) for tests/nemesis.sh (see "The
# cluster" there), run as the postgres user in the run's directory; dlock's
# URL names both hosts with target_session_attrs=read-write, so that it
# finds whichever is primary. A failover stops the primary, promotes the
# standby (pg_ctl promote) and makes the old primary the new standby.
# shellcheck shell=bash disable=SC2034	# variables tests/nemesis.sh reads

MEMBERS=(m1 m2)
FAULTS_DEFAULT=kill,leader,stop,isolate,client,failover,lagover
NETNS_FAULTS=lagover
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)

_pg_port() { node_port "$1" pg 5432; }
_pg_other() { if [[ $1 == m1 ]]; then echo m2; else echo m1; fi; }

# pg_on NODE MEMBER SQL: one statement on MEMBER over TCP from NODE
pg_on() {
	on "$1" env PGCONNECT_TIMEOUT=2 psql -h "$(node_ip "$2")" -p "$(_pg_port "$2")" \
		-U postgres -X -Atq -c "$3" postgres 2>/dev/null
}
_pg_ctl() {	# _pg_ctl MEMBER ARGS...: pg_ctl as postgres, in MEMBER's namespace
	local m=$1; shift
	on "$m" runuser -u postgres -- "$PGBIN/pg_ctl" -D "$T/$m/data" "$@"
}

cluster_start() {
	local m net
	[[ -x $PGBIN/initdb ]] || { echo "no PostgreSQL server"; return 1; }
	for m in "${MEMBERS[@]}"; do
		node_add "$m" || return 1
		mkdir -p "$T/$m"
		chown postgres "$T/$m"
	done
	runuser -u postgres -- "$PGBIN/initdb" --no-sync -U postgres -D "$T/m1/data" \
		--auth=trust >"$T/m1/initdb.log" 2>&1 || { cat "$T/m1/initdb.log"; return 1; }
	net=$(node_ip m1)
	net=${net%.*}.0/24
	printf '%s\n' "host all all $net trust" "host replication all $net trust" \
		>>"$T/m1/data/pg_hba.conf"
	# no fsync (no machine crashes here, only processes)
	printf '%s\n' "fsync = off" "max_connections = 200" "wal_keep_size = 64MB" \
		>>"$T/m1/data/postgresql.conf"
	echo m1 >"$T/pg.primary"
	member_start m1 || return 1
	pg_standby_from m2 m1 || return 1
	member_start m2 || return 1
	wait_until 60 cluster_ready || { echo "the standby does not stream"; return 1; }
	URL="postgres://postgres@$(node_addr m1 pg 5432),$(node_addr m2 pg 5432)/postgres?target_session_attrs=read-write"
	LOCK_ARGS=()
}

# pg_standby_from STANDBY PRIMARY: STANDBY's data, a base backup of
# PRIMARY's that streams from it
pg_standby_from() {
	rm -rf "$T/$1/data"
	on "$1" runuser -u postgres -- "$PGBIN/pg_basebackup" -h "$(node_ip "$2")" \
		-p "$(_pg_port "$2")" -U postgres -D "$T/$1/data" -R -X stream -c fast \
		>>"$T/$1/basebackup.log" 2>&1 || { tail -n 5 "$T/$1/basebackup.log"; return 1; }
}

# member_start MEMBER: its server (again), in the role its data gives it;
# the host's own address and port on the command line, not in the data
# (a base backup copies the data to the other host)
member_start() {
	local m=$1 pid
	# Killed, its lock files stay (postmaster.pid, the socket's); PIDs
	# are reused fast on a busy machine, and one that now names another
	# live process (another postmaster, even) stops the start. The member
	# is known dead here.
	pid=$(cat "$T/$m/pid" 2>/dev/null) && dead "$pid" &&
		rm -f "$T/$m/data/postmaster.pid" "$T/$m"/.s.PGSQL.*.lock
	_pg_ctl "$m" -w -t 60 -l "$T/$m/log" \
		-o "-c listen_addresses=$(node_ip "$m") -p $(_pg_port "$m") -k $T/$m" \
		start >>"$T/$m/pg_ctl.log" 2>&1 3>&- </dev/null || { tail -n 5 "$T/$m/log"; return 1; }
	head -n 1 "$T/$m/data/postmaster.pid" >"$T/$m/pid"
}

# the postmaster, then its children
member_pids() {
	local pid
	pid=$(cat "$T/$1/pid" 2>/dev/null) || return 0
	echo "$pid"
	pgrep -P "$pid"
}

member_serving() { [[ $(pg_on adm "$1" 'SELECT 1') == 1 ]]; }

# cluster_ready: the primary writes, the standby streams from it
cluster_ready() {
	local p s
	p=$(<"$T/pg.primary") s=$(_pg_other "$p")
	[[ $(pg_on adm "$p" 'SELECT pg_is_in_recovery()') == f ]] &&
		[[ $(pg_on adm "$s" "SELECT status FROM pg_stat_wal_receiver") == streaming ]]
}

cluster_leader() { cat "$T/pg.primary"; }
client_cut_from() { cat "$T/pg.primary"; }

fault_failover() {
	local p s down
	p=$(<"$T/pg.primary") s=$(_pg_other "$(<"$T/pg.primary")")
	down=$(rand_s 0.2 "$DOWN_MAX")
	# the primary crashes, the standby is promoted a while later
	member_signal "$p" KILL
	wait_until 10 member_dead "$p"
	pg_failover_to "$s" "$p" "$down"
}

# lagover: a failover to a standby that lags: cut off from the primary
# (not from the clients), it misses the grants of a second of sections
# (let out of the lingering meanwhile); the primary crashes then.
fault_lagover() {
	local p s down
	p=$(<"$T/pg.primary") s=$(_pg_other "$(<"$T/pg.primary")")
	down=$(rand_s 0.2 "$DOWN_MAX")
	net_cut "$s" "$p" || echo "fault: cannot cut $s from $p" >>"$T/failed"
	linger_off
	sleep 1
	linger_on
	wait_until 10 holder_inside
	member_signal "$p" KILL
	wait_until 10 member_dead "$p"
	# cut off until promoted: the dead primary's kernel would go on
	# sending what it had queued (its sockets orphaned, not gone), as a
	# host that went down would not
	pg_failover_to "$s" "$p" "$down" "$s"
}

# pg_failover_to STANDBY OLD DOWN [CUT]: DOWN seconds after the primary's
# crash, STANDBY promoted (then CUT's cuts healed), OLD made its standby
pg_failover_to() {
	local s=$1 p=$2 down=$3
	sleep "$down"
	_pg_ctl "$s" -w -t 60 promote >>"$T/$s/pg_ctl.log" 2>&1 ||
		echo "fault: $s not promoted: $(tail -n 3 "$T/$s/log")" >>"$T/failed"
	echo "$s" >"$T/pg.primary"
	[[ -z ${4:-} ]] || net_heal "$4"	# lagover's cut
	# the old primary comes back as the new standby
	{ pg_standby_from "$p" "$s" && member_start "$p"; } >>"$T/restarts.log" 2>&1 ||
		echo "fault: $p not made a standby of $s" >>"$T/failed"
	echo "$p>$s $down"
}

# cluster_left KEY: advisory locks and dlock's sessions, on both
cluster_left() {
	local m
	for m in "${MEMBERS[@]}"; do
		pg_on adm "$m" "SELECT 'advisory lock ' || pid FROM pg_locks WHERE locktype = 'advisory'
			UNION ALL SELECT 'session ' || pid FROM pg_stat_activity WHERE application_name = 'dlock'" |
			sed "s/^/$m /"
	done
}

cluster_stop() {
	local m p
	for m in "${MEMBERS[@]}"; do
		for p in $(member_pids "$m"); do kill -CONT "$p" 2>/dev/null; done
		_pg_ctl "$m" -m immediate stop >/dev/null 2>&1
		for p in $(member_pids "$m"); do kill -KILL "$p" 2>/dev/null; done
	done
	return 0
}
