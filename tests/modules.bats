#!/usr/bin/env bats
# modules.bats - the engines as dlock loads them: `dlock help engines`
# says what each can do, from the engine itself, with the reasons its
# refusals give; a module of another build (another engine ABI) is refused
# (64), naming it and both numbers, before anything in it is used.

load helpers

# A module built beside this dlock, and a URL of its engine that nothing
# listens on (port 1).
module_and_url() {
	local dir=${DLOCK%/*} m
	for m in etcd:etcd://127.0.0.1:1 zookeeper:zk://127.0.0.1:1 \
		postgres:postgres://127.0.0.1:1/x mysql:mysql://127.0.0.1:1/x; do
		[[ -e $dir/dlock-${m%%:*}.so ]] && { echo "dlock-${m%%:*}.so ${m#*:}"; return 0; }
	done
	return 1
}

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

@test "a module of another engine ABI is refused (64), naming it and both numbers" {
	local mod url ours theirs
	command -v objcopy >/dev/null || skip_unless_strict "no objcopy (binutils)"
	read -r mod url < <(module_and_url) || skip_unless_strict "no engine module built beside $DLOCK"
	# a copy of dlock finds the module beside it first
	mkdir -p "$T/bin"
	cp "$DLOCK" "$T/bin/dlock"
	cp "${DLOCK%/*}/$mod" "$T/bin/$mod"
	objcopy --dump-section .dlock_abi="$T/abi" "$T/bin/$mod"
	ours=$(od -An -tu4 -N4 "$T/abi" | tr -d ' ')
	[[ $ours =~ ^[0-9]+$ ]] || fail "$mod: no ABI number in .dlock_abi: '$ours'"
	# this build's module is used: nothing answers there (69)
	run -69 "$T/bin/dlock" -S "$url" -n K touch "$T/ran"
	# the same module with another number: refused before it is used
	# another number over the first 4 bytes (ASan pads the section)
	cp "$T/abi" "$T/stale"
	printf '\x2a\x10\x00\x00' | dd of="$T/stale" bs=1 count=4 conv=notrunc status=none
	theirs=$(od -An -tu4 -N4 "$T/stale" | tr -d ' ')	# 4138 little-endian
	objcopy --update-section .dlock_abi="$T/stale" "$T/bin/$mod"
	run -64 --separate-stderr "$T/bin/dlock" -S "$url" -n K touch "$T/ran"
	assert_equal "$output" ''
	assert_regex "$stderr" "^dlock: .*: $T/bin/$mod is a module of engine ABI $theirs, this dlock's is $ours: a module of another build"
	((${#stderr_lines[@]} == 1)) || fail "more than one line: $stderr"
	[[ ! -e $T/ran ]] || fail "the command ran"
	run -64 "$T/bin/dlock" help engines
	assert_line "  refused: $T/bin/$mod is a module of engine ABI $theirs, this dlock's is $ours: a module of another build (install this dlock's)"
	assert_line '  -s                                 yes'	# the others are listed
}
