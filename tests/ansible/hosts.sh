# SPDX-License-Identifier: MIT
# Hosts for tests/ansible: Debian 12 root filesystems on this machine, each
# with its own /etc, packages, users, machine id and PostgreSQL, reached by
# Ansible through the community.general.chroot connection. Sourced by
# test_ansible.sh, never run alone.
#
# The debootstrap tree is made once and kept as a tarball in CACHE_DIR
# (default /var/cache/fleetbench-test), with the .deb files apt fetched for
# the hosts, so a second run on the same machine downloads almost nothing.
# shellcheck shell=bash

CACHE_DIR=${CACHE_DIR:-/var/cache/fleetbench-test}
SUITE=bookworm
# What a Debian 12 server image has that the roles rely on: python3 and
# python3-apt for Ansible's modules, sudo for become, systemd and procps
# (systemd-analyze verify resolves the units' targets and commands in the
# tree), and ca-certificates for an https mirror.
BASE_PACKAGES=python3,python3-apt,sudo,systemd,procps,ca-certificates

# debian_mirror: the Debian mirror apt uses here (first non-security
# Debian URI of /etc/apt/sources.list*), else deb.debian.org
debian_mirror() {
	local uri

	uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -v '^[[:space:]]*#' |
		grep -oE 'https?://[^[:space:]]+/debian/?([[:space:]]|$)' |
		head -n 1 | tr -d '[:space:]')
	echo "${uri:-http://deb.debian.org/debian}"
}

# base_tarball: prints the path of the cached tarball of a minimal Debian
# 12 tree, making it first when missing (under a lock: runs in parallel
# make it once)
base_tarball() {
	local mirror key tarball work fd

	mirror=$(debian_mirror)
	key=$(printf '%s %s %s v1' "$SUITE" "$BASE_PACKAGES" "$mirror" |
		sha256sum | cut -c 1-12)
	tarball=$CACHE_DIR/debian-$SUITE-$key.tar
	mkdir -p "$CACHE_DIR" || return 1
	exec {fd}>"$CACHE_DIR/lock"
	flock "$fd"
	if [ ! -f "$tarball" ]; then
		echo "debootstrap $SUITE from $mirror into the cache (once)" >&2
		work=$(mktemp -d "$CACHE_DIR/debootstrap-XXXXXX") &&
			timeout 600 debootstrap --variant=minbase \
				--include="$BASE_PACKAGES" "$SUITE" "$work/root" \
				"$mirror" >"$work/log" 2>&1 &&
			base_configure "$work/root" &&
			tar -C "$work/root" -cf "$work/base.tar" . &&
			rm -f "$CACHE_DIR"/debian-*.tar &&
			mv "$work/base.tar" "$tarball" ||
			echo "debootstrap failed: $(tail -n 5 "$work/log" 2>/dev/null)" >&2
		rm -rf --one-file-system "$work"
	fi
	exec {fd}>&-
	[ -f "$tarball" ] && echo "$tarball"
}

