#!/usr/bin/env zsh
# complete.zsh DIR LINE: the matches zsh's completion system (with DIR first
# in fpath) offers for the last word of LINE, one a line. Completion widgets
# need zle, so this drives an interactive zsh on a pty (zsh/zpty) and
# captures what the completion functions hand to compadd. ZCOMPDUMP names
# compinit's dump file, made on the first run and trusted after (compinit
# scanning fpath costs a second each time).
zmodload zsh/zpty || exit 3
local dir=$1 line=$2 init=${TMPDIR:-/tmp}/complete.zsh.$$ out
cat >$init <<INIT
PROMPT=
fpath=(${(q)dir} \$fpath)
autoload -Uz compinit
if [[ -n \$ZCOMPDUMP && -s \$ZCOMPDUMP ]]; then
	compinit -C -d \$ZCOMPDUMP
elif [[ -n \$ZCOMPDUMP ]]; then
	compinit -u -d \$ZCOMPDUMP
else
	compinit -u -D
fi
bindkey '^I' complete-word
zstyle ':completion:*' insert-tab false
comppostfuncs=(__done)
__done() { print -r -- DONE; exit }
compadd() {
	# internal calls that only gather (-O, -A, -D) pass through
	if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then
		builtin compadd "\$@"
		return
	fi
	local -a __hits
	builtin compadd -A __hits "\$@"
	(( \$#__hits )) && print -rl -- MATCH:\${^__hits}
	builtin compadd "\$@"
}
print -r -- READY
INIT
zpty z zsh -f -i
zpty -w z ". ${(q)init}"
until [[ $out == *READY* ]]; do zpty -r z out || exit 4; done
zpty -w -n z "$line"$'\t'
while zpty -r z out; do
	out=${out%$'\r\n'}; out=${out%$'\n'}; out=${out%$'\r'}
	[[ $out == *MATCH:* ]] && print -r -- ${out##*MATCH:}
	[[ $out == *DONE* ]] && break
done
zpty -d z
rm -f $init
