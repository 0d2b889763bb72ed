#!/usr/bin/env bats
# servers.bats - how dlock reaches its servers: names looked up once, at
# start; AUTH and SELECT answered before a round's commands are sent.

load helpers

# load_scripts NAME: a first run caches dlock's scripts on server NAME, then
# every key goes, so that a later EVALSHA would run at once where it lands.
load_scripts() {
	run -0 dlock -S "$(sock_url "$1")" K true
	rcli "$1" flushall >/dev/null
}
no_keys_at_all() { assert_equal "$(rcli "$1" info keyspace | tr -d '\r' | grep '^db')" ''; }

@test "SELECT of a database the server lacks: 64, and no lock in database 0" {
	start_redis r
	load_scripts r
	run -64 --separate-stderr dlock -S "$(sock_url r)?db=99" K touch "$T/ran"
	assert_equal "$stderr" "dlock: K: $(sock_url r)?db=99: database 99: ERR DB index is out of range"
	[[ ! -e $T/ran ]] || fail "the command ran"
	no_keys_at_all r
}

@test "a wrong ACL password where the default user needs none: 77, no lock" {
	start_redis_tcp r
	rcli r acl setuser alice on '>s3cret' '~*' '&*' '+@all' >/dev/null
	load_scripts r
	local url=redis://alice:wr0ng@127.0.0.1:$(<"$T/r/port")
	run -77 --separate-stderr dlock -S "$url" K touch "$T/ran"
	assert_equal "$stderr" "dlock: K: redis://alice:***@127.0.0.1:$(<"$T/r/port"): WRONGPASS invalid username-password pair or user is disabled."
	[[ ! -e $T/ran ]] || fail "the command ran"
	no_keys_at_all r
	# and with the right one, in a database of its own: AUTH, SELECT, then the round
	run -0 dlock -S "redis://alice:s3cret@127.0.0.1:$(<"$T/r/port")/5" K \
		redis-cli -s "$(sock r)" -n 5 get dlock:K
	[[ $output =~ ^[0-9a-f]{32}$ ]] || fail "db 5 holds no token while locked: $output"
	assert_equal "$(all_keys r)" ''	# database 0
}

@test "a password where the server needs none: 77, no lock" {
	start_redis r
	load_scripts r
	DLOCK_PASSWORD=wr0ng run -77 --separate-stderr dlock -S "$(sock_url r)" K touch "$T/ran"
	[[ $stderr == "dlock: K: $(sock_url r): ERR AUTH <password> called without any password configured for the default user."* ]] ||
		fail "stderr: $stderr"
	[[ ! -e $T/ran ]] || fail "the command ran"
	no_keys_at_all r
}

# lookups FILE: how many times the traced run read /etc/hosts (a name lookup)
lookups() { grep -c '"/etc/hosts"' "$1" || true; }

@test "a server's name is looked up once, not at every connection" {
	command -v strace >/dev/null || skip_unless_strict "no strace"
	start_redis_tcp r
	local port; port=$(<"$T/r/port")
	hold h -S "$(sock_url r)" K
	wait_ready h
	# LeakSanitizer cannot work under ptrace (a sanitized build: tests/run
	# --sanitized); ASan and UBSan can.
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	# Waiting opens a second connection (BLPOP), and every try that
	# fails closes one: hiredis looked the name up for each.
	run -1 strace -f -qq -o "$T/trace" -e trace=openat "$DLOCK" \
		-S "redis://localhost:$port" -w 0.6 K true
	(($(lookups "$T/trace") > 0)) ||
		skip_unless_strict "localhost is not looked up in /etc/hosts here"
	assert_equal "$(lookups "$T/trace")" 1
	run -1 strace -f -qq -o "$T/trace" -e trace=openat "$DLOCK" \
		-S "redis://127.0.0.1:$port" -w 0.6 K true
	assert_equal "$(lookups "$T/trace")" 0	# an address: none at all
	finish h
}

@test "a name that does not resolve: 69, naming it" {
	run -69 --separate-stderr dlock -S redis://nowhere.invalid:6379 -n K touch "$T/ran"
	[[ $stderr == "dlock: K: redis://nowhere.invalid:6379: cannot resolve nowhere.invalid: "* ]] ||
		fail "stderr: $stderr"
	[[ ! -e $T/ran ]]
}

