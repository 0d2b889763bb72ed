#!/usr/bin/env bats
# auth.bats - passwords (URL, DLOCK_PASSWORD, --password-file, config file),
# ACL users, refused credentials (77), and the database number.

load helpers

setup() {
	common_setup
	start_redis_tcp r --requirepass 'pw0rd'
	port=$(<"$T/r/port")
}

# refused URL...: dlock exits 77 with one line naming the lock and the URL,
# without the password, and runs nothing.
refused() {
	run -77 --separate-stderr dlock "$@" K touch "$T/ran"
	((${#stderr_lines[@]} == 1)) || fail "want one stderr line: $stderr"
	[[ ${stderr_lines[0]} == "dlock: K: redis://"*"127.0.0.1:$port"* ]] ||
		fail "stderr: $stderr"
	[[ $stderr != *wr0ng* && $stderr != *s3cret* ]] || fail "a password in: $stderr"
	[[ ! -e $T/ran ]] || fail "the command ran"
	assert_equal "$(all_keys r)" ''
}

@test "password in the URL" {
	run -0 dlock -S "redis://:pw0rd@127.0.0.1:$port" K sh -c 'echo "$DLOCK_KEY"'
	assert_output dlock:K
	key_exists r '{dlock:K}:fence'
}

@test "a %-escaped password in the URL" {
	rcli r config set requirepass 'p@ss:w' >/dev/null
	echo 'p@ss:w' >"$T/r/pass"
	run -0 dlock -S "redis://:p%40ss%3Aw@127.0.0.1:$port" K true
	key_exists r '{dlock:K}:fence'
}

@test "DLOCK_PASSWORD" {
	DLOCK_PASSWORD=pw0rd run -0 dlock -S "redis://127.0.0.1:$port" K true
	key_exists r '{dlock:K}:fence'
}

@test "--password-file, one trailing newline ignored" {
	echo pw0rd >"$T/pwfile"
	run -0 dlock -S "redis://127.0.0.1:$port" --password-file "$T/pwfile" K true
	printf pw0rd >"$T/pwfile2"
	run -0 dlock -S "redis://127.0.0.1:$port" --password-file="$T/pwfile2" K true
	key_exists r '{dlock:K}:fence'
}

@test "password-file in the config file" {
	echo pw0rd >"$T/pwfile"
	printf 'servers = redis://127.0.0.1:%s\npassword-file = %s\n' "$port" "$T/pwfile" >"$T/conf"
	run -0 dlock --config "$T/conf" K true
	key_exists r '{dlock:K}:fence'
}

@test "a wrong password: 77" {
	refused -S "redis://:wr0ng@127.0.0.1:$port"
}

@test "a wrong DLOCK_PASSWORD: 77" {
	DLOCK_PASSWORD=wr0ng refused -S "redis://127.0.0.1:$port"
}

@test "no password (NOAUTH): 77" {
	refused -S "redis://127.0.0.1:$port"
}

@test "a password where none is configured: 77" {
	rcli r config set requirepass '' >/dev/null
	rm "$T/r/pass"
	refused -S "redis://:wr0ng@127.0.0.1:$port"
}

@test "an ACL user" {
	rcli r acl setuser alice on '>s3cret' '~*' '&*' '+@all' >/dev/null
	run -0 dlock -S "redis://alice:s3cret@127.0.0.1:$port" K true
	DLOCK_PASSWORD=s3cret run -0 dlock -S "redis://alice@127.0.0.1:$port" K true
	key_exists r '{dlock:K}:fence'
}

@test "an unknown ACL user: 77" {
	refused -S "redis://bob:s3cret@127.0.0.1:$port"
}

@test "an ACL user without the right to lock (NOPERM): 77" {
	rcli r acl setuser carol on '>s3cret' '~*' '&*' '-@all' '+ping' '+auth' '+hello' '+select' '+client' >/dev/null
	refused -S "redis://carol:s3cret@127.0.0.1:$port"
}

@test "redis://HOST:PORT/3 uses database 3" {
	run -0 dlock -S "redis://:pw0rd@127.0.0.1:$port/3" K sh -c 'REDISCLI_AUTH=pw0rd redis-cli -s "$1" -n 3 exists dlock:K' sh "$(sock r)"
	assert_output 1
	assert_equal "$(rcli r -n 3 --scan | sort)" $'{dlock:K}:fence\n{dlock:K}:history'
	assert_equal "$(all_keys r)" ''
}

@test "unix:PATH?db=3 uses database 3" {
	DLOCK_PASSWORD=pw0rd run -0 dlock -S "unix:$(sock r)?db=3" K sh -c 'REDISCLI_AUTH=pw0rd redis-cli -s "$1" -n 3 exists dlock:K' sh "$(sock r)"
	assert_output 1
	assert_equal "$(rcli r -n 3 --scan | sort)" $'{dlock:K}:fence\n{dlock:K}:history'
	assert_equal "$(all_keys r)" ''
}
