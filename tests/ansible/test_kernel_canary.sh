#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ansible/kernel_canary.yml for real, against the Debian 12 chroot hosts of
# tests/ansible (hosts.sh): a collector and three agents, agent-a and
# agent-c of one instance type (hetzner cx22, one canary: agent-a), agent-b
# of another (aws m6i.large, 50%: itself). site.yml deploys them and each
# agent reports once from the running kernel. The kernel step is the
# play's test mode (fleetbench_kernel_test_release): no package and no
# reboot, the host reports the test release from a file bind-mounted over
# /proc/sys/kernel/osrelease, where the agent reads the running kernel.
#
# 1. A release that changes nothing: the canaries report from it, the real
#    `fleetbench gate` on the collector host passes, and agent-c follows in
#    its batch, gated again: every agent's last stored run names the
#    release. Run again, the play changes nothing.
# 2. A release under which the canary agent-a reports io_uring disabled
#    (kernel.io_uring_disabled 2, bind-mounted by this test over the sysctl
#    in agent-a's tree: a fingerprint change): the gate fails for hetzner
#    cx22, the play stops, and agent-c (no canary) never gets the release:
#    no run from it, and its test file and the kernel it reports are still
#    the first release's.
#
# systemd is not PID 1 here (test_ansible.sh): the test runs the collector's
# and the agents' first runs from the units' ExecStart; the play runs the
# boot check's command itself in either case.
#
# Needs root (chroot, mounts). Environment: SOURCE_DIR, WORK_DIR (where the
# package is built, default $SOURCE_DIR/build/ansible), CACHE_DIR (the
# debootstrap tarball and .debs, default /var/cache/fleetbench-test).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/integration/lib.sh
. "$here/../integration/lib.sh"
# shellcheck source=tests/ansible/hosts.sh
. "$here/hosts.sh"

WORK_DIR=${WORK_DIR:-$SOURCE_DIR/build/ansible}

if [ "$(id -u)" -ne 0 ]; then
	echo "skipped: needs root for chroot and mounts (CI runs it as root)"
	exit 77
fi
for tool in ansible-playbook ansible-lint debootstrap cmake cpack chroot \
	setpriv flock findmnt mount; do
	if ! command -v "$tool" >/dev/null; then
		not_ok "'$tool' is missing: run scripts/deps"
		finish
	fi
done

t0=$(date +%s)
step() {
	echo "== $(($(date +%s) - t0)) s: $*"
}

hosts_prefix=/var/tmp/fleetbench-kernel-canary-
hosts=
play_pid=
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	if [ -n "$play_pid" ]; then
		kill -TERM "$play_pid" 2>/dev/null
		wait "$play_pid" 2>/dev/null
	fi
	[ -n "$hosts" ] && hosts_teardown "$hosts"
}
tmp_new kernel-canary
trap 'exit 143' TERM
trap 'exit 130' INT

hosts_reap "$hosts_prefix"
if ! made=$(mktemp -d "${hosts_prefix}XXXXXX"); then
	not_ok "cannot make a directory ${hosts_prefix}*"
	finish
fi
hosts=$(realpath -e "$made")
exec {hosts_lock}>"$hosts/.lock"
flock "$hosts_lock"

# --- ansible-lint ---------------------------------------------------------

step "ansible-lint, production profile"
# as in test_ansible.sh: Debian 12's ansible-lint 6.13 rejects 'noble' only
mkdir "$tmp/lint"
(cd "$SOURCE_DIR/ansible" && cp -r .ansible-lint ansible.cfg site.yml \
	kernel_canary.yml requirements.yml roles inventory "$tmp/lint/")
