#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 6 of docs/reliability.md: network trouble between the agents and
# the collector, which run in two network namespaces this test creates,
# joined by a veth pair (192.0.2.1, the collector, and 192.0.2.2, the
# agents: TEST-NET-1, in namespaces of their own, so nothing leaves them).
# PostgreSQL stays on its unix socket. Each fault comes while 5 real agents
# send 20 reports each, lasts a while, then heals; after it every report
# is delivered (the spools empty) and stored once.
#
# tc netem (loss, delay, reordering) is used when the kernel has it; the
# faults any kernel allows come always: the link down and up, a link that
# flaps, the collector's replies blackholed (its Acks lost on the way
# back), and a tbf bottleneck when tc has it. The test prints which ran.
# Needs root (namespaces); skipped, saying why, without.
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "skipped: network namespaces need root"
	exit 77
fi
for tool in ip tc; do
	if ! command -v "$tool" >/dev/null; then
		echo "skipped: '$tool' (iproute2) is not installed"
		exit 77
	fi
done

agents=(a1 a2 a3 a4 a5)
# enough that the pipelined collector is still busy with them when the
# fault comes (20 each could all be stored before it did)
per_agent=60
ns_c=fbc-$$ ns_a=fba-$$
veth_c=fbc$$ veth_a=fba$$
c_addr=192.0.2.1 a_addr=192.0.2.2

