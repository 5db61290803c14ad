#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 9 of docs/reliability.md: 10,000 mutated and random messages
# (100,000 with FLEETBENCH_LONG=1) from an authorised agent (zflood: bit
# flips and truncations of valid reports, fields of the wrong wire type,
# huge length prefixes, multi-frame garbage, random bytes, empty and
# oversized messages). The collector stays up and keeps serving, stores
# none of them, answers each REJECTED but the oversized (their peer is
# dropped, unanswered), and its memory grows by less than 10 MiB.
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rel_setup bad-input a1 flood
max_msg=$((1 << 20))
start_collector 'tcp://127.0.0.1:*' --max-msg-size "$max_msg"

rss_kib() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"
}

# a working collector first: its steady size is the baseline
spoolgen a1 20
rel_flush a1
before=$(rss_kib)

count=10000
[ "$long" = 1 ] && count=100000
seed=${FLOOD_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
start=$(date +%s%N)
"$ZFLOOD" --endpoint "$endpoint" --server-key "$keys/collector.pub" \
	--agent-key "$keys/flood.key" --count "$count" --seed "$seed" \
	--max-msg-size "$max_msg" --timeout $((10000 * slow)) \
	>"$tmp/flood.out" 2>"$tmp/flood.err"
status=$?
ms=$((($(date +%s%N) - start) / 1000000))
cat "$tmp/flood.out"
check_eq "zflood: every message answered REJECTED, the oversized dropped" \
	"$status|$(cat "$tmp/flood.err")" "0|"
after=$(rss_kib)
if kill -0 "$pid" 2>/dev/null; then ok; else not_ok "the collector died"; fi

summary=$(cat "$tmp/flood.out")
rejected=$(sed -n 's/.*; rejected \([0-9]*\),.*/\1/p' <<<"$summary")
dropped=$(sed -n 's/.*oversize dropped \([0-9]*\),.*/\1/p' <<<"$summary")
check_eq "all $count were sent" \
	"$(sed -n 's/^seed [0-9]*: sent \([0-9]*\) .*/\1/p' <<<"$summary")" "$count"
check_eq "each was rejected or dropped" $((rejected + dropped)) "$count"
check_eq "none of them is stored" "$(q <<<"SELECT count(*) FROM runs")" 20

check_match "the collector's size was read" "$before|$after" "[0-9]*|[0-9]*"
growth=$((after - before))
if asan_built "$COLLECTOR"; then
	# ASan keeps freed memory in quarantine: RSS says nothing here
	echo "note: ASan build, the memory bound is checked in the plain build"
else
	check_eq "memory grows by less than 10 MiB (${before} KiB before, ${after} KiB after)" \
		"$((growth < 10240))" 1
fi

# it still serves, and counted what it refused
spoolgen a1 5
rel_flush a1
kill -HUP "$pid"
wait_for 5 grep -q "reloaded the allowlist" "$log"
eval "$(collector_stats)"
# a mutated report whose first bytes read as an Offer's is rejected as a
# malformed offer, counted apart from the reports
offers_rejected=$(grep 'messages received' "$log" | tail -n 1 |
	sed -n 's/.*; malformed offers rejected \([0-9]*\)$/\1/p')
check_match "the stats line counts the malformed offers" "$offers_rejected" "[0-9]*"
check_eq "the collector counted the rejections (reports $st_rejected, malformed offers $offers_rejected)" \
	"$((${st_rejected:-0} + ${offers_rejected:-0}))" "$rejected"
check_eq "and stored only the agent's reports" "${st_committed:-}" 25
lines=$(wc -l <"$log")
check_eq "its log stays short (rejections are rate-limited): $lines lines" \
	"$((lines < 200))" 1
figures "bad input: $count messages (seed $seed) in $ms ms: $rejected REJECTED, $dropped oversized dropped, 0 stored; collector RSS ${before} -> ${after} KiB (${growth} KiB more), log $lines lines"

rel_check_end
stop_collector
check_eq "the collector exits 0" "$?" 0
finish
