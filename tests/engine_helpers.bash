# engine_helpers.bash - the feature suites on every engine (issue 28): the
# engine is chosen per run by DLOCK_TEST_ENGINE (redis, the default;
# postgres, mysql, zookeeper, etcd), and a suite asks the store through
# these helpers instead of redis-cli.
#
# A suite loads helpers, then this file, and calls
#   setup_file    engine_start       the engine's server, once per file
#   teardown_file engine_stop        stopped by PID, pass or fail
#   setup         engine_setup       common_setup; U (the URL), K (a name)
#   teardown      engine_teardown    stop_all; the server continued, and
#                                    what a failed test left ended
# Redis keeps a server per test (start_redis r, a few ms; as before), so
# that its suites still see the whole keyspace and the server's counters
# of one test alone; the others start theirs once per file (MariaDB takes
# 5 to 9 s, a ZooKeeper JVM 2 to 5) and each test uses names of its own:
# K is "K" on Redis and "tN-K" elsewhere (N the test's number), and
# name X gives the test's name for X.
#
# What the store says, whatever the engine (NAME: a lock name, no prefix;
# the default prefix dlock: is assumed):
#   store_held NAME / store_free NAME     someone holds it / nobody
#   store_holders NAME                    how many hold it
#   store_waiters NAME                    how many wait in the store for it
#   store_break NAME                      the lock broken behind the
#                                         holder's back (see below)
#   store_fence NAME                      the holder's fence as stored
#   store_nothing_left                    no lock, node, key, session or
#                                         connection of dlock left (a
#                                         deadline: releases are async)
#   server_pause / server_resume          SIGSTOP / SIGCONT the server
#                                         (every process of it)
#   server_crash                          SIGKILL the server and start it
#                                         again on its data
# What an engine can do is asked of dlock itself (needs, refused), never
# read from a table here, so that the suites keep the engines honest.

: "${DLOCK_TEST_ENGINE:=redis}"
ENGINE=$DLOCK_TEST_ENGINE
export DLOCK_TEST_ENGINE

case $ENGINE in
redis) ;;
postgres | mysql | zookeeper | etcd) load "${BASH_SOURCE[0]%/*}/${ENGINE}_helpers" ;;
*) echo "DLOCK_TEST_ENGINE: no engine '$ENGINE' (redis, postgres, mysql, zookeeper, etcd)" >&2
   exit 1 ;;
esac

# The engine's name as dlock says it in a refusal.
engine_word() {
	case $ENGINE in
	redis) echo Redis ;; postgres) echo PostgreSQL ;; mysql) echo MySQL ;;
	zookeeper) echo ZooKeeper ;; etcd) echo etcd ;;
	esac
}

on_redis() { [[ $ENGINE == redis ]]; }
# redis_only: a Redis-only test skips elsewhere, saying why
redis_only() { on_redis || skip "Redis-only: $*"; }
# if_redis CMD...: a check of the Redis layout, run on Redis alone
if_redis() { ! on_redis || "$@"; }

# ---- the server, once per file ---------------------------------------------

