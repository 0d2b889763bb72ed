# mysql_helpers.bash - one MariaDB server for a whole .bats file (it takes
# 5 to 9 s to set up): mariadb-install-db and mariadbd as the mysql user,
# in a directory of its own under /tmp (bats' own temp dirs are 0700, out
# of the mysql user's reach), on 127.0.0.1 at a free port and a unix
# socket, with TLS from a test CA. Its accounts (my_init_sql):
#   dl / secret        everything on the dlock database (the usual one)
#   ro / ropass        SELECT on it only: no fence row, no KILL of dl's
#   nodb / nodbpass    nothing at all
#   tlsonly / tlspass  as dl, but only over TLS
# setup_file calls my_start_server, teardown_file my_stop_server (by PID,
# pass or fail). Set before my_start_server: MY_NO_TLS=1 for a server
# without TLS, MY_FRESH=1 for mariadb-install-db's defaults (the test
# database and its anonymous accounts, ''@localhost among them),
# MY_CNF_EXTRA for more [mariadbd] lines.

# cert NAME CA SUBJECT [SAN]: NAME.pem and NAME.key in $MY_TLS, signed by CA
my_cert() {
	local name=$1 ca=$2 subj=$3 san=${4:-}
	openssl req -new -newkey rsa:2048 -nodes -keyout "$MY_TLS/$name.key" \
		-out "$MY_TLS/$name.csr" -subj "$subj" 2>/dev/null || return 1
	if [[ $san ]]; then
		printf 'subjectAltName=%s\n' "$san" >"$MY_TLS/$name.ext"
	else
		printf 'extendedKeyUsage=clientAuth\n' >"$MY_TLS/$name.ext"
	fi
	openssl x509 -req -in "$MY_TLS/$name.csr" -CA "$MY_TLS/$ca.pem" \
		-CAkey "$MY_TLS/$ca.key" -CAcreateserial -days 2 \
		-extfile "$MY_TLS/$name.ext" -out "$MY_TLS/$name.pem" 2>/dev/null
}

my_make_certs() {
	local ca
	mkdir -p "$MY_TLS"
	for ca in ca other-ca; do
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 \
			-subj "/CN=dlock test $ca" -keyout "$MY_TLS/$ca.key" \
			-out "$MY_TLS/$ca.pem" 2>/dev/null || return 1
	done
	my_cert server ca /CN=localhost 'DNS:localhost,IP:127.0.0.1' &&
		my_cert client ca /CN=dlock-client
}

