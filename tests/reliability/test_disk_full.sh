#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 7 of docs/reliability.md: the disk under the spool fills up. The
# spool is a 256 KiB tmpfs mounted in a private mount namespace (the test
# runs itself again under `unshare -m`); five reports are spooled, then a
# file fills the rest. A run then fails with a message naming the full
# disk, twice (no room at all; 8 KiB left, less than a report), and the
# five reports are still there byte for byte, then delivered.
#
# Needs root (CAP_SYS_ADMIN) for the namespace and the mount: skipped
# otherwise, with the reason.
set -uo pipefail

if [ -z "${FLEETBENCH_MOUNT_NS:-}" ]; then
	if ! why=$(unshare -m true 2>&1); then
		echo "skipped: cannot make a mount namespace (needs root): $why"
		exit 77
	fi
	FLEETBENCH_MOUNT_NS=1 exec unshare -m --propagation private \
		bash "${BASH_SOURCE[0]}" "$@"
fi

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rel_setup disk-full a1
spool=$tmp/spool.a1
mkdir -p "$spool"
if ! mount -t tmpfs -o size=256k,mode=0700 fleetbench-test "$spool"; then
	not_ok "cannot mount a tmpfs on $spool"
	finish
fi
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	umount "$spool" 2>/dev/null
}
start_collector

for i in 1 2 3 4 5; do
	ragent a1 run "${quick_run[@]}" --provider full --instance-type t1 \
		--dir "$tmp" --no-send
	check_eq "run $i spools its report" "$?" 0
done
check_eq "five reports are spooled" "$(spooled a1)" 5
(cd "$spool" && sha256sum -- *.fbr) >"$tmp/before.sum"

# fill what is left: dd stops at ENOSPC
dd if=/dev/zero of="$spool/filler" bs=4k status=none 2>/dev/null
check_eq "the spool's disk is full" "$(df --output=avail -k "$spool" | tail -n 1 | tr -d ' ')" 0

# full_run WHAT: a run on the full disk fails clearly and harms nothing
full_run() {
	ragent a1 run "${quick_run[@]}" --provider full --instance-type t1 \
		--dir "$tmp"
	check_eq "$1: the run exits 1" "$?" 1
	check_grep "$1: it says the disk is full" "$tmp/a1.err" \
		"cannot spool report [0-9a-f-]{36} in '$spool': cannot write '[0-9a-f-]{36}\.fbr\.tmp': No space left on device"
	check_grep "$1: the results are printed all the same" "$tmp/a1.out" \
		"false_sharing"
	check_eq "$1: no temporary file is left" \
		"$(find "$spool" -name '*.tmp' | wc -l)" 0
	check_eq "$1: the five reports are intact" \
		"$(cd "$spool" && sha256sum -c --quiet "$tmp/before.sum" 2>&1 &&
			find . -maxdepth 1 -name '*.fbr' | wc -l)" 5
}
full_run "no room at all"
truncate -s -8k "$spool/filler"
full_run "8 KiB left"
ragent a1 spool
check_has "the spool lists them" "$tmp/a1.out" "5 reports"

# still full: sending needs no room, and frees it
rel_flush a1
check_eq "all five are stored" "$(runs_of full)" 5
figures "disk full: a 256 KiB tmpfs under the spool, 5 reports spooled; runs on the full disk and with 8 KiB left exit 1 naming ENOSPC, the 5 intact byte for byte and then delivered"

rel_check_end
stop_collector
check_eq "the collector exits 0" "$?" 0
finish