# engine_start [WHAT...]: the server, unless dlock refuses one of WHAT
# (needs' words) on this engine: then no server, and every test of the
# file skips saying so (bats 1.8 cannot skip in setup_file itself); the
# refusal is checked as needs checks it.
engine_start() {
	local what why U T=$BATS_FILE_TMPDIR
	U=$(unreachable_url)	# refused before anything is contacted
	for what; do
		why=$(refusal_of "$what") || { echo "# $why" >&3; return 1; }
		[[ -z $why ]] || { export ENGINE_SKIP=$why; return 0; }
	done
	case $ENGINE in
	redis) ;;
	postgres)
		start_postgres || { stop_postgres; return 1; }
		;;
	mysql)
		command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null ||
			{ echo "# no mariadb-server here" >&3; return 1; }
		/usr/bin/python3 -c 'import pymysql' 2>/dev/null ||
			{ echo "# no python3-pymysql here" >&3; return 1; }
		my_start_server || { my_stop_server; return 1; }
		;;
	zookeeper)	# start_zk's, with dump (store_ttl_ms reads it)
		mkdir -p "$ZK_DIR"
		local try port
		for try in 1 2 3; do
			port=$(free_port)
			_zk_conf s "$port" "4lw.commands.whitelist=srvr,cons,ruok,dump"
			_zk_run s org.apache.zookeeper.server.ZooKeeperServerMain
			wait_until 30 zk_serving "$port" && return 0
			kill "$(<"$ZK_DIR/s/pid")" 2>/dev/null
		done
		echo "# zookeeper did not start: $(tail -n 20 "$ZK_DIR/s/log")" >&3
		stop_zk_all
		return 1
		;;
	etcd)
		start_etcd "$BATS_FILE_TMPDIR" e1 || { stop_etcd "$BATS_FILE_TMPDIR" e1; return 1; }
		export EP
		EP=$(<"$BATS_FILE_TMPDIR/e1/ep")
		;;
	esac
}

engine_stop() {
	case $ENGINE in
	redis) ;;
	postgres) stop_postgres ;;
	mysql) my_stop_server ;;
	zookeeper) stop_zk_all ;;
	etcd) stop_etcd "$BATS_FILE_TMPDIR" e1 ;;
	esac
}

# engine_url: the URL of the test's server
engine_url() {
	case $ENGINE in
	redis) sock_url r ;;
	postgres) echo "$PG_URL" ;;
	mysql) echo "mysql://dl:secret@127.0.0.1:$MY_PORT/dlock" ;;
	zookeeper) zk_url s ;;
	etcd) echo "etcd://$EP" ;;
	esac
}

# name X: this test's lock name for X (X itself on Redis)
name() {
	if on_redis; then echo "$1"; else echo "t$BATS_TEST_NUMBER-$1"; fi
}

engine_setup() {
	[[ -z ${ENGINE_SKIP:-} ]] || skip "$ENGINE_SKIP"
	common_setup
	case $ENGINE in
	redis) start_redis r ;;
	mysql)	# a test may have stopped it and failed half-way
		my_back || fail "mariadbd does not come back"
		my sql "SET GLOBAL read_only = 0, sql_mode = DEFAULT, max_connections = DEFAULT"
		;;
	esac
	U=$(engine_url)
	K=$(name K)
	case $ENGINE in	# what the tests before left to lapse (store_leftovers)
	zookeeper) BASE_SESSIONS=$(zk_sessions) ;;
	etcd) BASE_LEASES=$(etcd_lease_ids) ;;
	esac
}

engine_teardown() {
	server_resume 2>/dev/null || true
	stop_all
	# what a failed test left must not fail the next one
	case $ENGINE in
	postgres)
		psql_ "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'" \
			>/dev/null 2>&1 || true ;;
	mysql)
		local id
		for id in $(my "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'dl'" 2>/dev/null); do
			my "KILL $id" 2>/dev/null || true
		done ;;
	esac
}

# known_bug ENGINE WHY: on ENGINE the test stops here, skipped, naming a
# bug in dlock that the matrix found there (to be fixed, then this line
# goes); DLOCK_TEST_STRICT=1 does not turn these into failures, as they
# are known; DLOCK_TEST_KNOWN_BUGS=1 runs past them, to see which are fixed
known_bug() {
	[[ $ENGINE != "$1" || ${DLOCK_TEST_KNOWN_BUGS:-0} == 1 ]] ||
		skip "known bug on $1: $2"
}

# one_server: the suites of modes_helpers.bash (SRV, NAMES) on one
# server: Redis's r1, or this engine's (NAMES empty: every_server and the
# like are for Redis; its nothing_left asks the store)
one_server() {
	if on_redis; then
		servers 1
	else
		SRV=(-S "$U") NAMES=()
	fi
}

