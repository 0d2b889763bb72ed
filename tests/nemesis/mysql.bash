# tests/nemesis/mysql.bash - a MariaDB primary and a replica (m1, m2; GTID
# replication of the binary log) for tests/nemesis.sh (see "The cluster"
# there), run as the mysql user in the run's directory. GET_LOCK is not
# replicated, and dlock's URL names one server: here an address of the
# primary's own (10.99.0.100) that a failover moves to the promoted
# replica, as keepalived or a cloud's floating IP would. A failover kills
# the primary, promotes the replica (read_only off), moves the address,
# and makes the old primary a replica again (its data loaded anew from a
# dump of the new primary's). Without network namespaces there is no
# address to move: no failover.
# shellcheck shell=bash disable=SC2034	# variables tests/nemesis.sh reads

MEMBERS=(m1 m2)
FAULTS_DEFAULT=kill,leader,stop,isolate,client,failover,lagover
NETNS_FAULTS="failover lagover"
MY_VIP=${NET_PREFIX:-10.99.0}.100

_my_port() { node_port "$1" mysql 3306; }
_my_other() { if [[ $1 == m1 ]]; then echo m2; else echo m1; fi; }
# my_root MEMBER SQL: as root, on the unix socket (no network needed)
my_root() { mariadb -S "$T/$1/sock" -uroot -N -B -e "$2" 2>/dev/null; }

cluster_start() {
	local m i=0
	command -v mariadbd >/dev/null || { echo "no mariadbd"; return 1; }
	for m in "${MEMBERS[@]}"; do
		i=$((i + 1))
		node_add "$m" || return 1
		mkdir -p "$T/$m"
		# the accounts on every server, outside the binary log (each
		# server has them of its own; replication carries dlock's rows)
		cat >"$T/$m/init.sql" <<'EOF'
SET sql_log_bin = 0;
CREATE DATABASE IF NOT EXISTS dlock;
CREATE USER IF NOT EXISTS 'dl'@'%' IDENTIFIED BY 'secret';
GRANT ALL ON dlock.* TO 'dl'@'%';
CREATE USER IF NOT EXISTS 'repl'@'%' IDENTIFIED BY 'repl';
GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%';
EOF
		cat >"$T/$m/my.cnf" <<EOF
[mariadbd]
datadir=$T/$m/data
socket=$T/$m/sock
pid-file=$T/$m/mariadbd.pid
port=$(_my_port "$m")
bind-address=$([[ $NET == netns ]] && echo 0.0.0.0 || echo 127.0.0.1)
server-id=$i
log-bin=$T/$m/binlog
binlog-format=ROW
skip-name-resolve
innodb_buffer_pool_size=8M
innodb_log_file_size=4M
init-file=$T/$m/init.sql
log-error=$T/$m/err.log
slave_exec_mode=IDEMPOTENT
EOF
		chown -R mysql:mysql "$T/$m"
	done
	# one install, copied: the template a rebuilt replica starts from
	mariadb-install-db --defaults-file="$T/m1/my.cnf" --user=mysql \
		--auth-root-authentication-method=socket --skip-test-db \
		>"$T/install.log" 2>&1 || { tail -n 5 "$T/install.log"; return 1; }
	cp -a "$T/m1/data" "$T/template"
	cp -a "$T/template" "$T/m2/data"
	echo m1 >"$T/my.primary"
	for m in "${MEMBERS[@]}"; do member_start "$m"; done
	for m in "${MEMBERS[@]}"; do
		wait_until 60 my_root "$m" 'SELECT 1' ||
			{ echo "mariadbd $m did not start: $(tail -n 5 "$T/$m/err.log")"; return 1; }
	done
	my_replica_of m2 m1 || return 1
	if [[ $NET == netns ]]; then
		on m1 ip addr add "$MY_VIP/24" dev eth0 || return 1
		URL="mysql://dl:secret@$MY_VIP:$(_my_port m1)/dlock"
	else
		URL="mysql://dl:secret@127.0.0.1:$(_my_port m1)/dlock"
	fi
	wait_until 30 cluster_ready || { echo "the replica does not replicate"; return 1; }
	LOCK_ARGS=()
}

# my_replica_of REPLICA PRIMARY: REPLICA read-only, replicating PRIMARY
my_replica_of() {
	my_root "$1" "SET GLOBAL read_only = 1; STOP SLAVE; CHANGE MASTER TO
		MASTER_HOST = '$(node_ip "$2")', MASTER_PORT = $(_my_port "$2"),
		MASTER_USER = 'repl', MASTER_PASSWORD = 'repl',
		MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1; START SLAVE" ||
		{ echo "$1 does not replicate $2"; return 1; }
}