# base_configure ROOT: what an image builder does to a chroot: daemons that
# packages install are not started by their maintainer scripts (the roles
# start what they need), no downloaded .debs are kept
base_configure() {
	printf '#!/bin/sh\n# chroot: maintainer scripts start no daemon\nexit 101\n' \
		>"$1/usr/sbin/policy-rc.d" &&
		chmod 0755 "$1/usr/sbin/policy-rc.d" &&
		rm -f "$1"/var/cache/apt/archives/*.deb
}

# host_new ROOT: a host from the base tarball, with its own machine id,
# the cached .debs, and /proc, a read-only /sys and /dev/shm mounted
host_new() {
	local root=$1

	mkdir -p "$root" &&
		tar -C "$root" -xf "$BASE_TARBALL" &&
		tr -d '-' </proc/sys/kernel/random/uuid >"$root/etc/machine-id" &&
		printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$(hostname)" \
			>"$root/etc/hosts" || return 1
	[ -f /etc/resolv.conf ] && cp /etc/resolv.conf "$root/etc/resolv.conf"
	if compgen -G "$CACHE_DIR/debs/*.deb" >/dev/null; then
		cp "$CACHE_DIR"/debs/*.deb "$root/var/cache/apt/archives/"
	fi
	mount -t proc proc "$root/proc" &&
		mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys" &&
		mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
}

# host_save_debs ROOT: adds the .debs apt fetched for the host to the cache
host_save_debs() {
	mkdir -p "$CACHE_DIR/debs"
	if compgen -G "$1/var/cache/apt/archives/*.deb" >/dev/null; then
		cp -n "$1"/var/cache/apt/archives/*.deb "$CACHE_DIR/debs/"
	fi
}

# pids_in DIR: the processes whose root directory is below DIR
pids_in() {
	find /proc -mindepth 2 -maxdepth 2 -name root -lname "$1/*" \
		2>/dev/null | cut -d / -f 3
}

# hosts_teardown DIR: stops every process running in the hosts under DIR
# (TERM, then KILL after 10 s), unmounts their file systems, and removes
# DIR unless something is still mounted below it (or KEEP_HOSTS=1: to look
# at what the roles made)
hosts_teardown() {
	local dir=$1 pids m

	[ -d "$dir" ] || return 0
	pids=$(pids_in "$dir")
	if [ -n "$pids" ]; then
		# shellcheck disable=SC2086 # a list of pids
		kill -TERM $pids 2>/dev/null
		for _ in $(seq 100); do
			pids=$(pids_in "$dir")
			[ -z "$pids" ] && break
			sleep 0.1
		done
		# shellcheck disable=SC2086
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null && sleep 0.5
	fi
	# deepest first
	for m in $(findmnt -rn -o TARGET | grep -F "$dir/" | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	if findmnt -rn -o TARGET | grep -qF "$dir/"; then
		echo "hosts: still mounted under $dir, not removing it" >&2
		return 1
	fi
	if [ "${KEEP_HOSTS:-0}" = 1 ]; then
		echo "hosts: kept in $dir" >&2
		return 0
	fi
	rm -rf --one-file-system "$dir"
}

# hosts_reap PREFIX: tears down the hosts of earlier runs that were killed
# before their own teardown (their lock is free)
hosts_reap() {
	local d

	for d in "$1"*; do
		[ -f "$d/.lock" ] || continue
		flock -n "$d/.lock" true || continue
		echo "hosts: tearing down $d, left by an earlier run" >&2
		hosts_teardown "$d"
	done
}

# unit_value UNIT KEY: the last KEY= value of a systemd unit file
unit_value() {
	sed -n "s/^$2=//p" "$1" | tail -n 1
}

# unit_exec ROOT UNIT [bg]: runs the unit's ExecStart in the host ROOT as
# systemd would: as its User and Group, with its Environment and UMask,
# from an empty environment. setpriv, env and sh exec in turn, so with bg
# (in the background) unit_pid is the service's own pid.
unit_exec() {
	local root=$1 unit=$2 mode=${3:-fg} file user group umask cmd env=() line

	file=$root/etc/systemd/system/$unit
	user=$(unit_value "$file" User)
	group=$(unit_value "$file" Group)
	umask=$(unit_value "$file" UMask)
	read -r -a cmd <<<"$(unit_value "$file" ExecStart)"
	while IFS= read -r line; do
		env+=("$line")
	done < <(sed -n 's/^Environment=//p' "$file")
	# shellcheck disable=SC2016 # $0 and $@ are the inner shell's
	set -- chroot "$root" setpriv --reuid="${user:-root}" \
		--regid="${group:-${user:-root}}" --init-groups -- env -i \
		PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "${env[@]}" \
		sh -c 'umask "$0" && exec "$@"' "${umask:-0022}" "${cmd[@]}"
	if [ "$mode" = bg ]; then
		"$@" &
		# shellcheck disable=SC2034 # the caller's
		unit_pid=$!
	else
		"$@"
	fi
}