sed -i '/^        - noble$/d' "$tmp/lint"/roles/*/meta/main.yml
(cd "$tmp/lint" && ANSIBLE_HOME=$tmp/ansible-home NO_COLOR=1 \
	ansible-lint --offline --profile production kernel_canary.yml \
	roles/fleetbench_kernel requirements.yml) >"$tmp/lint.log" 2>&1
check_eq "ansible-lint passes kernel_canary.yml on the production profile" "$?" 0
check_grep "ansible-lint linted the playbook" "$tmp/lint.log" \
	'Passed with production profile: 0 failure'
[ "$fail" -eq 0 ] || cat "$tmp/lint.log"

# --- the package ----------------------------------------------------------

step "building the Debian package (cpack -G DEB)"
pkgdir=$WORK_DIR/package
if ! { cmake -S "$SOURCE_DIR" -B "$pkgdir" -DCMAKE_BUILD_TYPE=Release \
	-DCMAKE_INSTALL_PREFIX=/usr -DBUILD_TESTING=OFF &&
	cmake --build "$pkgdir" -j"$(nproc)" &&
	rm -f "$pkgdir"/fleetbench_*.deb &&
	(cd "$pkgdir" && cpack -G DEB); } >"$tmp/package.log" 2>&1; then
	not_ok "cannot build the package: $(tail -n 20 "$tmp/package.log")"
	finish
fi
package=$(ls "$pkgdir"/fleetbench_*.deb)

# --- four hosts -----------------------------------------------------------

step "four Debian 12 hosts"
BASE_TARBALL=$(base_tarball)
if [ -z "$BASE_TARBALL" ]; then
	not_ok "no Debian 12 base tree (debootstrap failed, see above)"
	finish
fi
collector=$hosts/collector
agent_a=$hosts/agent-a
agent_b=$hosts/agent-b
agent_c=$hosts/agent-c
for root in "$collector" "$agent_a" "$agent_b" "$agent_c"; do
	if ! host_new "$root"; then
		not_ok "cannot make the host $root"
		finish
	fi
done
mkdir -p "$collector/etc/postgresql-common/createcluster.d"
echo "listen_addresses = ''" \
	>"$collector/etc/postgresql-common/createcluster.d/fleetbench-test.conf"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
endpoint=tcp://127.0.0.1:$port

mkdir -p "$tmp/inventory"
cat >"$tmp/inventory/hosts.yml" <<EOF
all:
  vars:
    ansible_connection: community.general.chroot
    ansible_python_interpreter: /usr/bin/python3
    fleetbench_package: $package
    fleetbench_collector_systemd: false
    fleetbench_agent_systemd: false
    fleetbench_kernel_gate_wait: 60s
  children:
    fleetbench_collector:
      hosts:
        collector:
          ansible_host: $collector
      vars:
        fleetbench_collector_bind: $endpoint
    fleetbench_agents:
      vars:
        fleetbench_agent_endpoints: ["$endpoint"]
        fleetbench_agent_profile: quick
        fleetbench_agent_settings:
          agent: {steal_window_ms: 100}
          bench: {repeats: 1, io_ms: 20, file_bytes: 8M}
      children:
        hetzner_cx22:
          hosts:
            agent-a:
              ansible_host: $agent_a
            agent-c:
              ansible_host: $agent_c
          vars:
            fleetbench_agent_provider: hetzner
            fleetbench_agent_instance_type: cx22
            fleetbench_agent_region: fsn1
            fleetbench_kernel_canary_count: 1
        aws_m6i_large:
          hosts:
            agent-b:
              ansible_host: $agent_b
          vars:
            fleetbench_agent_provider: aws
            fleetbench_agent_instance_type: m6i.large
            fleetbench_agent_region: eu-central-1
            fleetbench_kernel_canary_percent: 50
EOF

# play LOG PLAYBOOK [ARGS...]: runs PLAYBOOK against the hosts, returns its
# exit status; in the background, so that a signal stops it at once
play() {
	local rc log=$1

	shift
	(cd "$SOURCE_DIR/ansible" &&
		ANSIBLE_HOME=$tmp/ansible-home ANSIBLE_NOCOLOR=1 \
			ANSIBLE_LOCAL_TEMP=$tmp/ansible-local \
			exec timeout 900 ansible-playbook \
			-i "$tmp/inventory/hosts.yml" "$@") >"$log" 2>&1 &
	play_pid=$!
	wait "$play_pid"
	rc=$?
	play_pid=
	[ "${KEEP_HOSTS:-0}" = 1 ] && cp "$log" "$hosts/"
	return "$rc"
}

# recap LOG HOST: the PLAY RECAP line of HOST
recap() {
	grep -E "^$2 +: ok=" "$1"
}

# psql_q SQL: runs SQL in the collector's database as postgres
psql_q() {
	chroot "$collector" setpriv --reuid=postgres --regid=postgres \
		--init-groups -- psql -X -q -A -t -v ON_ERROR_STOP=1 \
		-d fleetbench -c "$1"
}

# gate ARGS...: the packaged fleetbench gate on the collector host, as the
# collector's user
gate() {
	chroot "$collector" setpriv --reuid=fleetbench --regid=fleetbench \
		--init-groups -- fleetbench \
		--dsn 'host=/run/postgresql dbname=fleetbench' gate "$@"
}

# kernels_of ROOT: the kernel releases of the host's stored runs, oldest
# first, one line
kernels_of() {
	psql_q "SELECT string_agg(kernel_release, ' ' ORDER BY started_at) FROM runs WHERE machine_id = '$(cat "$1/etc/machine-id")'"
}

# --- deploy, and the first reports ----------------------------------------

step "site.yml"
play "$tmp/site.log" site.yml {hosts_lock}>&-
rc=$?
check_eq "site.yml deploys the collector and three agents" "$rc" 0
if [ "$rc" -ne 0 ]; then
	{ grep -E -B 2 -A 12 'fatal:|FAILED!|ERROR!' "$tmp/site.log" ||
		tail -n 40 "$tmp/site.log"; } | head -n 100
	finish
fi
for root in "$collector" "$agent_a" "$agent_b" "$agent_c"; do
	host_save_debs "$root"
done

step "the collector's ExecStart and reload"
unit_exec "$collector" fleetbench-collector.service bg \
	2>"$tmp/collector.log" {hosts_lock}>&-
collector_pid=$unit_pid
for _ in $(seq 100); do
	grep -q '^fleetbench-collector: listening on' "$tmp/collector.log" && break
	kill -0 "$collector_pid" 2>/dev/null || break
	sleep 0.1
done
if ! kill -0 "$collector_pid" 2>/dev/null; then
	not_ok "the collector did not start: $(cat "$tmp/collector.log")"
	finish
fi
kill -HUP "$collector_pid"
for _ in $(seq 50); do
	grep -q 'reloaded the allowlist' "$tmp/collector.log" && break
	sleep 0.1
done
check_grep "the reload reads the three agent keys" "$tmp/collector.log" \
	"reloaded the allowlist '/etc/fleetbench/agents': 3 agent keys"

running=$(uname -r)
for root in "$agent_a" "$agent_b" "$agent_c"; do
	name=${root##*/}
	step "$name's first report (fleetbench-agent.service's ExecStart)"
	unit_exec "$root" fleetbench-agent.service >"$tmp/$name.out" \
		2>"$tmp/$name.err" {hosts_lock}>&-
	check_eq "$name's run delivers its report" "$?" 0
	check_eq "$name's report names the running kernel" \
		"$(kernels_of "$root")" "$running"