member_start() {
	local m=$1 pid
	pid=$(cat "$T/$m/pid" 2>/dev/null) && dead "$pid" && rm -f "$T/$m/mariadbd.pid"
	spawn "$m" "$T/$m/out.log" mariadbd --defaults-file="$T/$m/my.cnf" --user=mysql \
		>"$T/$m/pid"
	# a replica stays one (read_only is not kept across a restart)
	[[ $(<"$T/my.primary") == "$m" ]] ||
		{ wait_until 60 my_root "$m" 'SELECT 1' && my_root "$m" 'SET GLOBAL read_only = 1'; }
}

member_pids() { cat "$T/$1/pid" 2>/dev/null; }

member_serving() {
	[[ $(on adm mariadb -h "$(node_ip "$1")" -P "$(_my_port "$1")" -udl -psecret \
		--connect-timeout=2 -N -B -e 'SELECT 1' dlock 2>/dev/null) == 1 ]]
}

# cluster_ready: the primary writes (at the URL's address), the replica
# replicates it
cluster_ready() {
	local p s st
	p=$(<"$T/my.primary") s=$(_my_other "$p")
	member_serving "$p" && member_serving "$s" || return 1
	[[ $(my_root "$p" 'SELECT @@read_only') == 0 ]] || return 1
	st=$(mariadb -S "$T/$s/sock" -uroot -e 'SHOW SLAVE STATUS\G' 2>/dev/null)
	grep -q 'Slave_IO_Running: Yes' <<<"$st" && grep -q 'Slave_SQL_Running: Yes' <<<"$st" &&
		grep -q "Master_Host: $(node_ip "$p")\$" <<<"$st"
}

cluster_leader() { cat "$T/my.primary"; }
member_at() { [[ $1 == "$MY_VIP:$(_my_port m1)" ]] && cat "$T/my.primary"; }
# the primary, and the address that names it
client_cut_from() { echo "$(<"$T/my.primary") @$MY_VIP"; }

fault_failover() {
	local p s down
	p=$(<"$T/my.primary") s=$(_my_other "$(<"$T/my.primary")")
	down=$(rand_s 0.2 "$DOWN_MAX")
	member_signal "$p" KILL
	wait_until 10 member_dead "$p"
	my_failover_to "$s" "$p" "$down"
}

# lagover: a failover to a replica that lags: cut off from the primary
# (not from the clients), it misses the grants of a second of sections
# (let out of the lingering meanwhile); the primary crashes then.
fault_lagover() {
	local p s down
	p=$(<"$T/my.primary") s=$(_my_other "$(<"$T/my.primary")")
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
	my_failover_to "$s" "$p" "$down" "$s"
}

# my_failover_to REPLICA OLD DOWN [CUT]: DOWN seconds after the primary's
# crash, REPLICA promoted and given the address (then CUT's cuts healed),
# OLD made its replica
my_failover_to() {
	local s=$1 p=$2 down=$3 c
	sleep "$down"
	# the replica applies what it has, and takes over, address and all
	my_root "$s" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0" ||
		echo "fault: $s not promoted" >>"$T/failed"
	on "$p" ip addr del "$MY_VIP/24" dev eth0
	on "$s" ip addr add "$MY_VIP/24" dev eth0
	for c in c1 c2 adm; do on "$c" ip neigh flush to "$MY_VIP" 2>/dev/null; done
	echo "$s" >"$T/my.primary"
	[[ -z ${4:-} ]] || net_heal "$4"	# lagover's cut
	# the old primary anew, from the template and a dump of the new one
	{
		rm -rf "$T/$p/data" "$T/$p"/binlog.* && cp -a "$T/template" "$T/$p/data" &&
			member_start "$p" && wait_until 60 my_root "$p" 'SELECT 1' &&
			mariadb-dump -S "$T/$s/sock" -uroot --single-transaction --gtid \
				--master-data=1 --databases dlock >"$T/$p/dump.sql" &&
			mariadb -S "$T/$p/sock" -uroot <"$T/$p/dump.sql" &&
			my_replica_of "$p" "$s"
	} >>"$T/restarts.log" 2>&1 || echo "fault: $p not made a replica of $s" >>"$T/failed"
	echo "$p>$s $down"
}

# cluster_left KEY: locks held and dlock's connections, on both
cluster_left() {
	local m
	for m in "${MEMBERS[@]}"; do
		my_root "$m" "SELECT CONCAT('held by ', IS_USED_LOCK('dlock:$1'))
			FROM DUAL WHERE IS_USED_LOCK('dlock:$1') IS NOT NULL
			UNION ALL SELECT CONCAT('connection ', ID) FROM information_schema.PROCESSLIST
			WHERE USER = 'dl'" | sed "s/^/$m /"
	done
}

cluster_stop() {
	local m p
	for m in "${MEMBERS[@]}"; do
		p=$(cat "$T/$m/pid" 2>/dev/null) || continue
		kill -CONT "$p" 2>/dev/null
		kill -KILL "$p" 2>/dev/null
	done
	return 0
}
