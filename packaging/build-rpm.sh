#!/bin/bash
# build-rpm.sh [OUTDIR [TARBALL]]: build dlock's RPM from the `meson dist`
# tarball with packaging/rpm/dlock.spec.
#
# TARBALL defaults to a fresh `meson dist` of the checkout's HEAD (meson
# dist packs what is committed, not the work tree), made in a temp build
# dir. The binary and source RPMs and the build log land in OUTDIR (default:
# a new /tmp/dlock-rpm.XXXXXX), whose path is printed last. rpmbuild runs
# the spec's %check (the unit tests); the binary RPM is then unpacked and
# its dlock run, and the man page and the three completions must be in it.
#
# On Debian (rpm, the package, provides rpmbuild): the spec's BuildRequires
# are RPM names that no RPM database here knows, so rpmbuild gets --nodeps
# and the same things are checked, and installed as root, as Debian
# packages; the %meson macros that Fedora's meson ships come from
# packaging/rpm/macros.meson. (`file` is for rpm's brp-strip, which strips
# the binary: without it, it silently strips nothing.)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SPEC=$ROOT/packaging/rpm/dlock.spec
die() { echo "build-rpm.sh: $*" >&2; exit 1; }
[[ -f $ROOT/meson.build && -f $SPEC ]] || die "run from a dlock tree"

OUT=${1:-}
TARBALL=${2:-}
[[ -z $TARBALL ]] || TARBALL=$(realpath -e -- "$TARBALL") || die "no tarball $2"
W=$(mktemp -d "${TMPDIR:-/tmp}/dlock-rpmbuild.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# What the spec's BuildRequires name, as commands and pkg-config modules,
# with the Debian package that has each.
need=()
for pair in rpmbuild:rpm meson:meson ninja:ninja-build pkg-config:pkg-config \
	gcc:gcc scdoc:scdoc rpm2cpio:rpm2cpio cpio:cpio file:file; do
	command -v "${pair%%:*}" >/dev/null || need+=("${pair#*:}")
done
if command -v pkg-config >/dev/null; then
	pkg-config --exists hiredis || need+=(libhiredis-dev)
	pkg-config --exists libbsd || need+=(libbsd-dev)
	pkg-config --exists openssl || need+=(libssl-dev)
fi
if ((${#need[@]})); then
	((EUID == 0)) && command -v apt-get >/dev/null ||
		die "missing: ${need[*]} (install them, or run as root on Debian)"
	apt-get update -qq || die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${need[@]}" >/dev/null || die "apt-get install ${need[*]} failed"
fi

if [[ -z $TARBALL ]]; then
	git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
		die "not a git checkout: give the meson dist tarball as TARBALL"
	meson setup "$W/dist-build" "$ROOT" >"$W/dist.log" 2>&1 &&
		meson dist -C "$W/dist-build" --no-tests --allow-dirty >>"$W/dist.log" 2>&1 ||
		{ cat "$W/dist.log" >&2; die "meson dist failed"; }
	TARBALL=$(echo "$W"/dist-build/meson-dist/dlock-*.tar.xz)
	[[ -f $TARBALL ]] || die "meson dist made no dlock-*.tar.xz"
fi

# The spec's Version is kept by hand: it must be the tarball's.
version=$(rpmspec -q --srpm --qf '%{version}' "$SPEC" 2>/dev/null) ||
	version=$(sed -n 's/^Version:[[:space:]]*//p' "$SPEC")
[[ $(basename "$TARBALL") == "dlock-$version.tar.xz" ]] ||
	die "$SPEC is version $version, the tarball is $(basename "$TARBALL")"

mkdir -p "$W/SOURCES"
cp "$TARBALL" "$W/SOURCES/"
args=(--define "_topdir $W")
rpm -q --quiet --whatprovides 'pkgconfig(hiredis)' 2>/dev/null || args+=(--nodeps)
[[ -n $(rpm --eval '%{?meson:1}') ]] || args+=(--load "$ROOT/packaging/rpm/macros.meson")
# Debian's brp-compress, which gzips the man page, is bash run by /bin/sh
# (dash fails on its `read -d ''`): give it bash.
sh -c "read -r -d '' x </dev/null" 2>/dev/null ||
	args+=(--define "__brp_compress bash %{_rpmconfigdir}/brp-compress %{?_prefix}")
rpmbuild -ba "${args[@]}" "$SPEC" >"$W/build.log" 2>&1 || {
	tail -n 40 "$W/build.log" >&2
	die "rpmbuild failed (last 40 lines above)"
}

[[ $OUT ]] || OUT=$(mktemp -d "${TMPDIR:-/tmp}/dlock-rpm.XXXXXX")
mkdir -p "$OUT"
shopt -s nullglob
rpms=("$W"/RPMS/*/dlock-"$version"-*.rpm)	# not -debuginfo-, -debugsource-
((${#rpms[@]} == 1)) || die "rpmbuild made ${#rpms[@]} binary dlock RPMs, not 1"
rpm=$OUT/$(basename "${rpms[0]}")
mv "$W"/RPMS/*/*.rpm "$W"/SRPMS/*.rpm "$OUT"/
mv "$W/build.log" "$OUT/dlock-${version}_rpmbuild.log"

files=$(rpm -qlp "$rpm")
for f in /usr/bin/dlock '/usr/share/man/man1/dlock\.1(\.[a-z0-9]+)?' \
	/usr/share/bash-completion/completions/dlock \
	/usr/share/zsh/site-functions/_dlock \
	/usr/share/fish/vendor_completions.d/dlock.fish; do
	grep -qxE -- "$f" <<<"$files" || die "$rpm lacks $f"
done
mkdir "$W/root"
(cd "$W/root" && rpm2cpio "$rpm" | cpio -id --quiet) || die "cannot unpack $rpm"
got=$("$W/root/usr/bin/dlock" --version) || die "the RPM's dlock --version failed"
[[ $got == *"$version"* ]] || die "the RPM's dlock says '$got', not $version"

for f in "$OUT"/*.rpm; do
	echo "== $f"
	rpm -qlp "$f" | sed 's/^/   /'
done
echo "$OUT"
