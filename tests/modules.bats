#!/usr/bin/env bats
# modules.bats - the engines as dlock loads them: `dlock help engines`
# says what each can do, from the engine itself, with the reasons its
# refusals give.

load helpers

@test "dlock help engines: every engine, each thing it can do yes or no" {
	run -0 --separate-stderr dlock help engines
	assert_equal "$stderr" ''
	assert_line --regexp '^Redis \(built in\): redis://, rediss://, unix:, '
	assert_line --regexp '^PostgreSQL \(dlock-postgres\.so\): postgres://, postgresql://$'
	assert_line --regexp '^MySQL/MariaDB \(dlock-mysql\.so\): mysql://, mariadb://$'
	assert_line --regexp '^ZooKeeper \(dlock-zookeeper\.so\): zk://$'	# not zks://
	assert_line --regexp '^etcd \(dlock-etcd\.so\): etcd://, etcds://$'
	# Redis, built in, can do everything but die with its connection
	sed -n '/^Redis/,/^[^ ]/p' <<<"$output" >"$T/redis"
	run -0 grep -c '  yes$' "$T/redis"
	assert_output 12
	run -0 grep 'no' "$T/redis"
	assert_output --regexp '^  held by the connection +no: '
}

@test "dlock help engines gives the reasons the refusals give" {
	[[ -e ${DLOCK%/*}/dlock-mysql.so && -e ${DLOCK%/*}/dlock-postgres.so ]] ||
		skip_unless_strict "no MySQL or PostgreSQL engine built"
	run -0 dlock help engines
	assert_line '  -s                                 no: GET_LOCK has no shared mode'
	assert_line '  history                            no: advisory locks leave no trace to read back'
	run -64 --separate-stderr dlock -S mysql://127.0.0.1:1/x -s K true
	assert_equal "$stderr" 'dlock: MySQL cannot -s (shared locks): GET_LOCK has no shared mode'
	run -64 --separate-stderr dlock -S postgres://127.0.0.1:1/x history K
	assert_equal "$stderr" 'dlock: PostgreSQL cannot dlock history: advisory locks leave no trace to read back'
}

@test "help takes engines and nothing else" {
	run -64 --separate-stderr dlock help engines more
	assert_equal "$stderr" "dlock: help takes no argument (a lock named 'help': dlock run help -- COMMAND)"
	run -64 --separate-stderr dlock help engine
	assert_equal "$stderr" "dlock: help takes no argument (a lock named 'help': dlock run help -- COMMAND)"
}