# srv_holders: how many hold K on the servers of modes_helpers' SRV (on
# Redis, as the first of them keeps it)
srv_holders() {
	if on_redis; then
		STORE_REDIS=${NAMES[0]} store_holders K
	else
		store_holders "$K"
	fi
}

# ---- capabilities: what dlock says --------------------------------------------

# refused ARGS...: dlock refuses ARGS on this engine before it contacts
# anything (64, one line naming the engine and the option, nothing run):
# true; dlock takes them (whatever then happens): false. ARGS is a whole
# command line after dlock, without -S: "-s -n NAME true",
# "acquire NAME", "history NAME". The refusal is checked: a 64 for
# another reason fails the test.
refused() {
	local opt=$1 line
	run --separate-stderr "$DLOCK" -S "$U" "$@"
	((status == 64)) || return 1
	line=$stderr
	((${#stderr_lines[@]} == 1)) ||
		fail "dlock ${*}: 64 with more than one line: $stderr"
	[[ $line == *"$(engine_word)"* || $line == *"$ENGINE"* ]] ||
		fail "dlock ${*}: 64 without naming the engine: $line"
	REFUSAL=$line
	return 0
}

# needs WHAT: the test needs what the engine may refuse, asked of dlock;
# when it refuses (64, checked, its line naming the option too), the test
# ends there, skipped with that line. WHAT: -s, --limit, --fair, steps
# (acquire, extend, release --token), history, list (status without KEY),
# -k, unavailable (--unavailable run).
needs() {
	local why
	why=$(refusal_of "$1") || fail "$why"
	[[ -z $why ]] || skip "$why"
}
# refusal_of WHAT: why dlock refuses WHAT on this engine (its 64 checked:
# one line naming the engine and WHAT), empty when it takes it; fails
# (the reason on stdout) when the refusal is not as it should be
refusal_of() {
	local what=$1 probe word args
	probe=t${BATS_TEST_NUMBER:-0}-probe
	case $what in
	-s) args=(-s -n -t 5 "$probe" true) word=-s ;;
	--limit) args=(--limit 2 -n -t 5 "$probe" true) word=--limit ;;
	--fair) args=(--fair -n -t 5 "$probe" true) word=--fair ;;
	steps) args=(extend --token 0123456789abcdef0123456789abcdef "$probe") word=extend ;;
	history) args=(history "$probe") word=history ;;
	list) args=(status) word='without KEY' ;;
	-k) args=(-n -t 5 -k "$probe-a" -k "$probe-b" true) word=-k ;;
	unavailable) args=(--unavailable run -n -t 5 "$probe" true) word=--unavailable ;;
	*) echo "needs: what is '$what'?"; return 1 ;;
	esac
	refused "${args[@]}" || return 0
	[[ $REFUSAL == *"$word"* ]] || { echo "dlock ${args[*]}: 64 without naming $word: $REFUSAL"; return 1; }
	echo "$(engine_word) refuses $what (64: $REFUSAL)"
}

# is_token WORD: WORD is a token as this engine gives them (ZooKeeper: 64
# hex digits, the GUID and the session's password; elsewhere 32)
is_token() {
	local re='^[0-9a-f]{32}$'
	[[ $ENGINE != zookeeper ]] || re='^[0-9a-f]{64}$'
	[[ $1 =~ $re ]] || fail "not a token: '$1'"
}

# unreachable_url: a URL of this engine where no server answers
unreachable_url() {
	case $ENGINE in
	redis) echo "unix:$T/nowhere.sock" ;;
	postgres) echo "postgres://postgres@/postgres?host=$T/nowhere&port=5432" ;;
	mysql) echo "mysql://dl:secret@127.0.0.1:$(free_port)/dlock" ;;
	zookeeper) echo "zk://127.0.0.1:$(free_port)" ;;
	etcd) echo "etcd://127.0.0.1:$(free_port)" ;;
	esac
}

# key_of NAME: what DLOCK_KEY says for NAME (ZooKeeper: the lock's node)
key_of() {
	if [[ $ENGINE == zookeeper ]]; then echo "/dlock:$1"; else echo "dlock:$1"; fi
}

