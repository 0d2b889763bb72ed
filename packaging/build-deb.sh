#!/bin/bash
# build-deb.sh [OUTDIR]: build dlock's .deb from a copy of the source tree.
#
# The tree (tracked and untracked files, less what .gitignore ignores; all
# of it but .git and build dirs outside a git checkout) is copied to a temp
# dir, packaging/debian becomes debian/ there, and `dpkg-buildpackage -us
# -uc -b` runs in the copy, so the work tree gets no debian/, no obj-*/
# and no ../*.deb.  The .deb, .buildinfo and .changes land in OUTDIR
# (default: a new /tmp/dlock-deb.XXXXXX) with the build log, and the
# directory's path is printed last.
#
# Missing tools (dpkg-dev, debhelper) and build dependencies are installed
# with apt-get when running as root; otherwise the script says what to
# install.  DEB_BUILD_OPTIONS passes through (nocheck skips the unit tests).
#
# debian/source/format is 3.0 (quilt), not native: the Debian revision (-1)
# is only allowed there, and the upstream tarball has no debian/ of its own.
# A source upload would need ../dlock_VERSION.orig.tar.xz, e.g. from
# `meson dist` renamed; a binary build (-b) does not.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "build-deb.sh: $*" >&2; exit 1; }
[[ -f $ROOT/meson.build && -d $ROOT/packaging/debian ]] || die "run from a dlock tree"

OUT=${1:-}
W=$(mktemp -d "${TMPDIR:-/tmp}/dlock-debbuild.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

APT_UPDATED=0
apt_install() {	# apt_install PKG...: as root only
	((EUID == 0)) || die "missing: $* (install them, or run as root)"
	if ((!APT_UPDATED)); then
		apt-get update -qq || die "apt-get update failed"
		APT_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
		|| die "apt-get install $* failed"
}

need=()
command -v dpkg-buildpackage >/dev/null || need+=(dpkg-dev)
command -v dh >/dev/null || need+=(debhelper)
command -v gcc >/dev/null || need+=(build-essential)
((${#need[@]} == 0)) || apt_install "${need[@]}"

version=$(dpkg-parsechangelog -l "$ROOT/packaging/debian/changelog" -S Version)
# The changelog's version is kept by hand: it must be meson.build's.
upstream=$(sed -n "s/^[[:space:]]*version:[[:space:]]*'\([^']*\)'.*/\1/p" "$ROOT/meson.build" | head -n 1)
[[ ${version%-*} == "$upstream" ]] ||
	die "packaging/debian/changelog is at $version, meson.build at $upstream"
src=$W/dlock-${version%-*}
mkdir -p "$src"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
		tar --null -T - -cf -) | tar -xf - -C "$src"
else
	tar -C "$ROOT" --exclude=.git --exclude='./build*' --exclude='./obj-*' \
		--exclude=./debian -cf - . | tar -xf - -C "$src"
fi
rm -rf "$src/debian"
cp -a "$ROOT/packaging/debian" "$src/debian"

# Build dependencies from debian/control; apt-get reads an unpacked tree.
if ! (cd "$src" && dpkg-checkbuilddeps) 2>"$W/deps"; then
	if ((EUID == 0)); then
		if ((!APT_UPDATED)); then apt-get update -qq; APT_UPDATED=1; fi
		DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq \
			--no-install-recommends "$src" || die "apt-get build-dep failed"
	else
		die "$(sed 's/^dpkg-checkbuilddeps: error: //' "$W/deps")"
	fi
fi

(cd "$src" && dpkg-buildpackage -us -uc -b) >"$W/build.log" 2>&1 || {
	tail -n 40 "$W/build.log" >&2
	die "dpkg-buildpackage failed (last 40 lines above)"
}

[[ $OUT ]] || OUT=$(mktemp -d "${TMPDIR:-/tmp}/dlock-deb.XXXXXX")
mkdir -p "$OUT"
shopt -s nullglob
files=("$W"/*.deb "$W"/*.ddeb "$W"/*.buildinfo "$W"/*.changes)
((${#files[@]})) || die "dpkg-buildpackage made no .deb"
mv "${files[@]}" "$OUT"/
mv "$W/build.log" "$OUT/dlock_${version}_build.log"
for f in "$OUT"/*.deb; do
	echo "== $f"
	dpkg-deb --contents "$f" | sed -E 's/^([^ ]+ +){5}/   /'
done
echo "$OUT"