senders=()
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	touch "$tmp/stop"
	[ ${#senders[@]} -gt 0 ] && kill "${senders[@]}" 2>/dev/null
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	wait
	ip netns del "$ns_a" 2>/dev/null
	ip netns del "$ns_c" 2>/dev/null
}

rel_setup netns "${agents[@]}"

# --- the two namespaces ------------------------------------------------------

if ! ip netns add "$ns_c" 2>"$tmp/netns.err" ||
	! ip netns add "$ns_a" 2>>"$tmp/netns.err"; then
	echo "skipped: cannot create network namespaces: $(cat "$tmp/netns.err")"
	exit 77
fi
{
	ip link add "$veth_c" type veth peer name "$veth_a" &&
		ip link set "$veth_c" netns "$ns_c" &&
		ip link set "$veth_a" netns "$ns_a" &&
		ip -n "$ns_c" addr add "$c_addr/24" dev "$veth_c" &&
		ip -n "$ns_a" addr add "$a_addr/24" dev "$veth_a" &&
		ip -n "$ns_c" link set lo up &&
		ip -n "$ns_a" link set lo up &&
		ip -n "$ns_c" link set "$veth_c" up &&
		ip -n "$ns_a" link set "$veth_a" up
} 2>"$tmp/veth.err" || {
	not_ok "cannot set up the veth pair: $(cat "$tmp/veth.err")"
	finish
}

# the collector in its namespace (start_collector runs it under $wrapper)
wrapper=(ip netns exec "$ns_c")
start_collector "tcp://$c_addr:5555"

# nagent NAME COMMAND [ARGS]: agent NAME in the agents' namespace, its
# stderr into the ledger (ragent's, across the namespace)
nagent() {
	local name=$1 status

	ledger_snapshot "$name"
	agent_argv "$@"
	ip netns exec "$ns_a" "${argv[@]}" >"$tmp/$name.out" \
		2>"$tmp/$name.err"
	status=$?
	cat "$tmp/$name.err" >>"$tmp/ledger/$name.log"
	return "$status"
}

# sender NAME: send passes until the spool is empty (or $tmp/stop)
sender() {
	while [ "$(spooled "$1")" -gt 0 ] && [ ! -e "$tmp/stop" ]; do
		nagent "$1" send || sleep 0.2
	done
}

stored_count() {
	q <<<"SELECT count(*) FROM runs"
}

stored_over() {
	[ "$(stored_count)" -gt "$1" ]
}

all_spools_empty() {
	[ -z "$(find "$tmp"/spool.* -maxdepth 1 -name '*.fbr' -print -quit)" ]
}

dup_count() {
	cat "$tmp"/ledger/*.log 2>/dev/null | grep -c 'was already stored (duplicate)'
}

ran=()
# phase NAME SECONDS APPLY HEAL: each agent spools per_agent reports and
# sends them; once the first is stored, the fault APPLY (a command) comes,
# SECONDS later HEAL; then every spool must empty within 90 s
phase() {
	local name=$1 secs=$2 apply=$3 heal=$4 base healed drained dups

	base=$(stored_count)
	dups=$(dup_count)
	rm -f "$tmp/stop"
	for agent_name in "${agents[@]}"; do
		spoolgen "$agent_name" "$per_agent" --provider "$name"
	done
	for agent_name in "${agents[@]}"; do
		sender "$agent_name" &
		senders+=($!)
	done
	wait_for 60 stored_over "$base"
	if ! $apply 2>"$tmp/fault.err"; then
		not_ok "$name: cannot apply the fault: $(cat "$tmp/fault.err")"
	fi
	check_eq "$name: the fault came while reports were being sent" \
		"$(all_spools_empty && echo no || echo yes)" yes
	sleep "$secs"
	$heal 2>"$tmp/heal.err" ||
		not_ok "$name: cannot heal: $(cat "$tmp/heal.err")"
	healed=$(date +%s%N)
	wait_for 90 all_spools_empty
	check_eq "$name: every spool is empty after the link heals" "$?" 0
	drained=$((($(date +%s%N) - healed) / 1000000))
	touch "$tmp/stop"
	wait "${senders[@]}"
	senders=()
	check_eq "$name: every report is stored" "$(stored_count)" \
		$((base + ${#agents[@]} * per_agent))
	ran+=("$name ${secs}s (delivered ${drained} ms after healing, $(($(dup_count) - dups)) DUPLICATE)")
}

link_down() { ip -n "$ns_a" link set "$veth_a" down; }
link_up() { ip -n "$ns_a" link set "$veth_a" up; }

# the link down for 0.4 s of every second, until told to stop
flap_start() {
	(
		while [ ! -e "$tmp/flap.stop" ]; do
			link_down
			sleep 0.4
			link_up
			sleep 0.6
		done
	) &
	flapper=$!
}
flap_stop() {
	touch "$tmp/flap.stop"
	wait "$flapper"
	rm -f "$tmp/flap.stop"
	link_up
}

# the collector's packets to the agents are dropped: requests get through
# (until TCP stalls), Acks do not
blackhole_on() { ip -n "$ns_c" route add blackhole "$a_addr/32"; }
blackhole_off() { ip -n "$ns_c" route del blackhole "$a_addr/32"; }

# qdisc KIND ARGS... on both ends of the link
qdisc_on() {
	tc -n "$ns_a" qdisc add dev "$veth_a" root "$@" &&
		tc -n "$ns_c" qdisc add dev "$veth_c" root "$@"
}
qdisc_off() {
	tc -n "$ns_a" qdisc del dev "$veth_a" root
	tc -n "$ns_c" qdisc del dev "$veth_c" root
}
slow_on() { qdisc_on tbf rate 64kbit burst 4kb latency 300ms; }
loss_on() { qdisc_on netem loss 30%; }
delay_on() { qdisc_on netem delay 200ms 50ms reorder 25% 50%; }
mixed_on() { qdisc_on netem delay 100ms 100ms loss 10% reorder 25%; }

# what this kernel has
has_qdisc() {
	tc -n "$ns_a" qdisc add dev "$veth_a" root "$@" 2>/dev/null &&
		tc -n "$ns_a" qdisc del dev "$veth_a" root
}
netem=no tbf=no
has_qdisc netem delay 1ms && netem=yes
has_qdisc tbf rate 1mbit burst 4kb latency 100ms && tbf=yes

phase link-down 5 link_down link_up
phase link-flapping 6 flap_start flap_stop
phase acks-blackholed 4 blackhole_on blackhole_off
if [ "$tbf" = yes ]; then
	phase bottleneck-64kbit 6 slow_on qdisc_off
fi
if [ "$netem" = yes ]; then
	phase netem-loss-30% 6 loss_on qdisc_off
	phase netem-delay-reorder 6 delay_on qdisc_off
	phase netem-delay-loss-reorder 6 mixed_on qdisc_off
fi
if kill -0 "$pid" 2>/dev/null; then ok; else not_ok "the collector died"; fi

printf -v list '%s; ' "${ran[@]}"
figures "netns: tc netem: $netem, tbf: $tbf; faults run: ${list%; }"
rel_check_end
stop_collector
check_eq "the collector exits 0" "$?" 0
finish