# ---- what the store says ----------------------------------------------------

# contenders NAME: the lock's contenders in the store, in their order, one
# a line, each "KIND" (x exclusive, s shared, N --limit N; another
# client's is x): ZooKeeper's children, etcd's keys
contenders() {
	case $ENGINE in
	zookeeper)
		kz "$(zk_hosts s)" children "/dlock:$1" 2>/dev/null | awk '
			match($0, /^-[0-9a-f]+-(x|s|l[0-9]+)-/) {
				k = substr($0, 35, RLENGTH - 35); sub(/^l/, "", k); print k; next }
			/__rlock__/ { print "s"; next }
			{ print "x" }'
		;;
	etcd)
		ectl get --prefix "dlock:$1/" --sort-by=CREATE --order=ASCEND -w json |
			jq -r '.kvs[]?.value | @base64d | split("\n")[0] | split(" ")
				| if .[0] == "dlock1" then .[2] else "x" end'
		;;
	esac
}

# holding_of KIND...: how many of these contenders (in their order) hold:
# an exclusive one when first, a shared one with no exclusive before it,
# one of --limit N among the first N
holding_of() {
	local i=0 n=0 x_before=0 k
	for k; do
		case $k in
		x) ((i == 0)) && n=$((n + 1)); x_before=1 ;;
		s) ((x_before)) || n=$((n + 1)) ;;
		*) ((i < k)) && n=$((n + 1)) ;;
		esac
		i=$((i + 1))
	done
	echo "$n"
}

pg_key_cond() {	# the pg_locks condition for dlock's NAME
	echo "locktype = 'advisory'
		AND objid = (hashtextextended('dlock:$1', 0) & 4294967295)::oid
		AND classid = ((hashtextextended('dlock:$1', 0) >> 32) & 4294967295)::oid"
}

store_holders() {
	local kinds
	case $ENGINE in
	redis)	# on server r, or STORE_REDIS
		local r=${STORE_REDIS:-r}
		case $(rcli "$r" type "dlock:$1") in
		string) echo 1 ;;
		zset)	# the leases not lapsed
			kinds=$(redis_ms "$r")
			rcli "$r" zcount "dlock:$1" "($kinds" +inf ;;
		*) echo 0 ;;
		esac ;;
	postgres) psql_ "SELECT count(*) FROM pg_locks WHERE granted AND $(pg_key_cond "$1")" ;;
	mysql) [[ $(used_by "dlock:$1") == NULL ]] && echo 0 || echo 1 ;;
	zookeeper | etcd)
		mapfile -t kinds < <(contenders "$1")
		holding_of "${kinds[@]}" ;;
	esac
}
store_held() { (($(store_holders "$1") > 0)); }
store_free() { (($(store_holders "$1") == 0)); }
redis_ms() {	# redis_ms [SERVER]: the Redis server's clock, ms
	local t
	t=$(rcli "${1:-r}" time | tr '\n' ' ')
	set -- $t
	echo $(($1 * 1000 + $2 / 1000))
}