done

# --- 1. a release that passes ---------------------------------------------

good=6.1.0-99-fleetbench-pass
bad=6.1.0-100-fleetbench-fail
canary_args=(kernel_canary.yml -e fleetbench_kernel_batch=1)

step "kernel_canary.yml to $good"
play "$tmp/pass.log" "${canary_args[@]}" \
	-e "fleetbench_kernel_test_release=$good" {hosts_lock}>&-
rc=$?
check_eq "the roll-out of $good succeeds" "$rc" 0
[ "$rc" -eq 0 ] || { grep -E -B 2 -A 20 'fatal:|FAILED!|ERROR!' \
	"$tmp/pass.log" || tail -n 60 "$tmp/pass.log"; } | head -n 120
for root in "$agent_a" "$agent_b" "$agent_c"; do
	name=${root##*/}
	check_eq "$name reported from $good once, after the running kernel" \
		"$(kernels_of "$root")" "$running $good"
	check_eq "$name reports $good as its kernel" \
		"$(chroot "$root" cat /proc/sys/kernel/osrelease)" "$good"
done
# the order: the canaries, their gate, then agent-c in its batch, gated
order=$(awk '/^PLAY \[/ { print } /^TASK \[fleetbench_kernel : Run the gate/ { print "gate" }
	/^(changed|ok): \[agent-[abc]\]/ && t ~ /Report from the new kernel/ { print $2 }
	/^TASK \[/ { t = $0 }' "$tmp/pass.log" | tr '\n' ' ')
check_match "the canaries report, the gate runs, then agent-c" "$order" \
	"*Upgrade the canaries*\[agent-a\]*gate*Upgrade the rest*\[agent-c\]*gate*"
case "$order" in
*"Upgrade the rest"*"[agent-a]"* | *"Upgrade the rest"*"[agent-b]"*)
	not_ok "a canary was upgraded again with the rest: $order" ;;
*) ok ;;
esac
# what the play shows of the gate (docs/operations.md quotes it)
sed -n '/^TASK \[fleetbench_kernel : Show the gate/,/^$/p' "$tmp/pass.log" >&2
check_grep "the canaries' gate passes for hetzner cx22" "$tmp/pass.log" \
	'hetzner +cx22 +pass'
check_eq "the gate passes for both instance types" \
	"$(gate --kernel "$good" >"$tmp/gate-pass.txt" 2>&1; echo $?)" 0
echo "--- fleetbench gate --kernel $good" >&2
cat "$tmp/gate-pass.txt" >&2

step "kernel_canary.yml to $good again"
play "$tmp/pass2.log" "${canary_args[@]}" \
	-e "fleetbench_kernel_test_release=$good" {hosts_lock}>&-
check_eq "the second roll-out of $good succeeds" "$?" 0
for h in agent-a agent-b agent-c; do
	check_match "the second roll-out changes nothing on $h" \
		"$(recap "$tmp/pass2.log" "$h")" "*changed=0 *failed=0*"
done
awk '/^TASK \[/ { task = $0 } /^changed: / { print task; print }' \
	"$tmp/pass2.log" >&2
for root in "$agent_a" "$agent_b" "$agent_c"; do
	check_eq "${root##*/} made no report the second time" \
		"$(kernels_of "$root")" "$running $good"
done

# --- 2. a release that fails its canary -----------------------------------

step "kernel_canary.yml to $bad, agent-a without io_uring"
echo 2 >"$tmp/io_uring_disabled"
mount --bind "$tmp/io_uring_disabled" \
	"$agent_a/proc/sys/kernel/io_uring_disabled"
check_eq "agent-a's tree reports io_uring disabled" \
	"$(chroot "$agent_a" cat /proc/sys/kernel/io_uring_disabled)" 2
play "$tmp/fail.log" "${canary_args[@]}" \
	-e "fleetbench_kernel_test_release=$bad" {hosts_lock}>&-
rc=$?
check_eq "the roll-out of $bad stops (exit status 2)" "$rc" 2
check_grep "it stops at the gate of hetzner cx22" "$tmp/fail.log" \
	"the gate fails for kernel $bad on hetzner cx22: the roll-out stops here"
check_grep "the gate names the change" "$tmp/fail.log" 'io_uring_disabled'
sed -n '/^TASK \[fleetbench_kernel : Show the gate/,/^PLAY RECAP/p' "$tmp/fail.log" >&2
if grep -q '^PLAY \[Upgrade the rest' "$tmp/fail.log" &&
	sed -n '/^PLAY \[Upgrade the rest/,$p' "$tmp/fail.log" |
	grep -q '^TASK \['; then
	not_ok "the rest's play ran tasks after the failing gate"
else
	ok
fi
check_eq "the canary agent-a reported from $bad" \
	"$(kernels_of "$agent_a")" "$running $good $bad"
check_eq "the canary agent-b (its own instance type) reported from it too" \
	"$(kernels_of "$agent_b")" "$running $good $bad"
check_eq "agent-c has no run from $bad" \
	"$(kernels_of "$agent_c")" "$running $good"
check_eq "agent-c still reports $good" \
	"$(chroot "$agent_c" cat /proc/sys/kernel/osrelease)" "$good"
check_eq "agent-c's test release file is still $good" \
	"$(cat "$agent_c/etc/fleetbench/kernel-release.test")" "$good"
check_eq "agent-c's last delivered report is still from $good" \
	"$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["kernel_release"])' \
		"$agent_c/var/lib/fleetbench/state/last-delivered.json")" "$good"
check_eq "the gate fails (exit status 1)" \
	"$(gate --kernel "$bad" >"$tmp/gate-fail.txt" 2>&1; echo $?)" 1
echo "--- fleetbench gate --kernel $bad" >&2
cat "$tmp/gate-fail.txt" >&2
check_grep "hetzner cx22 fails" "$tmp/gate-fail.txt" 'hetzner +cx22 +fail'
check_grep "aws m6i.large passes" "$tmp/gate-fail.txt" 'aws +m6i\.large +pass'

kill -TERM "$collector_pid" 2>/dev/null
wait "$collector_pid" 2>/dev/null
step "done"
finish
