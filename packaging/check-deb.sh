#!/bin/bash
# check-deb.sh DEB: the .deb puts things where Debian's tools look for them.
#
# Always (any user): the zsh completion lands in a directory of the system
# zsh's default $fpath, the bash and fish ones where bash-completion and
# fish load completions from.
#
# As root, and only when no dlock package is installed: installs DEB with
# dpkg -i, then checks that an interactive zsh with compinit knows _dlock
# for dlock, that bash-completion loads dlock's completion, that fish
# completes dlock's options, that man finds dlock(1) and that the binary
# runs; then removes the package again (also on failure).
set -euo pipefail
die() { echo "check-deb.sh: $*" >&2; exit 1; }
(($# == 1)) && [[ -f $1 ]] || die "usage: check-deb.sh DEB"
deb=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/dlock-checkdeb.XXXXXX")
installed=0
cleanup() {
	((installed)) && "$here"/dpkg-wait -r dlock >/dev/null 2>&1
	rm -rf "$W"
}
trap cleanup EXIT

files=$(dpkg-deb --contents "$deb" | awk '{ print substr($6, 2) }')
has() { grep -qx -- "$1" <<<"$files" || die "$deb lacks $1"; }

# zsh: a directory of the default $fpath (no rc files read).
zsh_dir=$(grep '/_dlock$' <<<"$files" | head -n 1) || die "$deb has no _dlock"
zsh_dir=${zsh_dir%/_dlock}
command -v zsh >/dev/null || die "no zsh to check the completion against"
zsh -fc 'print -rl -- $fpath' | grep -qx -- "$zsh_dir" ||
	die "_dlock is in $zsh_dir, which is not in zsh's \$fpath: $(zsh -fc 'print -- $fpath')"
has /usr/share/bash-completion/completions/dlock
has /usr/share/fish/vendor_completions.d/dlock.fish
has /usr/share/man/man1/dlock.1.gz
has /usr/bin/dlock
echo "check-deb.sh: $zsh_dir/_dlock is in zsh's \$fpath"

if ((EUID != 0)); then
	echo "check-deb.sh: not root: the package was not installed"
	exit 0
fi
! dpkg -s dlock >/dev/null 2>&1 ||
	die "a dlock package is installed already: not replacing it"
"$here"/dpkg-wait -i "$deb" >"$W/dpkg.log" 2>&1 || { cat "$W/dpkg.log" >&2; die "dpkg -i failed"; }
installed=1

# An interactive zsh, as a user's shell starts, with compinit: its own
# ZDOTDIR, so that no .zshrc of ours and no zsh-newuser-install interferes.
: >"$W/.zshrc"
got=$(ZDOTDIR=$W HOME=$W zsh -ic 'autoload -Uz compinit; compinit -u -d "$ZDOTDIR/.zcompdump"; print -r -- ${_comps[dlock]-none}' </dev/null 2>&1)
[[ $got == _dlock ]] || die "zsh -i with compinit: dlock completes with '$got', not _dlock"
got=$(bash -c '. /usr/share/bash-completion/bash_completion; _completion_loader dlock; complete -p dlock' 2>&1)
[[ $got == *"-F _dlock dlock" ]] || die "bash-completion: '$got'"
if command -v fish >/dev/null; then
	got=$(HOME=$W fish -c 'complete -C "dlock --nonbl"' 2>&1)
	[[ $got == --nonblock* ]] || die "fish: 'dlock --nonbl' completes to '$got'"
fi
if command -v man >/dev/null; then
	man -w dlock >/dev/null 2>&1 || die "man does not find dlock(1)"
fi
/usr/bin/dlock --version >/dev/null || die "/usr/bin/dlock --version failed"
echo "check-deb.sh: installed, zsh, bash and fish complete dlock, man finds it; removed again"
