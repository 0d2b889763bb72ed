#!/usr/bin/env bats
# mysql_fresh.bats - the MySQL engine on a MariaDB 10.11 as a new user
# meets it: mariadb-install-db's defaults (the test database and its
# anonymous accounts, ''@localhost among them), no TLS set up, the
# performance schema on. The README's MySQL set-up and examples run as
# written; tls= is refused where the server offers no TLS.

load helpers
load mysql_helpers

setup_file() {
	command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null ||
		skip "no mariadb-server here"
	export MY_NO_TLS=1 MY_FRESH=1
	export MY_CNF_EXTRA='performance_schema=ON
performance-schema-instrument=wait/lock/metadata/sql/mdl=ON'
	my_start_server || { my_stop_server; false; }
}

teardown_file() { my_stop_server; }

setup() { my_setup; }
teardown() { stop_all; }

# readme_block WORD: the code block of the README's "### MySQL and
# MariaDB" whose first line starts with WORD, unindented
readme_block() {
	awk -v first="$1" '
		/^### / { inside = $0 == "### MySQL and MariaDB"; next }
		!inside { next }
		/^    / {
			line = substr($0, 5)
			if (!inblock) { inblock = 1; take = index(line, first) == 1 }
			if (take) print line
			next
		}
		{ inblock = 0; if (take) exit }
	' "$BATS_TEST_DIRNAME/../README.md"
}

@test "tls= where the server offers no TLS: 69 in one line, in every mode, the login never sent" {
	local mode
	[[ $(my "SELECT @@have_ssl") == DISABLED ]] || fail "the server has TLS: $(my "SELECT @@have_ssl")"
	for mode in required verify-ca verify-full; do
		run -69 --separate-stderr dlock -S "$U?tls=$mode" -n K touch "$T/ran"
		assert_equal "$stderr" "dlock: K: mysql://127.0.0.1:$MY_PORT: the server offers no TLS (tls= in the URL): refused before logging in"
	done
	[[ ! -e $T/ran ]] || fail "a command ran"
	run -0 dlock -S "$U" K true
	nothing_left
}

@test "the anonymous account, left in place, takes a socket login of 'dl'@'%': 77 naming it" {
	[[ $(my "SELECT COUNT(*) FROM mysql.user WHERE User = '' AND Host = 'localhost'") == 1 ]] ||
		fail "no anonymous account: not mariadb-install-db's defaults"
	run -77 --separate-stderr dlock -S "mysql://dl:secret@localhost/dlock?socket=$MY_DIR/sock" K true
	assert_equal "$stderr" "dlock: K: mysql://localhost?socket=$MY_DIR/sock: access denied for user 'dl'@'localhost' (using password: YES)"
}

@test "README: its MySQL set-up, on a fresh install with anonymous accounts, and its examples, as written" {
	local setup mycnf cmds sql
	setup=$(readme_block CREATE)
	mycnf=$(readme_block '[client]')
	cmds=$(readme_block 'dlock ')
	sql=$(readme_block SELECT)
	[[ $setup && $mycnf && $cmds && $sql ]] || fail "README's MySQL blocks: [$setup] [$mycnf] [$cmds] [$sql]"
	[[ $(my "SELECT COUNT(*) FROM mysql.user WHERE User = '' AND Host = 'localhost'") == 1 ]] ||
		fail "no anonymous account: not mariadb-install-db's defaults"
	mariadb -S "$MY_DIR/sock" -uroot <<<"$setup" || fail "the set-up does not run"
	# the cron user's home: the README's ~/.my.cnf, and where this
	# server's socket is (the default one is elsewhere)
	mkdir "$T/home"
	printf '%s\nsocket = %s\n' "$mycnf" "$MY_DIR/sock" >"$T/home/.my.cnf"
	chmod 600 "$T/home/.my.cnf"
	cat >"$T/home/sync-mirror.sh" <<EOF
#!/bin/sh
echo "\$DLOCK_FENCE" >"$T/fence"
touch "$T/ready"
while [ ! -e "$T/go" ]; do sleep 0.02; done
EOF
	chmod +x "$T/home/sync-mirror.sh"
	export PATH=${DLOCK%/*}:$PATH	# the README says dlock
	# the first line takes the lock and runs the job in the background
	(cd "$T/home" && HOME=$T/home exec bash -c "$(sed -n 1p <<<"$cmds")") 3>&- &
	local job=$!
	track $job
	wait_until 10 test -e "$T/ready" || { wait $job; fail "the job did not start: status $?"; }
	local fence; fence=$(cat "$T/fence")
	[[ $fence =~ ^[1-9][0-9]*$ ]] || fail "fence '$fence'"
	# the lines after it, while it runs
	run -0 --separate-stderr env HOME="$T/home" bash -c "cd '$T/home' && $(sed -n '2,$p' <<<"$cmds")"
	assert_line --index 0 "sync-mirror: held, exclusive, fencing counter $fence"
	run -0 mariadb -S "$MY_DIR/sock" -uroot -N -B app <<<"$sql"
	local id
	id=$(my "SELECT IS_USED_LOCK('dlock:sync-mirror')")
	[[ $id =~ ^[0-9]+$ ]] || fail "not held: $id"
	assert_line --index 0 "$id"
	assert_line --index 1 $'dlock:sync-mirror\t'"$id"$'\tcron'
	touch "$T/go"
	wait $job || fail "the README's dlock line exited $?"
	nothing_left dlock:sync-mirror
	[[ $(conns_of cron) == 0 ]] || fail "cron's connection left"
}