# twice URL1 URL2 WHERE [SHOWN2]: dlock -S URL1 -S (a third server) -S URL2
# is a usage error naming both (URL2 shown as SHOWN2, password masked),
# before any server is contacted
twice() {
	local before
	before=$(conns r)
	run -64 --separate-stderr dlock -S "$1" -S "$(sock_url other)" -S "$2" K touch "$T/ran"
	assert_equal "$stderr" "dlock: K: $1 and ${4:-$2} are the same server ($3): RedLock needs independent servers"
	[[ ! -e $T/ran ]] || fail "the command ran"
	# this check's own connection is the only one since
	assert_equal "$(conns r)" $((before + 1))
	assert_equal "$(all_keys r)" ''
}
conns() { rcli "$1" info stats | tr -d '\r' | sed -n 's/^total_connections_received://p'; }

@test "the same server twice in a RedLock set: 64, nothing touched" {
	start_redis_tcp r
	start_redis other
	local port; port=$(<"$T/r/port")
	twice "redis://127.0.0.1:$port" "redis://127.0.0.1:$port" "127.0.0.1:$port"
	twice "redis://localhost:$port" "redis://127.0.0.1:$port" "127.0.0.1:$port"
	twice "redis://127.0.0.1:$port/1" "redis://:pw@127.0.0.1:$port/2" "127.0.0.1:$port" \
		"redis://:***@127.0.0.1:$port/2"
	twice "$(sock_url r)" "unix://$(sock r)" "$(sock r)" "$(sock_url r)"
	ln -s "$(sock r)" "$T/link.sock"
	twice "$(sock_url r)" "unix:$T/link.sock" "$(sock r)"
	twice "unix:$T/gone/a.sock" "unix:$T//gone/./a.sock" "$T/gone/a.sock"
	# the one line, also where --verbose would say more
	run -64 --separate-stderr dlock --verbose -S "$(sock_url r)" -S "$(sock_url r)" K true
	assert_equal "${#stderr_lines[@]}" 1
	# one server on TCP and on its unix socket is not told apart
	run -0 dlock -S "$(tcp_url r)" -S "$(sock_url other)" -S "$(sock_url r)" K true
}

@test "a server older than Redis 6.0: 70, one line, nothing locked" {
	start_redis r
	# a relay that hides redis.setresp from the scripts, as Redis 5 lacks it
	"$PYTHON" "$BATS_TEST_DIRNAME/fake_redis.py" "$(sock r)" --hide-setresp \
		>"$T/fake" 2>"$T/fake.err" </dev/null 3>&- &
	track $!
	wait_until 5 grep -q '^ready ' "$T/fake" || fail "fake_redis: $(cat "$T/fake.err")"
	local url=redis://127.0.0.1:$(sed -n 's/^ready //p' "$T/fake")
	run -70 --separate-stderr dlock -S "$url" K touch "$T/ran"	# no retries
	assert_equal "$stderr" "dlock: K: $url: Redis 6.0 or later is needed"
	[[ ! -e $T/ran ]] || fail "the command ran"
	assert_equal "$(all_keys r)" ''
	run -0 dlock -S "$(sock_url r)" K true	# the real one is new enough
}

@test "--verbose says where the servers came from" {
	start_redis r
	local u; u=$(sock_url r)
	DLOCK_SERVERS="$u" run -0 --separate-stderr dlock --verbose K true
	assert_equal "${stderr_lines[0]}" "dlock: K: servers from DLOCK_SERVERS: $u"
	printf 'servers = %s\n' "$u" >"$T/conf"
	run -0 --separate-stderr dlock --verbose --config "$T/conf" K true
	assert_equal "${stderr_lines[0]}" "dlock: K: servers from $T/conf: $u"
	# A config file that names no servers leaves the built-in default
	# (whether or not a Redis answers there).
	printf 'ttl = 5\n' >"$T/conf"
	run --separate-stderr dlock --verbose --config "$T/conf" -n K true
	assert_equal "${stderr_lines[0]}" "dlock: K: servers from the default: redis://127.0.0.1:6379"
	# and without --verbose, or with -S, nothing
	DLOCK_SERVERS="$u" run -0 --separate-stderr dlock K true
	assert_equal "$stderr" ''
	DLOCK_SERVERS="$u" run -0 --separate-stderr dlock --verbose -S "$u" K true
	assert_equal "$stderr" ''
}
