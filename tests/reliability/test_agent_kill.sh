#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 1 of docs/reliability.md: the agent killed with SIGKILL at random
# points during 50 runs that spool and send (200 with FLEETBENCH_LONG=1),
# then at the two fault points that matter most: between the spool write
# and its rename (spool-before-rename), and between the Ack and the spool
# delete (send-after-ack). After the agent runs again every report it
# spooled is stored exactly once.
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rel_setup agent-kill a1
start_collector

kill_run=("${quick_run[@]}" --provider kill --instance-type t1 --dir "$tmp")
# run_argv: the command line of one quick run of agent a1 that sends
run_argv() {
	agent_argv a1 run "${kill_run[@]}"
}

# --- random kills ----------------------------------------------------------

# kill_after MS COMMAND...: runs the command, SIGKILLs it after a random
# 0 to MS milliseconds; 0 when it was killed, 1 when it ended first
kill_after() {
	local delay=$(((RANDOM * 32768 + RANDOM) % ($1 + 1))) apid status

	shift
	ledger_snapshot a1
	"$@" >/dev/null 2>>"$tmp/ledger/a1.log" &
	apid=$!
	sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
	kill -KILL "$apid" 2>/dev/null
	wait "$apid"
	status=$?
	[ "$status" -eq 137 ]
}

# runs that spool and send, killed anywhere from the probe to the last Ack
run_argv
start=$(date +%s%N)
ledger_snapshot a1
"${argv[@]}" >/dev/null 2>>"$tmp/ledger/a1.log"
check_eq "an undisturbed run exits 0" "$?" 0
span_ms=$((($(date +%s%N) - start) * 12 / 10000000 + 1))
runs=20
[ "$long" = 1 ] && runs=100
killed=0
for _ in $(seq "$runs"); do
	kill_after "$span_ms" "${argv[@]}" && killed=$((killed + 1))
done
rel_flush a1
check_eq "every report the killed runs spooled is stored" \
	"$(comm -23 <(ledger_sent) <(stored) | wc -l)" 0
figures "killed runs: $runs runs (each killed within ${span_ms} ms), $killed killed, $(ledger_sent | wc -l) reports spooled, all stored once"

# 50 sends (500 long), send passes killed at random until the spool is
# empty, each within the time a pass takes to send up to 4 reports (from
# an undisturbed pass that sends nothing and one that sends 50): so the
# kills land all along the 50, at every step of a send
sends=50
[ "$long" = 1 ] && sends=500
elapsed_ms() {
	local start

	start=$(date +%s%N)
	ragent a1 send
	echo $((($(date +%s%N) - start) / 1000000))
}
idle_ms=$(elapsed_ms)
spoolgen a1 50
per_ms=$((($(elapsed_ms) - idle_ms) / 50 + 1))
dups_before=$(grep -c 'was already stored (duplicate)' "$tmp/ledger/a1.log")
spoolgen a1 "$sends"
passes=0 killed=0
agent_argv a1 send
while [ "$(spooled a1)" -gt 0 ] && [ "$passes" -lt $((sends * 4)) ]; do
	passes=$((passes + 1))
	left=$(spooled a1)
	kill_after $((idle_ms + (left < 4 ? left : 4) * per_ms)) "${argv[@]}" &&
		killed=$((killed + 1))
done
check_match "the sends were killed" "$killed" "[1-9]*"
rel_flush a1
dups=$(($(grep -c 'was already stored (duplicate)' "$tmp/ledger/a1.log") - dups_before))
check_eq "every report is stored" \
	"$(comm -23 <(ledger_sent) <(stored) | wc -l)" 0
check_eq "exactly once" "$(q <<<"SELECT count(*) FROM runs")" \
	"$(ledger_sent | wc -l)"
figures "killed sends: $sends reports, $passes send passes of which $killed killed at random (a pass takes $idle_ms ms and $per_ms ms a report), $dups reports answered DUPLICATE after a kill, all $sends stored once"

# --- killed between the spool write and the rename --------------------------

run_argv
before=$(spool_ids a1)
ledger_snapshot a1
FLEETBENCH_FAULT=spool-before-rename "${argv[@]}" >/dev/null \
	2>"$tmp/fault1.err"
check_eq "spool-before-rename: the run is killed" "$?" 137
cat "$tmp/fault1.err" >>"$tmp/ledger/a1.log"
check_has "it says where it died" "$tmp/fault1.err" \
	"fault point 'spool-before-rename' reached: SIGKILL"
tmpfile=$(find "$tmp/spool.a1" -maxdepth 1 -name '*.fbr.tmp' -printf '%f\n')
check_match "it leaves only a temporary file" "$tmpfile" "*-*-*-*-*.fbr.tmp"
check_eq "no report was spooled" "$(spool_ids a1)" "$before"
lost=${tmpfile%.fbr.tmp}
ragent a1 run "${kill_run[@]}"
check_eq "the agent runs again and delivers" "$?" 0
check_eq "the next run removes the temporary file" \
	"$(find "$tmp/spool.a1" -maxdepth 1 -name '*.fbr.tmp' | wc -l)" 0
check_eq "the report that never was spooled is not stored" \
	"$(q <<<"SELECT count(*) FROM runs WHERE run_id = '$lost'")" 0

# --- killed between the Ack and the spool delete ----------------------------

run_argv
ledger_snapshot a1
FLEETBENCH_FAULT=send-after-ack "${argv[@]}" >/dev/null 2>"$tmp/fault2.err"
check_eq "send-after-ack: the run is killed" "$?" 137
cat "$tmp/fault2.err" >>"$tmp/ledger/a1.log"
check_has "it says where it died" "$tmp/fault2.err" \
	"fault point 'send-after-ack' reached: SIGKILL"
id=$(spool_ids a1)
check_match "the report stays spooled" "$id" "*-*-*-*-*"
check_eq "and is stored" \
	"$(q <<<"SELECT count(*) FROM runs WHERE run_id = '$id'")" 1
ragent a1 send
check_eq "the agent runs again: exit 0" "$?" 0
check_has "its report is answered DUPLICATE" "$tmp/a1.out" \
	"committed 0, duplicate 1"
check_eq "and leaves the spool" "$(spooled a1)" 0
check_eq "it is stored once" \
	"$(q <<<"SELECT count(*) FROM runs WHERE run_id = '$id'")" 1

# the third Ack of a pass of five: two gone, the third stored and kept
spoolgen a1 5
agent_argv a1 send
ledger_snapshot a1
FLEETBENCH_FAULT=send-after-ack@3 "${argv[@]}" >/dev/null 2>"$tmp/fault3.err"
check_eq "send-after-ack@3: the pass is killed" "$?" 137
cat "$tmp/fault3.err" >>"$tmp/ledger/a1.log"
check_eq "three reports were stored, three stay spooled" \
	"$(comm -12 <(spool_ids a1) <(stored) | wc -l)|$(spooled a1)" "1|3"
ragent a1 send
check_eq "the next pass exits 0" "$?" 0
check_has "one DUPLICATE, two COMMITTED" "$tmp/a1.out" \
	"committed 2, duplicate 1"

rel_check_end
stop_collector
check_eq "the collector exits 0" "$?" 0
finish
