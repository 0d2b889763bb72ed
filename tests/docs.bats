#!/usr/bin/env bats
# docs.bats - every long option in src/cli.c's table appears in --help, the
# man page and the three completions, and --help keeps the table's order.

load helpers

setup() {
	common_setup
	TOP=$BATS_TEST_DIRNAME/..
}

# The long option names of the first `static const struct option` table.
long_options() {
	awk '/static const struct option/ { in_table = 1; next }
	     in_table && /^[[:space:]]*}[[:space:]]*;/ { exit }
	     in_table' "$TOP/src/cli.c" |
		sed -n 's/^[[:space:]]*{[[:space:]]*"\([^"]*\)".*/\1/p'
}

# missing FILE PATTERN-PREFIX: options whose "PREFIX<name>" is not in FILE
# (a name ends where a letter, digit or '-' would continue it).
missing() {
	local file=$1 before=$2 opt bad=()
	[[ -r $file ]] || fail "$file: missing"
	for opt in $(long_options); do
		grep -qE -- "${before}${opt}([^[:alnum:]-]|\$)" "$file" || bad+=("--$opt")
	done
	((${#bad[@]} == 0)) || fail "$file lacks: ${bad[*]}"
}

@test "src/cli.c has an option table" {
	run -0 long_options
	((${#lines[@]} >= 10)) || fail "only ${#lines[@]} long options found: $output"
	assert_line exclusive
	assert_line nonblock
}

@test "--help mentions every long option" {
	dlock --help >"$T/help"
	missing "$T/help" '--'
}

@test "man/dlock.1.scd mentions every long option" {
	missing "$TOP/man/dlock.1.scd" '--'
}

@test "completions/bash/dlock offers every long option" {
	missing "$TOP/completions/bash/dlock" '--'
}

@test "completions/zsh/_dlock offers every long option" {
	missing "$TOP/completions/zsh/_dlock" '--'
}

@test "completions/fish/dlock.fish offers every long option" {
	missing "$TOP/completions/fish/dlock.fish" "(-l|--long-option)[[:space:]=]+['\"]?"
}

@test "--help lists the options in the table's order" {
	local opt line last=0 prev=''
	dlock --help >"$T/help"
	for opt in $(long_options); do	# on the lines that introduce options
		line=$(grep -nE -- "^[[:space:]]*(-[^[:space:]]*[[:space:]]+)*--${opt}([^[:alnum:]-]|\$)" "$T/help" |
			head -1 | cut -d: -f1)
		[[ -n $line ]] || fail "--help lacks --$opt"
		((line >= last)) || fail "--help lists --$opt before --$prev"
		last=$line prev=$opt
	done
}

# The URL schemes src/engine.c's table lists (not those claimed only to be
# refused with a reason), and its stores' titles, as --help shows them.
engine_schemes() {
	grep -o '{ "[^"]*", HOSTS_[A-Z_]*, true }' "$TOP/src/engine.c" | cut -d'"' -f2
}
engine_titles() {
	awk '/^static struct slot slots\[\]/ { in_table = 1; next }
	     in_table && /^};/ { exit }
	     in_table && /^\t\{ "/' "$TOP/src/engine.c" | cut -d'"' -f4
}

@test "--help names every engine's store and schemes, from src/engine.c's table" {
	local scheme title bad=()
	run -0 engine_titles
	assert_equal "${lines[*]}" "Redis PostgreSQL MySQL/MariaDB ZooKeeper etcd"
	run -0 engine_schemes
	((${#lines[@]} >= 14)) || fail "only ${#lines[@]} schemes found: $output"
	refute_line zks://	# refused by its engine, with the reason
	dlock --help >"$T/help"
	for scheme in $(engine_schemes); do
		grep -qF -- "$scheme" "$T/help" || bad+=("$scheme")
	done
	while read -r title; do
		grep -qE "^  $title +[a-z]+:" "$T/help" || bad+=("$title (its URL line)")
		grep -qF -- "$title" <(sed -n '/^Run COMMAND/,/^$/p' "$T/help") ||
			bad+=("$title (what dlock is)")
	done < <(engine_titles)
	((${#bad[@]} == 0)) || fail "--help lacks: ${bad[*]}"
	! grep -q 'in Redis\|Redis server\|Redis key\|Redis password' "$T/help" ||
		fail "--help still speaks of Redis alone: $(grep 'Redis' "$T/help")"
}

@test "the man page's NAME, the README's opening and the man page's URLs name every engine" {
	local scheme title bad=()
	while read -r title; do
		sed -n '/^# NAME/,/^# SYNOPSIS/p' "$TOP/man/dlock.1.scd" | grep -qF -- "$title" ||
			bad+=("NAME: $title")
		sed -n '/^# DESCRIPTION/,/^# OPTIONS/p' "$TOP/man/dlock.1.scd" | grep -qF -- "$title" ||
			bad+=("DESCRIPTION: $title")
		sed -n '2,/^## /p' "$TOP/README.md" | grep -qF -- "$title" ||
			bad+=("README's opening: $title")
	done < <(engine_titles)
	for scheme in $(engine_schemes); do
		grep -qF -- "*$scheme*" "$TOP/man/dlock.1.scd" || bad+=("man: *$scheme*")
	done
	((${#bad[@]} == 0)) || fail "missing: ${bad[*]}"
}

# The man page's table of features by engine (under ENGINES), a line per
# cell: "ENGINE<TAB>ROW<TAB>yes|no", markup gone; a cell that begins with
# "no" is a no, any other a yes (RedLock, ticket queue...).
man_features() {
	sed -E 's/\*//g; s/(^|[^[:alnum:]])_([^_]+)_/\1\2/g' "$TOP/man/dlock.1.scd" |
		awk '/^\[\[ Feature/ { in_table = 1; next }
		     !in_table { next }
		     /^$/ { exit }
		     { text = $0; sub(/^(:\[|[|:])[[:space:]]*/, "", text)
		       sub(/[[:space:]]+$/, "", text) }
		     /^:\[/ { title[++n] = text; next }
		     /^\|/ { row = text; col = 0; next }
		     /^:/ { print title[++col] "\t" row "\t" (text ~ /^no([^[:alnum:]]|$)/ ? "no" : "yes") }'
}

# listed_features FILE: dlock help engines' output in FILE as the same
# lines; an engine whose module is not installed as "ENGINE<TAB>-<TAB>absent".
listed_features() {
	awk '
		/^[^ ]/ { title = $0; sub(/ \(.*/, "", title); next }
		/not installed here/ { print title "\t-\tabsent"; next }
		{ line = substr($0, 3)
		  if (!match(line, /  +(yes|no)(: .*)?$/)) next
		  label = substr(line, 1, RSTART - 1)
		  said = substr(line, RSTART); sub(/^ +/, "", said); sub(/:.*/, "", said)
		  print title "\t" label "\t" said }' "$1"
}

@test "the man page's table of features agrees with dlock help engines, cell by cell" {
	local engine row said cell n=0 bad=() absent=()
	local -A man=() listed=()
	run -0 man_features
	((${#lines[@]} >= 50)) || fail "the man page's table: only ${#lines[@]} cells found"
	while IFS=$'\t' read -r engine row said; do
		man["$engine: $row"]=$said
	done < <(man_features)
	dlock help engines >"$T/engines" || fail "dlock help engines: exit $?: $(cat "$T/engines")"
	listed_features "$T/engines" >"$T/listed"
	while IFS=$'\t' read -r engine row said; do
		if [[ $said == absent ]]; then
			absent+=("$engine")
			continue
		fi
		listed[$engine]=1
		n=$((n + 1))
		cell=${man["$engine: $row"]-}
		if [[ -z $cell ]]; then
			bad+=("$engine, '$row': dlock help engines says $said; the man page's table has no such row or column")
		elif [[ $cell != "$said" ]]; then
			bad+=("$engine, '$row': the man page says $cell, dlock help engines $said")
		fi
	done <"$T/listed"
	((n >= 13)) || fail "dlock help engines: only $n features: $(cat "$T/listed")"
	# every engine of the table is one dlock has
	while IFS=$'\t' read -r engine row said; do
		[[ -n ${listed["$engine"]-} || " ${absent[*]} " == *" $engine "* ]] ||
			bad+=("the man page's column '$engine' is no engine of dlock help engines")
	done < <(man_features)
	((${#bad[@]} == 0)) || fail "$(printf '%s\n' "${bad[@]}" | sort -u)"
	# a build tree builds every module (CI); an installed dlock has those
	# of the packages installed
	if ((${#absent[@]} > 0)); then
		[[ ! -e ${DLOCK%/*}/build.ninja ]] || skip_unless_strict "not built, not compared: ${absent[*]}"
		echo "# not installed, not compared: ${absent[*]}" >&3
	fi
}

@test "EXIT STATUS and README's exit table state one rule for every engine: 64, 69, 70, 77" {
	local rule
	rule=$(sed -n '/^# EXIT STATUS/,/^\[\[/p' "$TOP/man/dlock.1.scd" | tr -s '\n\t' '  ')
	[[ $rule == *"every engine"* ]] || fail "EXIT STATUS states no rule for every engine: $rule"
	[[ $rule == *"64 is a setting to fix"*"database the server says does not exist"*"key the store cannot represent"* ]] ||
		fail "EXIT STATUS: 64 $rule"
	[[ $rule == *"69 is a store that could not be reached or was busy"* ]] || fail "EXIT STATUS: 69 $rule"
	[[ $rule == *"70 is an answer"* && $rule == *"77 is credentials the server refused"* ]] ||
		fail "EXIT STATUS: 70, 77 $rule"
	[[ $rule == *"Each engine's section under *ENGINES* lists"* ]] || fail "EXIT STATUS: per engine $rule"
	rule=$(sed -n '/^## Exit status/,$p' "$TOP/README.md" | tr -s '\n' ' ')
	[[ $rule == *"same on every engine: 64 for a setting to fix, 69 for a store unreachable or busy, 70 for an answer dlock did not expect, 77 for credentials refused"* ]] ||
		fail "README's exit status: $rule"
}

@test "--help and the man page give --node-timeout the same default" {
	dlock --help >"$T/help"
	grep -A1 -- '--node-timeout' "$T/help" | tr -s ' \n' ' ' | grep -q 'default 1, or TTL/3 if that is less' ||
		fail "--help: $(grep -A1 -- '--node-timeout' "$T/help")"
	grep -q 'smaller of 1 and TTL/3' "$TOP/man/dlock.1.scd" ||
		fail "the man page does not say 'the smaller of 1 and TTL/3'"
}

# bash_complete WORD...: what completions/bash/dlock offers for the last WORD
bash_complete() {
	bash -c '
		. /usr/share/bash-completion/bash_completion
		. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_dlock dlock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"' _ "$TOP/completions/bash/dlock" "$@"
}

@test "bash completes --on-lost as TERM, SIGTERM or ignore" {
	[[ -r /usr/share/bash-completion/bash_completion ]] ||
		skip_unless_strict "no bash-completion"
	run -0 bash_complete dlock --on-lost SIGTE
	assert_output SIGTERM
	run -0 bash_complete dlock --on-lost sigte
	assert_output SIGTERM
	run -0 bash_complete dlock --on-lost=SIGTE
	assert_output SIGTERM
	run -0 bash_complete dlock --on-lost TE
	assert_output TERM
	run -0 bash_complete dlock --on-lost ig
	assert_output ignore
}

# on_lost_ok VALUE: dlock takes VALUE for --on-lost (the next option is
# what it refuses, so nothing is run and no server is asked)
on_lost_ok() {
	run -64 --separate-stderr dlock --on-lost "$1" --kill-after soon K true
	[[ $stderr == "dlock: bad --kill-after 'soon'" ]] ||
		fail "--on-lost $1 offered but refused: $stderr"
}

@test "bash offers only the --on-lost values dlock takes" {
	[[ -r /usr/share/bash-completion/bash_completion ]] ||
		skip_unless_strict "no bash-completion"
	local v offered
	run -0 bash_complete dlock --on-lost ST
	assert_output STKFLT	# not STOP
	run -0 bash_complete dlock --on-lost SIGT
	assert_equal "$(sort <<<"$output")" $'SIGTERM\nSIGTRAP'	# not TSTP, TTIN, TTOU
	run -0 bash_complete dlock --on-lost SIGRT
	assert_output ''
	offered=$(bash_complete dlock --on-lost '')
	(($(wc -l <<<"$offered") >= 20)) || fail "only: $offered"
	for v in $offered $(bash_complete dlock --on-lost SIG); do
		on_lost_ok "$v"
	done
}

@test "fish completes --on-lost as TERM, SIGTERM or ignore" {
	command -v fish >/dev/null || skip_unless_strict "no fish"
	fish_complete() {
		HOME=$T fish -c 'source $argv[1]; complete -C"$argv[2]"' \
			"$TOP/completions/fish/dlock.fish" "$1" | cut -f1
	}
	run -0 fish_complete 'dlock --on-lost SIGTE'
	assert_output SIGTERM
	run -0 fish_complete 'dlock --on-lost=SIGTE'
	assert_output --on-lost=SIGTERM
	run -0 fish_complete 'dlock --on-lost TE'
	assert_output TERM
	run -0 fish_complete 'dlock --on-lost ig'
	assert_output ignore
}


# apt_packages FILE: the packages FILE's apt-get install commands name
apt_packages() {
	sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$1" | grep -o 'apt-get install.*' |
		sed 's/^apt-get install//' | tr -s ' \t' '\n' |
		grep -Ev '^$|^-|^>|^[|&;]' | sort -u
}

@test "README's apt-get line installs every package .ci/run does" {
	local missing
	run -0 apt_packages "$TOP/.ci/run"
	((${#lines[@]} >= 20)) || fail "only ${#lines[@]} packages found in .ci/run: $output"
	missing=$(comm -23 <(apt_packages "$TOP/.ci/run") <(apt_packages "$TOP/README.md"))
	[[ -z $missing ]] || fail "README's apt-get line lacks: $(echo $missing)"
}

# Issue 29, 2: the man page lists, in one place next to the Redis text,
# which Redis answers give which exit status; every credential error and
# passing state that src/redis/reply.c sorts is named there.
@test "the man page's Redis section maps Redis's answers to 64, 69, 70 and 77" {
	local section word bad=()
	section=$(awk '/^## Redis$/ { on = 1; next } on && /^#/ { exit } on' "$TOP/man/dlock.1.scd")
	[[ -n $section ]] || fail "no '## Redis' section"
	for word in 64 69 70 77; do
		grep -q "^- \*$word\*, " <<<"$section" || bad+=("$word")
	done
	section=$(tr -s '\n\t ' '   ' <<<"$section")	# words split across lines
	while read -r word; do
		[[ $section == *"$word"* ]] || bad+=("$word")
	done < <(sed -n '/^static bool is_auth_error/,/^}/p; /^static bool is_transient/,/^}/p' \
		"$TOP/src/redis/reply.c" | grep -o '"[A-Z][^"]*"' | tr -d '"' | grep -v '^ERR Error')
	((${#bad[@]} == 0)) || fail "the Redis section lacks: ${bad[*]}"
}

# tests/run against a build whose meson test (a stand-in on PATH) failed
# one point: what that point said, and the count.
@test "tests/run: a failed point's words reach standard output once, before the count" {
	local b=$T/build
	mkdir -p "$T/bin" "$b/meson-logs"
	: >"$b/build.ninja"
	printf '#!/bin/sh\nexit 0\n' >"$T/bin/ninja"
	cat >"$T/bin/meson" <<'EOS'
#!/usr/bin/python3
import json, sys
build = sys.argv[sys.argv.index("-C") + 1]
out = "1..3\nok 1 first\nnot ok 2 second\n# (in test file tests/x.bats, line 9)\n#   `false' failed\nok 3 third\n"
with open(build + "/meson-logs/testlog.json", "w") as f:
    f.write(json.dumps({"name": "x", "result": "FAIL", "stdout": out}) + "\n")
sys.exit(1)
EOS
	chmod +x "$T/bin/ninja" "$T/bin/meson"
	# CI keeps standard output: the words must be there, not on stderr
	PATH=$T/bin:$PATH run -1 --separate-stderr "$TOP/tests/run" "$b"
	assert_equal "$(grep -c 'not ok 2 second' <<<"$output")" 1
	assert_equal "$(grep -c "line 9" <<<"$output")" 1
	assert_equal "${lines[-1]}" "2 passed, 1 failed, 0 skipped"
	[[ $stderr != *'not ok'* ]] || fail "said on stderr: $stderr"
}
