#!/usr/bin/env bash
# make image: builds localhost/pyscheduler:<version> (and :latest) from the Containerfile with
# podman, on a machine that reaches no container registry (docs/image.md).
#
# 1. The base layer, made from Debian packages with mmdebstrap (bookworm, minbase, python3 and
#    ca-certificates; no docs, man pages or locales): one image serves as the runtime base and as
#    the builder's (the Containerfile's builder stage adds gcc and python3-venv from Debian). Its
#    tarball is kept in ~/.cache/pyscheduler/image/ (outside the checkout, like the Kubernetes
#    test binaries) and imported into podman when podman does not have it; it is made again only
#    when its recipe below changes, or with PYSCHEDULER_IMAGE_NEW_BASE=1 (Debian's updates).
# 2. podman build --format docker (the HEALTHCHECK is Docker's), with the host's Rust toolchain
#    mounted at /opt/rust (Debian's rustc is too old), and build volumes that keep cargo's
#    registry and target directory and pip's cache in ~/.cache/pyscheduler/image/ across builds,
#    the host's CA bundle for pip and cargo, and the host's network (PyPI, crates.io, Debian).
#    podman's own layer cache skips what did not change.
#
# podman runs with tools/image/containers.conf (CONTAINERS_CONF): runc, cgroupfs, explicit
# ulimits. SOURCE_DATE_EPOCH (default: the last commit's time) dates the wheels and byte-code.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${PYSCHEDULER_IMAGE_CACHE:-$HOME/.cache/pyscheduler/image}
export CONTAINERS_CONF="$root/tools/image/containers.conf"
repository=localhost/pyscheduler
started=$SECONDS

say() { printf '[make image %4ds] %s\n' $((SECONDS - started)) "$*"; }
need() {
	command -v "$1" >/dev/null || { echo "make image: no $1 on PATH: $2" >&2; exit 1; }
}
# podman, mmdebstrap and runc (crun, podman's default here, fails on hybrid cgroups) from Debian
# when missing: a fresh machine's `make test` installs them as it installs Chromium. apt-get as
# root (else through sudo), waiting up to 10 minutes for another apt or dpkg holding the lock.
missing=()
for tool in podman mmdebstrap runc; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing from Debian: ${missing[*]}"
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	apt_get() { DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 -qq "$@"; }
	apt_get install -y --no-install-recommends "${missing[@]}" >/dev/null \
		|| { apt_get update >/dev/null && apt_get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
fi
need podman "apt-get install podman"
need mmdebstrap "apt-get install mmdebstrap"
need runc "apt-get install runc"
need rustc "install Rust with rustup (https://rustup.rs), as make build needs"

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' "$root/Cargo.toml")
[ -n "$version" ] || { echo "make image: no [workspace.package] version in Cargo.toml" >&2; exit 1; }
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 315532800)}
mkdir -p "$cache/cargo-registry" "$cache/cargo-target" "$cache/pip"

# -- 1. the base ---------------------------------------------------------------------------------
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
base_recipe=(
	--variant=minbase --include=python3,ca-certificates
	--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
	--dpkgopt='path-exclude=/usr/share/locale/*'
	--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/*.log'
	bookworm
)
sources=("deb $mirror bookworm main" "deb $mirror bookworm-updates main" "deb $security bookworm-security main")
base_key=$(printf '%s\n' "${base_recipe[@]}" "${sources[@]}" | sha256sum | cut -c1-12)
base=localhost/pyscheduler-base:bookworm-$base_key
base_tar=$cache/base-bookworm-$base_key.tar
if [ "${PYSCHEDULER_IMAGE_NEW_BASE:-0}" = 1 ]; then
	rm -f "$base_tar"
	# Untagged, not removed: the layers of earlier builds still stand on it (podman image prune).
	podman untag "$base" >/dev/null 2>&1 || true
fi
if podman image exists "$base"; then
	say "base: $base (kept by podman)"
else
	if [ -f "$base_tar" ]; then
		say "base: importing $base_tar"
	else
		say "base: making it from Debian packages with mmdebstrap (about 1 min; once per recipe)"
		# The base's files dated by the epoch (reproducible tarball); written aside, then renamed,
		# so that an interrupted run leaves no half tarball behind.
		# mmdebstrap's phases on standard error are the progress; its hooks' apt chatter on standard
		# output is dropped.
		SOURCE_DATE_EPOCH=$epoch mmdebstrap --format=tar "${base_recipe[@]}" "$base_tar.part" \
			"${sources[@]}" >/dev/null
		mv "$base_tar.part" "$base_tar"
	fi
	# An imported tarball has no configuration: the PATH and locale a Debian image has.
	podman import --quiet \
		--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' \
		--message "pyscheduler image base: mmdebstrap ${base_recipe[*]}" \
		"$base_tar" "$base" >/dev/null
	say "base: $base ($(du -m "$base_tar" | cut -f1) MB)"
fi

# -- 2. the image --------------------------------------------------------------------------------
toolchain=$(readlink -f "$(rustc --print sysroot)")
[ -x "$toolchain/bin/cargo" ] || { echo "make image: no cargo in $toolchain (rustc --print sysroot)" >&2; exit 1; }
volumes=(
	--volume "$toolchain:/opt/rust:ro"
	--volume "$cache/cargo-registry:/root/.cargo/registry"
	--volume "$cache/cargo-target:/build/target"
	--volume "$cache/pip:/root/.cache/pip"
)
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
	volumes+=(--volume /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
fi
build=(
	podman build --format docker --layers --pull=never --network host
	--build-arg BUILDER_IMAGE="$base" --build-arg RUNTIME_IMAGE="$base"
	--build-arg SOURCE_DATE_EPOCH="$epoch" --build-arg VERSION="$version"
	--file "$root/Containerfile"
)
previous=$(podman image inspect --format '{{.Id}}' "$repository:$version" 2>/dev/null || true)
# Two passes, because a build volume is mounted into every RUN of every stage and leaves its
# mount point (an empty /opt/rust, /build/target, ...) in the layer: the builder stage with the
# volumes, then the whole file without them, where the builder's layers come from the cache
# (its key is the instructions and arguments, not the volumes) and the runtime stage gets none.
say "image: the builder stage (Rust $("$toolchain/bin/rustc" --version | cut -d' ' -f2); cold: about 1.5 min," \
	"gcc from Debian, the pinned wheels, the extension's release build; warm: seconds)"
"${build[@]}" --target builder "${volumes[@]}" "$root"
say "image: the runtime stage"
"${build[@]}" --tag "$repository:$version" --tag "$repository:latest" "$root"
current=$(podman image inspect --format '{{.Id}}' "$repository:$version")
# The image this build replaced, now untagged: removed (kept when a container still uses it).
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then
	podman image rm "$previous" >/dev/null 2>&1 || true
fi
size=$(podman image inspect --format '{{.Size}}' "$repository:$version")
say "done: $repository:$version and :latest, $((size / 1000000)) MB"
