#!/usr/bin/env bats
# completion.bats - the bash, zsh and fish completions, driven as the shells
# drive them: subcommand words first, each form's own options (those that
# dlock itself takes for that form, asked of the binary), lock names from
# dlock status on real servers, silence when no server answers.

load helpers

FORMS=(run status history release acquire extend)
WORDS=("${FORMS[@]}" help version)	# offered where a subcommand may come

setup() {
	common_setup
	TOP=$BATS_TEST_DIRNAME/..
	# the completions run `dlock` as typed: this one
	mkdir -p "$T/bin"
	ln -s "$DLOCK" "$T/bin/dlock"
	export PATH=$T/bin:$PATH HOME=$T
	export ZCOMPDUMP=$BATS_FILE_TMPDIR/zcompdump	# made once: complete.zsh
}

need_bash_completion() {
	[[ -r /usr/share/bash-completion/bash_completion ]] ||
		skip_unless_strict "no bash-completion"
}
need_zsh() { command -v zsh >/dev/null || skip_unless_strict "no zsh"; }
need_fish() { command -v fish >/dev/null || skip_unless_strict "no fish"; }

# bash_complete WORD...: what completions/bash/dlock offers for the last
# WORD, one a line (the words as COMP_WORDS would hold them)
bash_complete() {
	bash -c '
		. /usr/share/bash-completion/bash_completion
		. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_dlock dlock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		((${#COMPREPLY[@]} == 0)) || printf "%s\n" "${COMPREPLY[@]}"' \
		_ "$TOP/completions/bash/dlock" "$@"
}

# zsh_complete LINE: what completions/zsh/_dlock offers at the end of LINE
zsh_complete() {
	timeout 20 zsh "$TOP/tests/complete.zsh" "$TOP/completions/zsh" "$1"
}

# fish_complete LINE: what completions/fish/dlock.fish offers at its end.
# Autoloaded, as fish loads it, from a path that holds it first: sourced,
# it would be joined by an installed dlock package's at the first TAB.
fish_complete() {
	fish -c 'set -g fish_complete_path $argv[1] $__fish_data_dir/completions
		complete -C"$argv[2]"' "$TOP/completions/fish" "$1" | cut -f1
}

# The long options of src/cli.c's table.
long_options() {
	awk '/static const struct option/ { in_table = 1; next }
	     in_table && /^[[:space:]]*}[[:space:]]*;/ { exit }
	     in_table' "$TOP/src/cli.c" |
		sed -n 's/^[[:space:]]*{[[:space:]]*"\([^"]*\)".*/--\1/p'
}

# takes FORM: the long options dlock takes in FORM, sorted, as dlock
# itself says: it names an option of another form ("does not apply")
# before anything is contacted. An empty KEY stops it right after the
# options; -c/--command, offered only after KEY, is left out. Asked once
# per file.
takes() {
	local form=$1 opt val word=() cache=$BATS_FILE_TMPDIR/takes.$1
	if [[ ! -e $cache ]]; then
		[[ $form == run ]] || word=("$form")
		for opt in $(long_options); do
			[[ $opt == --command ]] && continue
			val=()
			# (status --watch alone watches every lock until a signal)
			timeout -s INT 5 "$DLOCK" "${word[@]}" "$opt" 2>&1 </dev/null |
				grep -q 'needs an argument' && val=(1)
			dlock "${word[@]}" "$opt" "${val[@]}" '' true 2>&1 </dev/null |
				grep -q 'does not apply' || echo "$opt"
		done | sort >"$cache.new" && mv "$cache.new" "$cache"
	fi
	cat "$cache"
}

# offered LINES...: the long options among LINES, sorted, one a line
long_only() { grep -- '^--.' | sort -u; }

@test "dlock itself tells the forms' options apart (the tests' yardstick)" {
	run -0 takes status
	assert_line --json
	refute_line --ttl
	run -0 takes acquire
	assert_line --export
	refute_line --token
}

@test "bash offers the subcommands as the first argument" {
	need_bash_completion
	run -0 bash_complete dlock ''
	assert_equal "$(sort <<<"$output")" "$(printf '%s\n' "${WORDS[@]}" | sort)"
	run -0 bash_complete dlock st
	assert_output status
	run -0 bash_complete dlock ac
	assert_output acquire
	# after options too: the first word that is no option decides
	run -0 bash_complete dlock -S x st
	assert_output status
	run -0 bash_complete dlock -S x status --js
	assert_output --json
	run -0 bash_complete dlock --server=x -t 5 history -
	assert_line --count
	# after --, status is the run form's KEY
	run -0 bash_complete dlock -n -- status -
	assert_output $'-c\n--command\n--'
	run -0 bash_complete dlock run ''
	assert_output ''
}

@test "each shell offers engines after help, and nothing after that" {
	need_bash_completion
	run -0 bash_complete dlock help ''
	assert_output engines
	run -0 bash_complete dlock -S x help e
	assert_output engines
	run -0 bash_complete dlock help engines ''
	assert_output ''
	if command -v zsh >/dev/null; then
		run -0 zsh_complete 'dlock help '
		assert_output engines
		run zsh_complete 'dlock help engines '
		assert_output ''
	fi
	if command -v fish >/dev/null; then
		run -0 fish_complete 'dlock help '
		assert_output engines
		run -0 fish_complete 'dlock -S x help e'
		assert_output engines
	fi
}

@test "bash offers each form the options dlock takes in it, no others" {
	need_bash_completion
	local form want got
	for form in "${FORMS[@]}"; do
		want=$(takes "$form")
		if [[ $form == run ]]; then
			got=$(bash_complete dlock -- | long_only)
		else
			got=$(bash_complete dlock "$form" -- | long_only)
		fi
		[[ $got == "$want" ]] ||
			fail "$form: offered, not taken: $(comm -13 <(echo "$want") <(echo "$got") | xargs);" \
				"taken, not offered: $(comm -23 <(echo "$want") <(echo "$got") | xargs)"
	done
	run -0 bash_complete dlock run --
	assert_equal "$output" "$(bash_complete dlock --)"
}

@test "bash: options after KEY in the other forms, history -n takes a count" {
	need_bash_completion
	run -0 bash_complete dlock release K --to
	assert_output --token
	run -0 bash_complete dlock acquire K --exp
	assert_output --export
	run -0 bash_complete dlock extend K -- --t
	assert_output ''
	run -0 bash_complete dlock history -
	assert_line -- -n
	assert_line --count
	run -0 bash_complete dlock history -n ''
	assert_output ''
	run -0 bash_complete dlock -
	assert_line -- -n
	refute_line --count
	run -0 bash_complete dlock status --config "$TOP/tests/docs.b"
	assert_output "$TOP/tests/docs.bats"
}

@test "zsh offers the subcommands as the first argument" {
	need_zsh
	run -0 zsh_complete 'dlock '
	assert_equal "$(sort <<<"$output")" "$(printf '%s\n' "${WORDS[@]}" | sort)"
	run -0 zsh_complete 'dlock hi'
	assert_output history
	run -0 zsh_complete 'dlock -S x status --js'
	assert_output --json
	run -0 zsh_complete 'dlock -n -- status -'
	assert_equal "$(sort <<<"$output")" $'--\n--command\n-c'
}

@test "zsh offers each form the options dlock takes in it, no others" {
	need_zsh
	local form want got
	for form in "${FORMS[@]}"; do
		want=$(takes "$form")
		if [[ $form == run ]]; then
			got=$(zsh_complete 'dlock --' | long_only)
		else
			got=$(zsh_complete "dlock $form --" | long_only)
		fi
		[[ $got == "$want" ]] ||
			fail "$form: offered, not taken: $(comm -13 <(echo "$want") <(echo "$got") | xargs);" \
				"taken, not offered: $(comm -23 <(echo "$want") <(echo "$got") | xargs)"
	done
	run -0 zsh_complete 'dlock release K --to'
	assert_output --token
}

@test "fish offers the subcommands as the first argument" {
	need_fish
	run -0 fish_complete 'dlock '
	assert_equal "$(sort <<<"$output")" "$(printf '%s\n' "${WORDS[@]}" | sort)"
	run -0 fish_complete 'dlock rel'
	assert_output release
	run -0 fish_complete 'dlock -S x status --js'
	assert_output --json
	run -0 fish_complete 'dlock run -n status -'	# fish offers no option after --
	assert_equal "$(sort <<<"$output")" $'--\n--command\n-c'
}

@test "fish offers each form the options dlock takes in it, no others" {
	need_fish
	local form want got
	for form in "${FORMS[@]}"; do
		want=$(takes "$form")
		if [[ $form == run ]]; then
			got=$(fish_complete 'dlock --' | long_only)
		else
			got=$(fish_complete "dlock $form --" | long_only)
		fi
		[[ $got == "$want" ]] ||
			fail "$form: offered, not taken: $(comm -13 <(echo "$want") <(echo "$got") | xargs);" \
				"taken, not offered: $(comm -23 <(echo "$want") <(echo "$got") | xargs)"
	done
	run -0 fish_complete 'dlock release K --to'
	assert_output --token
	run -0 fish_complete 'dlock extend K -- --t'
	assert_output ''
}

# Locks for the KEY tests: alpha, "with space" and q"x under the default
# prefix, beta under other:, on server r (URL in $U).
some_locks() {
	start_redis r
	U=$(sock_url r)
	local name
	for name in alpha 'with space' 'q"x'; do
		dlock acquire -S "$U" -t 300 "$name" >/dev/null || fail "acquire $name"
	done
	dlock acquire -S "$U" -t 300 --prefix other: beta >/dev/null || fail "acquire beta"
}

@test "bash completes KEY with the locks dlock status lists" {
	need_bash_completion
	some_locks
	# the servers from the environment, as dlock would find them
	export DLOCK_SERVERS=$U
	run -0 bash_complete dlock release ''
	assert_equal "$(sort <<<"$output")" $'alpha\nq\\"x\nwith\\ space'
	unset DLOCK_SERVERS
	# or from the command line, with its --prefix
	run -0 bash_complete dlock history -S "$U" --prefix other: ''
	assert_output beta
	run -0 bash_complete dlock extend --server="$U" al
	assert_output alpha
	run -0 bash_complete dlock status -S "$U" w
	assert_output 'with\ space'
	# status takes several KEYs, the others one; acquire's is a new name
	run -0 bash_complete dlock status -S "$U" alpha a
	assert_output alpha
	run -0 bash_complete dlock release -S "$U" alpha ''
	assert_output ''
	run -0 bash_complete dlock acquire -S "$U" ''
	assert_output ''
	run -0 bash_complete dlock release -S "$U" -- ''
	assert_line alpha
}

@test "bash offers no lock names, silently and soon, when no server answers" {
	need_bash_completion
	start_redis r
	U=$(sock_url r)
	dlock acquire -S "$U" alpha >/dev/null
	kill -STOP "$(server_pid r)"	# connects, never answers
	local t0 ms
	t0=$(now_ms)
	run -0 --separate-stderr bash_complete dlock release -S "$U" ''
	ms=$(($(now_ms) - t0))
	assert_output ''
	assert_equal "$stderr" ''
	((ms < 5000)) || fail "took $ms ms"
	kill -CONT "$(server_pid r)"
	run -0 --separate-stderr bash_complete dlock release -S "unix:$T/nowhere" ''
	assert_output ''
	assert_equal "$stderr" ''
}

@test "zsh completes KEY with the locks dlock status lists" {
	need_zsh
	some_locks
	run -0 zsh_complete "dlock release -S $U "
	assert_equal "$(sort <<<"$output")" $'alpha\nq\\"x\nwith\\ space'
	run -0 zsh_complete "dlock history -S $U --prefix other: "
	assert_output beta
	# one KEY only: then zsh offers the options that may still follow
	run -0 zsh_complete "dlock release -S $U alpha "
	refute_line alpha
	assert_line --token
}

@test "fish completes KEY with the locks dlock status lists" {
	need_fish
	some_locks
	run -0 fish_complete "dlock release -S $U "
	assert_equal "$(sort <<<"$output")" $'alpha\nq"x\nwith space'
	run -0 fish_complete "dlock history -S $U --prefix other: "
	assert_output beta
	run -0 fish_complete "dlock release -S $U alpha "
	assert_output ''
}

@test "-k: each shell takes a lock name after it, then the command" {
	need_bash_completion
	run -0 bash_complete dlock -k A -k B ech
	assert_line echo
	run -0 bash_complete dlock -n -k A -
	assert_line --key
	assert_line --nonblock
	if command -v zsh >/dev/null; then
		run -0 zsh_complete 'dlock -k A -k B ech'
		assert_line echo
	fi
	if command -v fish >/dev/null; then
		run -0 fish_complete 'dlock -k A -k B --'
		assert_line --nonblock
		# after -k's value and the command word: the command's, not ours
		run -0 fish_complete 'dlock -k A -k B echo --'
		refute_line --nonblock
	fi
}
