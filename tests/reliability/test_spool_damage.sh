#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 2 of docs/reliability.md: one damaged file among 1,000 good ones in
# the agent's spool (5,000 with FLEETBENCH_LONG=1), three times: truncated,
# a flipped checksum byte, empty. Each time the 999 good ones are
# delivered, the damaged one is quarantined and counted, and nothing is
# sent twice: no retry loop.
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rel_setup spool-damage a1
start_collector

good=1000
[ "$long" = 1 ] && good=5000

# damage KIND FILE: truncated to half, a flipped CRC byte, or empty
damage() {
	local size

	case $1 in
	truncated)
		size=$(stat -c %s "$2")
		truncate -s $((size / 2)) "$2"
		;;
	checksum)
		# the header's CRC-32 is at offset 16 (docs/spool.md)
		size=$(od -An -tu1 -j16 -N1 "$2" | tr -d ' ')
		printf "\\$(printf '%03o' $((size ^ 0xff)))" |
			dd of="$2" bs=1 seek=16 conv=notrunc status=none
		;;
	empty)
		truncate -s 0 "$2"
		;;
	esac
}

quarantined=0
for kind in truncated checksum empty; do
	spoolgen a1 "$good"
	victim=$(spool_ids a1 | shuf -n 1)
	damage "$kind" "$tmp/spool.a1/$victim.fbr"
	start=$(date +%s%N)
	ragent a1 send
	status=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	quarantined=$((quarantined + 1))
	check_eq "$kind: the pass exits 1 (a report was quarantined)" "$status" 1
	check_has "$kind: each good report is sent once, the damaged one never" \
		"$tmp/a1.out" \
		"sent $((good - 1)), committed $((good - 1)), duplicate 0, rejected 0, quarantined 1, remaining 0"
	check_eq "$kind: the damage is reported once" \
		"$(grep -c "damaged spool file '$victim.fbr' moved to quarantine/" \
			"$tmp/a1.err")" 1
	case $kind in
	truncated) why="payload length [0-9]+, but the file holds" ;;
	checksum) why="checksum mismatch: header says crc32" ;;
	empty) why="empty file" ;;
	esac
	check_grep "$kind: it says what is wrong" "$tmp/a1.err" \
		"quarantine/: $why"
	check_eq "$kind: the file is in quarantine/" \
		"$(find "$tmp/spool.a1/quarantine" -name "$victim.fbr*" | wc -l)" 1
	check_eq "$kind: it is not stored" \
		"$(q <<<"SELECT count(*) FROM runs WHERE run_id = '$victim'")" 0
	check_eq "$kind: the spool is empty" "$(spooled a1)" 0
	ragent a1 spool
	check_has "$kind: the spool listing counts it" "$tmp/a1.out" \
		"rejected/: 0, quarantine/: $quarantined"
	ragent a1 send
	check_eq "$kind: the next pass has nothing to do, exit 0" \
		"$?|$(cat "$tmp/a1.out")" \
		"0|sent 0, committed 0, duplicate 0, rejected 0, quarantined 0, remaining 0"
	figures "$kind: $((good - 1)) of $good delivered in $ms ms, 1 quarantined, $((good - 1)) messages sent"
done
check_eq "everything else is stored" "$(q <<<"SELECT count(*) FROM runs")" \
	$((3 * (good - 1)))

rel_check_end
stop_collector
check_eq "the collector exits 0" "$?" 0
finish