# store_waiters NAME: how many wait for it where the store can tell (a
# Redis waiter blocked for its wake-up, a PostgreSQL session waiting in
# the lock queue, a MySQL connection in GET_LOCK, a ZooKeeper node or etcd
# key that does not hold)
store_waiters() {
	local kinds
	case $ENGINE in
	redis) rcli r client list | grep -c ' flags=b[^ ]* .* cmd=blpop ' ;;
	postgres) psql_ "SELECT count(*) FROM pg_locks WHERE NOT granted AND $(pg_key_cond "$1")" ;;
	mysql) waiters_of ;;
	zookeeper | etcd)
		mapfile -t kinds < <(contenders "$1")
		echo $((${#kinds[@]} - $(holding_of "${kinds[@]}"))) ;;
	esac
}
waiting() { [[ $(store_waiters "$1") == "$2" ]]; }	# waiting NAME N

# store_break NAME: the lock broken behind its holder's back, as an
# operator or a failure would: Redis DEL of its key; PostgreSQL
# pg_terminate_backend of the holder's session; MySQL KILL of its
# connection; ZooKeeper and etcd delete the holder's node / key (the first
# in the queue).
store_break() {
	local first
	case $ENGINE in
	redis) assert_equal "$(rcli r del "dlock:$1")" 1 ;;
	postgres)
		assert_equal "$(psql_ "SELECT count(pg_terminate_backend(pid)) FROM pg_locks
			WHERE granted AND $(pg_key_cond "$1")")" 1 ;;
	mysql)
		first=$(used_by "dlock:$1")
		[[ $first != NULL ]] || fail "store_break $1: not held"
		my "KILL $first" ;;
	zookeeper)
		first=$(kz "$(zk_hosts s)" children "/dlock:$1" | head -n 1)
		[[ -n $first ]] || fail "store_break $1: no contender"
		kz "$(zk_hosts s)" delete "/dlock:$1/$first" ;;
	etcd)
		first=$(ectl get --prefix "dlock:$1/" --sort-by=CREATE --order=ASCEND --keys-only --limit 1 | sed '/^$/d')
		[[ -n $first ]] || fail "store_break $1: no key"
		assert_equal "$(ectl del "$first")" 1 ;;
	esac
}

# store_token NAME: the (first) holder's token as the store keeps it
# (ZooKeeper: the GUID its node is named by, the token's first 32 digits)
store_token() {
	case $ENGINE in
	redis)
		case $(rcli r type "dlock:$1") in
		string) rcli r get "dlock:$1" ;;
		zset) rcli r zrange "dlock:$1" 0 0 ;;
		esac ;;
	postgres)
		psql_ "SELECT substring(a.query from 'token=([0-9a-f]+)') FROM pg_stat_activity a
			JOIN pg_locks l ON l.pid = a.pid WHERE l.granted AND $(pg_key_cond "$1") LIMIT 1" ;;
	mysql) my "SELECT token FROM dlock_locks WHERE conn = IS_USED_LOCK('dlock:$1')" ;;
	zookeeper)
		kz "$(zk_hosts s)" children "/dlock:$1" | head -n 1 | sed -nE 's/^-([0-9a-f]{32})-.*/\1/p' ;;
	etcd)
		ectl get --prefix "dlock:$1/" --sort-by=CREATE --order=ASCEND --limit 1 -w json |
			jq -r '.kvs[0].value | @base64d | split("\n")[0] | split(" ")[1]' ;;
	esac
}
# store_has_token NAME TOKEN: the store's first holder is TOKEN's
store_has_token() {
	local t=$2
	[[ $ENGINE != zookeeper ]] || t=${t:0:32}
	[[ $(store_token "$1") == "$t" ]]
}