my_free_port() {
	/usr/bin/python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

my_up() { mariadb -S "$MY_DIR/sock" -uroot -e 'SELECT 1' >/dev/null 2>&1; }
# my_back: the server answers, started again only if its process is gone.
# A SELECT 1 that failed under load must not start a second mariadbd,
# which fails on the locked data directory and leaves pid.mine naming a
# dead process: a later kill -STOP $(server_pids) then stops nothing.
my_back() {
	local pid
	pid=$(cat "$MY_DIR/pid.mine" 2>/dev/null)
	my_up && return 0
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill -CONT "$pid" 2>/dev/null	# a test that failed while it was stopped
		wait_until 30 my_up_or_dead && my_up && return 0
	fi
	my_run_server
}
my_up_or_dead() { my_up || ! kill -0 "$(cat "$MY_DIR/pid.mine" 2>/dev/null)" 2>/dev/null; }

# Starts mariadbd on the data directory made by my_start_server (again,
# after a test stopped it). 3>&-: else bats waits for the server to exit;
# in a subshell: not a job of the test's shell, which would say "Killed".
my_run_server() {
	(mariadbd --defaults-file="$MY_DIR/my.cnf" --user=mysql \
		>>"$MY_DIR/out.log" 2>&1 </dev/null 3>&- &
	echo $! >"$MY_DIR/pid.mine")
	wait_until 30 my_up_or_dead || return 1
	my_up
}

my_start_server() {
	local try
	export MY_DIR MY_PORT MY_TLS
	MY_DIR=$(mktemp -d /tmp/dlock-mysql.XXXXXX)
	MY_TLS=$MY_DIR/tls
	my_make_certs || { echo "# openssl: cannot make the certificates" >&3; return 1; }
	chmod 755 "$MY_DIR"
	chmod 644 "$MY_TLS"/*
	cat >"$MY_DIR/init.sql" <<'EOF'
CREATE DATABASE IF NOT EXISTS dlock;
CREATE USER IF NOT EXISTS 'dl'@'%' IDENTIFIED BY 'secret';
GRANT ALL ON dlock.* TO 'dl'@'%';
CREATE USER IF NOT EXISTS 'ro'@'%' IDENTIFIED BY 'ropass';
GRANT SELECT ON dlock.* TO 'ro'@'%';
CREATE USER IF NOT EXISTS 'nodb'@'%' IDENTIFIED BY 'nodbpass';
CREATE USER IF NOT EXISTS 'tlsonly'@'%' IDENTIFIED BY 'tlspass' REQUIRE SSL;
GRANT ALL ON dlock.* TO 'tlsonly'@'%';
EOF
	chown -R mysql:mysql "$MY_DIR"
	for try in 1 2 3; do	# another process may take the free port first
		MY_PORT=$(my_free_port)
		cat >"$MY_DIR/my.cnf" <<EOF
[mariadbd]
datadir=$MY_DIR/data
socket=$MY_DIR/sock
pid-file=$MY_DIR/mariadbd.pid
port=$MY_PORT
bind-address=127.0.0.1
skip-log-bin
skip-name-resolve
innodb_buffer_pool_size=8M
innodb_log_file_size=4M
init-file=$MY_DIR/init.sql
log-error=$MY_DIR/err.log
${MY_CNF_EXTRA:-}
EOF
		[[ ${MY_NO_TLS:-0} == 1 ]] || cat >>"$MY_DIR/my.cnf" <<EOF
ssl-ca=$MY_TLS/ca.pem
ssl-cert=$MY_TLS/server.pem
ssl-key=$MY_TLS/server.key
EOF
		if [[ ! -d $MY_DIR/data ]]; then
			# shellcheck disable=SC2046
			mariadb-install-db --defaults-file="$MY_DIR/my.cnf" --user=mysql \
				--auth-root-authentication-method=socket \
				$([[ ${MY_FRESH:-0} == 1 ]] || echo --skip-test-db) \
				>"$MY_DIR/install.log" 2>&1 ||
				{ echo "# mariadb-install-db failed: $(tail -n 5 "$MY_DIR/install.log")" >&3; return 1; }
		fi
		my_run_server && return 0
		grep -q 'Address already in use' "$MY_DIR/err.log" 2>/dev/null || break
	done
	echo "# mariadbd did not start: $(tail -n 5 "$MY_DIR/err.log")" >&3
	return 1
}

# my_kill_server SIGNAL: stops mariadbd (and waits for it to be gone)
my_kill_server() {
	local pid
	pid=$(cat "$MY_DIR/pid.mine" 2>/dev/null) || return 0
	kill -CONT "$pid" 2>/dev/null || true
	kill -"${1:-TERM}" "$pid" 2>/dev/null || true
	wait_until 30 dead "$pid" || kill -KILL "$pid" 2>/dev/null || true
	wait_until 5 dead "$pid" || true
}

my_stop_server() {
	[[ -n ${MY_DIR:-} && -d $MY_DIR ]] || return 0
	my_kill_server TERM
	rm -rf "$MY_DIR"
}

# ---- per test ------------------------------------------------------------

my_setup() {
	common_setup
	U="mysql://dl:secret@127.0.0.1:$MY_PORT/dlock"
	# The server may have been stopped by a test that failed half-way.
	my_back || fail "mariadbd does not come back"
	# what a test that failed half-way may have left
	my sql "SET GLOBAL read_only = 0, sql_mode = DEFAULT, max_connections = DEFAULT, enforce_storage_engine = NULL"
}

# my sql STATEMENTS: the mariadb client as root (unix socket), no headers
my() {
	[[ $1 == sql ]] && shift
	mariadb -S "$MY_DIR/sock" -uroot -N -B dlock -e "$1"
}

# held NAME: IS_USED_LOCK(NAME), "NULL" when free
used_by() { my "SELECT IFNULL(IS_USED_LOCK('$1'), 'NULL')"; }
is_free() { [[ $(used_by "$1") == NULL ]]; }
is_held() { [[ $(used_by "$1") != NULL ]]; }

# The connections of account dl (or $1), other than those the test keeps
# on purpose: none may be left after a dlock ended.
conns_of() { my "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = '${1:-dl}'"; }
no_conns() { [[ $(conns_of "${1:-dl}") == 0 ]]; }
# No lock, no waiter, no connection of dl left (the server handles a
# client's goodbye on its own time: a deadline)
nothing_left() {
	local name=${1:-dlock:K}
	wait_until 5 no_conns || fail "connections of dl left: $(my "SELECT ID, COMMAND, STATE, INFO FROM information_schema.PROCESSLIST WHERE USER = 'dl'")"
	is_free "$name" || fail "$name still held by connection $(used_by "$name")"
}
waiters_of() { my "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'"; }
no_waiters() { [[ $(waiters_of) == 0 ]]; }
has_waiter() { [[ $(waiters_of) -ge 1 ]]; }

# holder_id NAME: the holder's connection id (dlock's, or a client's)
holder_id() { used_by "$1"; }

# A client of our own holding GET_LOCK(NAME): PyMySQL in the background,
# until $T/ID.release exists; $T/ID.held once it holds.
# pyhold ID NAME [USER PASSWORD]
pyhold() {
	local id=$1 name=$2 user=${3:-dl} pass=${4:-secret}
	/usr/bin/python3 - "$MY_PORT" "$name" "$T/$id" "$user" "$pass" <<'EOF' >"$T/$id.out" 2>&1 3>&- &
import os, sys, time, pymysql
port, name, p, user, pw = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
c = pymysql.connect(host="127.0.0.1", port=port, user=user, password=pw, database="dlock")
cur = c.cursor()
cur.execute("SELECT GET_LOCK(%s, 30)", (name,))
got = cur.fetchone()[0]
open(p + ".got", "w").write("%s\n" % got)
if got == 1:
    open(p + ".held", "w").close()
end = time.time() + 60
while not os.path.exists(p + ".release") and time.time() < end:
    time.sleep(0.02)
cur.execute("SELECT RELEASE_LOCK(%s)", (name,))
print(cur.fetchone()[0])
c.close()
EOF
	track $!
	echo $! >"$T/$id.pypid"
}

# pytry NAME [TIMEOUT]: PyMySQL's GET_LOCK(NAME, TIMEOUT) once, then
# RELEASE_LOCK: prints what GET_LOCK answered (1 got it, 0 held)
pytry() {
	/usr/bin/python3 - "$MY_PORT" "$1" "${2:-0}" <<'EOF'
import sys, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="dl", password="secret", database="dlock")
cur = c.cursor()
cur.execute("SELECT GET_LOCK(%s, %s)", (sys.argv[2], float(sys.argv[3])))
print(cur.fetchone()[0])
cur.execute("DO RELEASE_LOCK(%s)", (sys.argv[2],))
c.close()
EOF
}

# man_block TEXT: the first code block of the man page's MySQL section
# after the paragraph that starts with TEXT, as the reader sees it
man_block() {
	awk -v start="$1" '
		$0 == "## MySQL and MariaDB" { mysql = 1 }
		mysql && index($0, start) == 1 { found = 1 }
		found && /^```$/ { if (inside) exit; inside = 1; next }
		inside' "$BATS_TEST_DIRNAME/../man/dlock.1.scd" | sed 's/\\\\/\\/g'
}

# sql_name PREFIX KEY: the GET_LOCK name, by the SQL dlock(1) gives for it
sql_name() {
	local sql hex
	sql=$(man_block '*The name.*')
	[[ $sql == *"CONCAT('dlock:', X'6e696768746c79')"* ]] || fail "no name SQL in dlock(1): $sql"
	hex=$(printf %s "$2" | od -An -v -tx1 | tr -d ' \n')
	sql=${sql/"CONCAT('dlock:', X'6e696768746c79')"/"CONCAT('$1', X'$hex')"}
	my "$sql"
}

# start_relay MODE [ARG]: a TCP relay to the server that rewrites the
# handshake (the server's first packet) as a man in the middle, or a
# pooler, would; listens on a free port, in $T/relay.port. The bytes each
# client sent go to $T/relay.sent, one line per connection, when it ends.
#   id          the connection id + 1000 (ProxySQL's own id differs from
#               the backend's CONNECTION_ID())
#   no-tls      CLIENT_SSL cleared: a server that offers no TLS
#   version V   the server's version string replaced by V
start_relay() {
	/usr/bin/python3 - "$MY_PORT" "$T/relay.port" "$T/relay.sent" "$1" "${2:-}" <<'EOF' >"$T/relay.log" 2>&1 3>&- &
import os, socket, sys, threading
backend, portfile, sentfile, mode, arg = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0)); ls.listen(16)
open(portfile + ".tmp", "w").write("%d\n" % ls.getsockname()[1])
os.rename(portfile + ".tmp", portfile)
lock = threading.Lock()
def greeting(d):
    # header(4: length 3 LE, seq 1) protocol(1) version NUL id(4)
    # scramble(8) filler(1) capabilities, low 2 bytes (LE)
    nul = d.index(b"\0", 5)
    if mode == "id":
        i = int.from_bytes(d[nul + 1:nul + 5], "little") + 1000
        d = d[:nul + 1] + i.to_bytes(4, "little") + d[nul + 5:]
    elif mode == "no-tls":
        at = nul + 14
        caps = int.from_bytes(d[at:at + 2], "little") & ~0x0800
        d = d[:at] + caps.to_bytes(2, "little") + d[at + 2:]
    elif mode == "version":
        body = d[4:5] + arg.encode() + d[nul:]
        d = len(body).to_bytes(3, "little") + d[3:4] + body
    return d
def pipe(a, b, first=False, count=False):
    n = 0
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            n += len(d)
            if first:
                d = greeting(d)
                first = False
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
    if count:
        with lock:
            with open(sentfile, "a") as f:
                f.write("%d\n" % n)
while True:
    c, _ = ls.accept()
    s = socket.create_connection(("127.0.0.1", backend))
    threading.Thread(target=pipe, args=(s, c, True), daemon=True).start()
    threading.Thread(target=pipe, args=(c, s, False, True), daemon=True).start()
EOF
	track $!
	wait_until 5 test -e "$T/relay.port" || fail "the relay did not start: $(cat "$T/relay.log")"
}
start_id_relay() { start_relay id; }