# store_ttl_ms NAME: the (first) holder's lease left, ms, as the store
# keeps it: Redis's PTTL; etcd's lease time to live (whole seconds);
# ZooKeeper's session expiry (whole seconds, rounded up to its ticks);
# PostgreSQL and MySQL have none (the lease is the connection): empty
store_ttl_ms() {
	local id t
	case $ENGINE in
	redis) rcli r pttl "dlock:$1" ;;
	etcd)
		id=$(ectl get --prefix "dlock:$1/" --sort-by=CREATE --order=ASCEND --limit 1 -w fields |
			sed -n 's/^"Lease" : \([0-9]*\)$/\1/p')
		[[ -n $id ]] || return 0
		t=$(ectl lease timetolive "$(printf %x "$id")" | sed -n 's/.*remaining(\(-\?[0-9]*\)s).*/\1/p')
		echo $((t * 1000)) ;;
	zookeeper)
		local sid
		sid=$(store_token "$1")
		[[ -n $sid ]] || return 0
		sid=0x$(sed 's/^0*//' <<<"${sid:0:16}")
		t=$(zk_4lw "$(zk_port s)" dump | awk -v sid="$sid" '
			/ expire at / { sub(/^[0-9]+ expire at /, ""); sub(/:$/, ""); at = $0; next }
			$1 == sid && at != "" { print at; exit }
			/^ephemeral nodes dump/ { exit }')
		[[ -n $t ]] || return 0
		echo $(($(date -d "$t" +%s) * 1000 - $(now_ms))) ;;
	esac
}
# ttl_within NAME LOW HIGH: the lease left is in [LOW, HIGH] ms, as
# closely as the store can tell (etcd: whole seconds; ZooKeeper: the
# second of its expiry, on its 0.5 s ticks); PostgreSQL and MySQL: true
ttl_within() {
	local ms low=$2 high=$3
	ms=$(store_ttl_ms "$1")
	case $ENGINE in
	postgres | mysql) return 0 ;;
	etcd) low=$((low - 1000)) ;;
	zookeeper) low=$((low - 1500)) high=$((high + 1500)) ;;
	esac
	[[ -n $ms ]] && ((ms >= low && ms <= high)) ||
		fail "$1: lease left '$ms' ms, not $2 to $3"
}

# store_fence NAME: the (first) holder's fence as the store keeps it
store_fence() {
	local first
	case $ENGINE in
	redis) counter r "$1" ;;
	postgres)
		psql_ "SELECT substring(a.query from 'fence=([0-9]+)') FROM pg_stat_activity a
			JOIN pg_locks l ON l.pid = a.pid WHERE l.granted AND $(pg_key_cond "$1") LIMIT 1" ;;
	mysql) my "SELECT fence FROM dlock_locks WHERE conn = IS_USED_LOCK('dlock:$1')" ;;
	zookeeper)
		first=$(kz "$(zk_hosts s)" children "/dlock:$1" | head -n 1)
		kz "$(zk_hosts s)" czxid "/dlock:$1/$first" ;;
	etcd)
		ectl get --prefix "dlock:$1/" --sort-by=CREATE --order=ASCEND --limit 1 -w json |
			jq -r '.kvs[0].create_revision' ;;
	esac
}

# store_leftovers: what dlock left in the store, one a line (empty: nothing):
# Redis: keys but the locks' counters, history and notices; PostgreSQL: advisory
# locks and dlock's sessions; MySQL: user locks and the connections of
# dl (teardown ends what a test left of these); ZooKeeper: this test's
# contender nodes, and sessions opened since the test began; etcd: this
# test's keys, and lock leases granted since it began (a job whose dlock
# was killed leaves its session or lease to lapse, maybe into the next
# test: not that test's leftovers)
store_leftovers() {
	case $ENGINE in
	redis)
		# (a notice to a holder that may listen lapses on its own)
		all_keys r | grep -vE '^\{dlock:[^}]*\}:(fence|ticket|history|notice:[0-9a-f]+)$' || true ;;
	postgres)
		psql_ "SELECT 'advisory lock ' || objid || ' of ' || pid || CASE WHEN granted THEN '' ELSE ' (waiting)' END
			FROM pg_locks WHERE locktype = 'advisory'
			UNION ALL SELECT 'session ' || pid || ': ' || left(query, 60) FROM pg_stat_activity
			WHERE application_name = 'dlock' OR application_name LIKE 'dlock-%'" ;;
	mysql)
		my "SELECT CONCAT('connection ', ID, ' ', COMMAND, ' ', IFNULL(STATE, ''))
			FROM information_schema.PROCESSLIST WHERE USER = 'dl'" ;;
	zookeeper)
		zk_nodes "dlock:$(name '')"
		comm -13 <(echo "$BASE_SESSIONS") <(zk_sessions) | sed '/^$/d; s/^/session /' ;;
	etcd)
		ectl get --prefix "dlock:$(name '')" --keys-only | sed '/^$/d'
		local id
		for id in $(comm -13 <(echo "$BASE_LEASES") <(etcd_lease_ids)); do
			ectl lease timetolive "$id" | grep -Eq 'granted with TTL\((691200|10)s\)|expired' ||
				echo "lease $id"
		done ;;
	esac
}
# zk_nodes PREFIX: the children of every /PREFIX* node, as paths
zk_nodes() {
	"$PYTHON" - "$(zk_hosts s)" "$1" <<'PY'
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=5)
zk.start(timeout=5)
for n in zk.get_children("/"):
    if n.startswith(sys.argv[2]):
        for k in zk.get_children("/" + n):
            print("/%s/%s" % (n, k))
zk.stop()
PY
}
zk_sessions() {	# the server's client sessions, sorted
	zk_4lw "$(zk_port s)" cons | grep -o 'sid=0x[0-9a-f]*' | grep -v 'sid=0x0$' | sort -u || true
}
etcd_lease_ids() { ectl lease list | sed -n 's/^\([0-9a-f]*\)$/\1/p' | sort; }
store_clean() { [[ -z $(store_leftovers) ]]; }
store_nothing_left() {
	wait_until "${1:-5}" store_clean || fail "left behind: $(store_leftovers | tr '\n' ';')"
}

# ---- the server as a process ------------------------------------------------

server_pids() {	# every process of the server
	local p
	case $ENGINE in
	redis) server_pid r ;;
	postgres)
		p=$(head -n 1 "$PGDIR/data/postmaster.pid" 2>/dev/null) || return 0
		echo "$p"
		pgrep -P "$p" || true ;;
	mysql) cat "$MY_DIR/pid.mine" ;;
	zookeeper) zk_pid s ;;
	etcd) cat "$BATS_FILE_TMPDIR/e1/pid" ;;
	esac
}
server_pause() { kill -STOP $(server_pids); }
server_resume() { kill -CONT $(server_pids); }

# server_crash: SIGKILL, then the same server again on its data (Redis:
# without persistence, it comes back empty)
server_crash() {
	local pids
	pids=$(server_pids)
	kill -CONT $pids 2>/dev/null || true
	case $ENGINE in
	redis)
		end_pids KILL $pids
		start_redis r ;;
	postgres)
		end_pids KILL $pids
		# what a killed postmaster leaves: its pid and socket lock files
		rm -f "$PGDIR/data/postmaster.pid" "$PGDIR"/.s.PGSQL.*.lock
		runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDIR/data" -w -t 30 \
			-o "-k $PGDIR -p $PGPORT -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" \
			-l "$PGDIR/log" start >/dev/null 2>&1 3>&- || fail "postgres did not start again" ;;
	mysql)
		my_kill_server KILL
		my_run_server || fail "mariadbd did not start again" ;;
	zookeeper)
		kill -KILL $pids
		wait_until 10 dead "$pids" || fail "zookeeper survives SIGKILL"
		restart_zk s ;;
	etcd)
		kill -KILL $pids
		wait_until 10 dead "$pids" || fail "etcd survives SIGKILL"
		restart_etcd ;;
	esac
}

# restart_etcd: the file's member again, on its data and ports
restart_etcd() {
	local d=$BATS_FILE_TMPDIR/e1
	etcd --name e1 --data-dir "$d/data" \
		--listen-client-urls "http://127.0.0.1:$(<"$d/cport")" \
		--advertise-client-urls "http://127.0.0.1:$(<"$d/cport")" \
		--listen-peer-urls "http://127.0.0.1:$(<"$d/pport")" \
		--initial-advertise-peer-urls "http://127.0.0.1:$(<"$d/pport")" \
		--initial-cluster "e1=http://127.0.0.1:$(<"$d/pport")" \
		--heartbeat-interval 50 --election-timeout 500 \
		--log-level error >>"$d/log" 2>&1 3>&- &
	echo $! >"$d/pid"
	wait_until 20 etcd_up "$d" || fail "etcd did not start again: $(tail -n 5 "$d/log")"
}
