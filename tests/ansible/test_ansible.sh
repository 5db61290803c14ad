#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Ansible roles for real: ansible/site.yml deploys a collector, a
# synchronous standby of its PostgreSQL and two agents onto four Debian 12
# root filesystems of this machine (debootstrap,
# tests/ansible/hosts.sh), reached through the community.general.chroot
# connection, with the agents in two inventory groups of different provider
# and instance type. Then it proves that both agents' reports are stored
# under their inventory labels, that the allowlist holds exactly the two
# agent keys, that the boot unit's `run --if-kernel-changed` does nothing
# after a delivery under the running kernel and runs and delivers when the
# state directory names another kernel, that a second run changes nothing,
# that the units pass systemd-analyze verify, and that ansible-lint passes
# (production profile).
#
# systemd is not PID 1 here, so the roles start no fleetbench service
# (fleetbench_*_systemd: false) and this test runs the units' ExecStart
# commands itself, in the roles' order: the collector, its reload (SIGHUP),
# then each agent's run. PostgreSQL is started by the role, with its init
# script, as user postgres.
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
for tool in ansible-playbook ansible-lint debootstrap systemd-analyze cmake \
	cpack chroot setpriv flock findmnt; do
	if ! command -v "$tool" >/dev/null; then
		not_ok "'$tool' is missing: run scripts/deps"
		finish
	fi
done

t0=$(date +%s)
# step NAME: prints how long the test has run, for the wall-time figures
step() {
	echo "== $(($(date +%s) - t0)) s: $*"
}

hosts_prefix=/var/tmp/fleetbench-ansible-
hosts=
play_pid=
# shellcheck disable=SC2317 # called at exit by lib.sh
on_cleanup() {
	if [ -n "$play_pid" ]; then
		# timeout passes the signal on to ansible-playbook
		kill -TERM "$play_pid" 2>/dev/null
		wait "$play_pid" 2>/dev/null
	fi
	[ -n "$hosts" ] && hosts_teardown "$hosts"
}
tmp_new ansible
trap 'exit 143' TERM
trap 'exit 130' INT

hosts_reap "$hosts_prefix"
if ! made=$(mktemp -d "${hosts_prefix}XXXXXX"); then
	not_ok "cannot make a directory ${hosts_prefix}*"
	finish
fi
# canonical: processes in the hosts are found by their root directory
hosts=$(realpath -e "$made")
# held while this run lives: hosts_reap of a later run leaves it alone
# (what the run starts gets the descriptor closed, so that a daemon left
# behind by a killed run does not keep holding the lock)
exec {hosts_lock}>"$hosts/.lock"
flock "$hosts_lock"

# --- ansible-lint ---------------------------------------------------------

step "ansible-lint, production profile"
# Debian 12's ansible-lint 6.13 validates meta/main.yml against a schema
# older than Ubuntu 24.04: it rejects the platform version 'noble' and
# nothing else. Lint a copy without that one line; newer ansible-lint
# accepts the roles as they are.
mkdir "$tmp/lint"
(cd "$SOURCE_DIR/ansible" && cp -r .ansible-lint ansible.cfg site.yml \
	requirements.yml roles inventory "$tmp/lint/")
sed -i '/^        - noble$/d' "$tmp/lint"/roles/*/meta/main.yml
(cd "$tmp/lint" && ANSIBLE_HOME=$tmp/ansible-home NO_COLOR=1 \
	ansible-lint --offline --profile production site.yml roles inventory \
	requirements.yml) >"$tmp/lint.log" 2>&1
check_eq "ansible-lint passes on the production profile" "$?" 0
check_grep "ansible-lint linted the roles" "$tmp/lint.log" \
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
check_match "the package is a .deb" "$package" "*/fleetbench_*_*.deb"

# --- three hosts ----------------------------------------------------------

step "four Debian 12 hosts"
BASE_TARBALL=$(base_tarball)
if [ -z "$BASE_TARBALL" ]; then
	not_ok "no Debian 12 base tree (debootstrap failed, see above)"
	finish
fi
collector=$hosts/collector
agent_a=$hosts/agent-a
agent_b=$hosts/agent-b
standby=$hosts/standby
for root in "$collector" "$agent_a" "$agent_b" "$standby"; do
	if ! host_new "$root"; then
		not_ok "cannot make the host $root"
		finish
	fi
done
# The hosts share this machine's network: PostgreSQL's clusters start off
# TCP; the roles then put the primary (the collector host's) and its
# standby on two loopback addresses of their own.
for root in "$collector" "$standby"; do
	mkdir -p "$root/etc/postgresql-common/createcluster.d"
	echo "listen_addresses = ''" \
		>"$root/etc/postgresql-common/createcluster.d/fleetbench-test.conf"
done
primary_addr=127.0.42.1
standby_addr=127.0.42.2
db_password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
repl_password=$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
endpoint=tcp://127.0.0.1:$port

# The inventory: one collector, two agents in groups of their own provider,
# instance type and region, as in ansible/inventory/example.
mkdir -p "$tmp/inventory"
cat >"$tmp/inventory/hosts.yml" <<EOF
all:
  vars:
    ansible_connection: community.general.chroot
    ansible_python_interpreter: /usr/bin/python3
    fleetbench_package: $package
    # systemd is not PID 1 on this machine: the test runs the units itself
    fleetbench_collector_systemd: false
    fleetbench_agent_systemd: false
  children:
    fleetbench_collector:
      hosts:
        collector:
          ansible_host: $collector
      vars:
        fleetbench_collector_bind: $endpoint
        # a synchronous standby (the host standby); on loopback every
        # connection comes from 127.0.0.1
        fleetbench_collector_pg_listen: $primary_addr
        fleetbench_collector_pg_standbys: [{name: standby1, address: $standby_addr}]
        fleetbench_collector_pg_clients: [127.0.0.0/8]
        fleetbench_collector_pg_standby_sources: [127.0.0.0/8]
        fleetbench_collector_db_password: $db_password
        fleetbench_collector_replication_password: $repl_password
    fleetbench_pg_standby:
      hosts:
        standby:
          ansible_host: $standby
      vars:
        fleetbench_pg_standby_name: standby1
        fleetbench_pg_standby_primary: $primary_addr
        fleetbench_pg_standby_listen: $standby_addr
        fleetbench_pg_standby_clients: [127.0.0.0/8]
        fleetbench_pg_standby_replication_password: $repl_password
    fleetbench_agents:
      vars:
        fleetbench_agent_endpoints: ["$endpoint"]
        fleetbench_agent_profile: quick
        # a short run: this checks the rollout, not the measurements
        fleetbench_agent_settings:
          agent: {steal_window_ms: 100}
          bench: {repeats: 1, io_ms: 20, file_bytes: 8M}
      children:
        hetzner_cx22:
          hosts:
            agent-a:
              ansible_host: $agent_a
          vars:
            fleetbench_agent_provider: hetzner
            fleetbench_agent_instance_type: cx22
            fleetbench_agent_region: fsn1
        aws_m6i_large:
          hosts:
            agent-b:
              ansible_host: $agent_b
          vars:
            fleetbench_agent_provider: aws
            fleetbench_agent_instance_type: m6i.large
            fleetbench_agent_region: eu-central-1
EOF

# play LOG: runs site.yml against the hosts, returns its exit status. In
# the background, so that a signal to the test stops it at once (the wait
# returns, and on_cleanup stops the play).
play() {
	local rc

	(cd "$SOURCE_DIR/ansible" &&
		ANSIBLE_HOME=$tmp/ansible-home ANSIBLE_NOCOLOR=1 \
			ANSIBLE_LOCAL_TEMP=$tmp/ansible-local \
			exec timeout 600 ansible-playbook \
			-i "$tmp/inventory/hosts.yml" site.yml) >"$1" 2>&1 &
	play_pid=$!
	wait "$play_pid"
	rc=$?
	play_pid=
	if [ "${KEEP_HOSTS:-0}" = 1 ]; then
		cp "$1" "$hosts/"
	fi
	return "$rc"
}

# recap LOG HOST: the PLAY RECAP line of HOST
recap() {
	grep -E "^$2 +: ok=" "$1"
}

# --- first run ------------------------------------------------------------

step "site.yml, first run"
play "$tmp/play1.log" {hosts_lock}>&-
rc=$?
check_eq "the first run of site.yml succeeds" "$rc" 0
if [ "$rc" -ne 0 ]; then
	{ grep -E -B 2 -A 12 'fatal:|FAILED!|ERROR!' "$tmp/play1.log" ||
		tail -n 40 "$tmp/play1.log"; } | head -n 100
	finish
fi
for h in collector agent-a agent-b standby; do
	check_match "the first run configured $h" "$(recap "$tmp/play1.log" "$h")" \
		"*changed=[1-9]*failed=0*"
done
for root in "$collector" "$agent_a" "$agent_b" "$standby"; do
	host_save_debs "$root"
done

# --- the services, in the roles' order ------------------------------------

# uid_in ROOT USER: the uid of USER in the host ROOT
uid_in() {
	awk -F: -v u="$2" '$1 == u { print $3 }' "$1/etc/passwd"
}

# psql_q SQL: runs SQL in the collector's database as postgres
psql_q() {
	chroot "$collector" setpriv --reuid=postgres --regid=postgres \
		--init-groups -- psql -X -q -A -t -v ON_ERROR_STOP=1 \
		-d fleetbench -c "$1"
}

# standby_q SQL: the same in the standby host
standby_q() {
	chroot "$standby" setpriv --reuid=postgres --regid=postgres \
		--init-groups -- psql -X -q -A -t -v ON_ERROR_STOP=1 \
		-d fleetbench -c "$1"
}

check_eq "PostgreSQL runs in the collector host" \
	"$(psql_q 'SELECT 1')" 1
check_eq "the standby streams from it, synchronously" \
	"$(psql_q "SELECT application_name || ' ' || state || ' ' || sync_state FROM pg_stat_replication")" \
	"standby1 streaming sync"
check_eq "the standby is in recovery, on its own address" \
	"$(standby_q "SELECT pg_is_in_recovery() || ' ' || current_setting('listen_addresses')")" \
	"true $standby_addr"
check_grep "the collector connects to the primary or the standby, whichever takes writes" \
	"$collector/etc/fleetbench/collector.conf" \
	"^dsn = host=$primary_addr,$standby_addr port=5432 dbname=fleetbench user=fleetbench target_session_attrs=read-write\$"
if grep -rqF -- "$db_password" "$collector/etc/fleetbench/collector.conf" \
	"$tmp/play1.log"; then
	not_ok "the database password is in collector.conf or the play's output"
else
	ok
fi
check_eq "the collector's role has no privileges beyond its database" \
	"$(psql_q "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = 'fleetbench'")" \
	"f|f|f|f|f"
check_eq "the collector's role owns the database" \
	"$(psql_q "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'fleetbench'")" \
	fleetbench
check_eq "no other role may connect to the database" \
	"$(psql_q "SELECT has_database_privilege('public', 'fleetbench', 'CONNECT')")" f
check_eq "the migrations are applied" \
	"$(psql_q 'SELECT count(*) FROM schema_migrations')" \
	"$(known_migrations "$SOURCE_DIR/schema")"
check_eq "the access roles exist, and the collector's role is a writer" \
	"$(psql_q "SELECT string_agg(g.rolname || ':' || g.rolcanlogin || ':' || pg_has_role('fleetbench', g.oid, 'MEMBER'), ' ' ORDER BY g.rolname) FROM pg_roles g WHERE g.rolname IN ('fleetbench_reader', 'fleetbench_writer')")" \
	"fleetbench_reader:false:false fleetbench_writer:false:true"
check_eq "serve takes the writer's role" \
	"$(unit_value "$collector/etc/systemd/system/fleetbench-collector.service" Environment)" \
	"PGOPTIONS=-crole=fleetbench_writer"

step "the collector's ExecStart"
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
check_eq "the collector runs as its unprivileged user" \
	"$(ps -o uid= -p "$collector_pid" | tr -d ' ')" \
	"$(uid_in "$collector" fleetbench)"

# ExecReload: what the agent role's handler does after adding keys
kill -HUP "$collector_pid"
for _ in $(seq 50); do
	grep -q 'reloaded the allowlist' "$tmp/collector.log" && break
	sleep 0.1
done
check_grep "the reload reads both agent keys" "$tmp/collector.log" \
	"reloaded the allowlist '/etc/fleetbench/agents': 2 agent keys"

for root in "$agent_a" "$agent_b"; do
	name=${root##*/}
	step "$name's ExecStart (the immediate run)"
	unit_exec "$root" fleetbench-agent.service >"$tmp/$name.out" \
		2>"$tmp/$name.err" {hosts_lock}>&-
	check_eq "$name's run delivers its report (exit status)" "$?" 0
	check_grep "$name's report is committed" "$tmp/$name.err" \
		'committed 1,.* remaining 0'
done

# --- the reports and the allowlist ---------------------------------------

step "the retention service's ExecStart"
unit_exec "$collector" fleetbench-collector-prune.service \
	>"$tmp/prune.out" 2>&1 {hosts_lock}>&-
check_eq "prune --older-than 13months runs on the collector host" "$?" 0
check_grep "and finds nothing that old" "$tmp/prune.out" "^nothing to drop"
check_eq "the prune timer is daily" \
	"$(unit_value "$collector/etc/systemd/system/fleetbench-collector-prune.timer" OnCalendar)" \
	daily

step "checks"
check_eq "both agents' reports are stored under their inventory labels" \
	"$(psql_q "SELECT provider, instance_type, region, machine_id FROM runs ORDER BY provider")" \
	"aws|m6i.large|eu-central-1|$(cat "$agent_b/etc/machine-id")
hetzner|cx22|fsn1|$(cat "$agent_a/etc/machine-id")"
# the query CLI of the package, on the collector host, as the collector's
# (least-privileged) database role
chroot "$collector" setpriv --reuid=fleetbench --regid=fleetbench \
	--init-groups -- fleetbench --dsn 'host=/run/postgresql dbname=fleetbench' \
	--format csv compare >"$tmp/compare.csv" 2>&1
check_eq "fleetbench compare runs on the collector host" "$?" 0
check_grep "fleetbench compare shows agent-a's group" "$tmp/compare.csv" \
	'hetzner,cx22'
check_grep "fleetbench compare shows agent-b's group" "$tmp/compare.csv" \
	'aws,m6i\.large'
check_eq "the standby has both reports too" \
	"$(standby_q "SELECT count(*) FROM runs")" 2
check_eq "the labels come from the config" \
	"$(psql_q "SELECT DISTINCT provider_source || ',' || instance_type_source || ',' || region_source FROM runs")" \
	"config,config,config"

check_eq "the allowlist holds exactly the two agent keys" \
	"$(cd "$collector/etc/fleetbench/agents" && ls -A)" \
	"agent-a.pub
agent-b.pub"
check_eq "agent-a's allowed key is its public key" \
	"$(cat "$collector/etc/fleetbench/agents/agent-a.pub")" \
	"$(cat "$agent_a/etc/fleetbench/agent.pub")"
check_eq "agent-b's allowed key is its public key" \
	"$(cat "$collector/etc/fleetbench/agents/agent-b.pub")" \
	"$(cat "$agent_b/etc/fleetbench/agent.pub")"
check_eq "the agent keys differ" \
	"$(sort -u "$collector"/etc/fleetbench/agents/*.pub | wc -l)" 2
for root in "$agent_a" "$agent_b"; do
	name=${root##*/}
	secret=$(cat "$root/etc/fleetbench/agent.key")
	check_eq "$name's secret key is mode 0600, its user's" \
		"$(stat -c '%a %u' "$root/etc/fleetbench/agent.key")" \
		"600 $(uid_in "$root" fleetbench)"
	if grep -rqF -- "$secret" "$collector/etc" "$collector/var/lib/fleetbench" \
		"$tmp"/play1.log; then
		not_ok "$name's secret key left the host"
	else
		ok
	fi
done
check_eq "the collector's secret key is mode 0600, its user's" \
	"$(stat -c '%a %u' "$collector/etc/fleetbench/keys/collector.key")" \
	"600 $(uid_in "$collector" fleetbench)"
check_eq "agents pin the collector's public key" \
	"$(cat "$agent_a/etc/fleetbench/collector.pub" "$agent_b/etc/fleetbench/collector.pub" | sort -u)" \
	"$(cat "$collector/etc/fleetbench/keys/collector.pub")"

# --- the kernel check at boot ---------------------------------------------

# kernel_in FILE: the kernel_release of a state file
kernel_in() {
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["kernel_release"])' \
		"$1" 2>&1
}

step "agent-a's kernel check (fleetbench-agent-kernel.service)"
state_dir=$agent_a/var/lib/fleetbench/state
state_file=$state_dir/last-delivered.json
check_eq "the state directory is mode 0700, the agent user's" \
	"$(stat -c '%a %u' "$state_dir")" "700 $(uid_in "$agent_a" fleetbench)"
check_grep "agent.conf names the state directory" \
	"$agent_a/etc/fleetbench/agent.conf" '^state_dir = /var/lib/fleetbench/state$'
check_eq "the delivery recorded the running kernel" \
	"$(kernel_in "$state_file")" "$(uname -r)"
runs=$(psql_q 'SELECT count(*) FROM runs')

# after a reboot into the same kernel: nothing to do
unit_exec "$agent_a" fleetbench-agent-kernel.service >"$tmp/kernel1.out" \
	2>"$tmp/kernel1.err" {hosts_lock}>&-
check_eq "the same kernel: the check exits 0" "$?" 0
check_grep "the same kernel: the check says so" "$tmp/kernel1.err" \
	"kernel $(uname -r) unchanged since the last delivered report [0-9a-f-]{36}: nothing to do"
check_eq "the same kernel: no report" "$(psql_q 'SELECT count(*) FROM runs')" \
	"$runs"

# after a roll-out's reboot: the last delivered report names another
# kernel (rewritten in place: the agent's user keeps owning the file)
python3 -c 'import json, sys
with open(sys.argv[1]) as f:
    st = json.load(f)
st["kernel_release"] = "5.10.0-0.test-amd64"
with open(sys.argv[1], "w") as f:
    json.dump(st, f)' "$state_file"
unit_exec "$agent_a" fleetbench-agent-kernel.service >"$tmp/kernel2.out" \
	2>"$tmp/kernel2.err" {hosts_lock}>&-
check_eq "another kernel: the check runs and delivers (exit status)" "$?" 0
check_grep "another kernel: the check names both" "$tmp/kernel2.err" \
	"kernel $(uname -r) .* is not that of the last delivered report .*5\.10\.0-0\.test-amd64"
check_grep "another kernel: its report is committed" "$tmp/kernel2.err" \
	'committed 1,.* remaining 0'
check_eq "another kernel: one more report, agent-a's" \
	"$(psql_q "SELECT count(*) FROM runs WHERE machine_id = '$(cat "$agent_a/etc/machine-id")'")" 2
check_eq "another kernel: the state names the running kernel again" \
	"$(kernel_in "$state_file")" "$(uname -r)"
check_eq "the state directory holds the state and the units' lock only" \
	"$(cd "$state_dir" && ls -A)" "last-delivered.json
run.lock"

# --- second run -----------------------------------------------------------

step "site.yml, second run"
play "$tmp/play2.log" {hosts_lock}>&-
check_eq "the second run of site.yml succeeds" "$?" 0
for h in collector agent-a agent-b standby; do
	check_match "the second run changes nothing on $h" \
		"$(recap "$tmp/play2.log" "$h")" "*changed=0 *failed=0*"
done
# what changed, if anything
awk '/^TASK \[/ { task = $0 } /^changed: / { print task; print }' \
	"$tmp/play2.log" >&2

# --- the units ------------------------------------------------------------

step "systemd-analyze verify"
for unit in "$collector/etc/systemd/system/fleetbench-collector.service" \
	"$collector/etc/systemd/system/fleetbench-collector-prune.service" \
	"$collector/etc/systemd/system/fleetbench-collector-prune.timer" \
	"$agent_a/etc/systemd/system/fleetbench-agent.service" \
	"$agent_a/etc/systemd/system/fleetbench-agent.timer" \
	"$agent_a/etc/systemd/system/fleetbench-agent-kernel.service" \
	"$agent_a/etc/systemd/system/fleetbench-agent-kernel.timer"; do
	root=${unit%/etc/systemd/system/*}
	SYSTEMD_LOG_COLOR=0 systemd-analyze verify --root="$root" \
		"/etc/systemd/system/${unit##*/}" >"$tmp/verify.log" 2>&1
	rc=$?
	check_eq "systemd-analyze verify ${unit##*/}" "$rc" 0
	[ "$rc" -eq 0 ] || cat "$tmp/verify.log" >&2
done
check_eq "the timer has a randomized delay" \
	"$(unit_value "$agent_a/etc/systemd/system/fleetbench-agent.timer" RandomizedDelaySec)" \
	4h
kernel_timer=$agent_a/etc/systemd/system/fleetbench-agent-kernel.timer
check_eq "the kernel check runs after boot" \
	"$(unit_value "$kernel_timer" OnBootSec)" 2min
check_eq "the kernel check has a randomized delay" \
	"$(unit_value "$kernel_timer" RandomizedDelaySec)" 5min
check_eq "the kernel check is enabled by the boot's timers.target" \
	"$(unit_value "$kernel_timer" WantedBy)" timers.target
for svc in fleetbench-agent fleetbench-agent-kernel; do
	file=$agent_a/etc/systemd/system/$svc.service
	check_eq "$svc.service is hardened" \
		"$(grep -cE '^(NoNewPrivileges|ProtectSystem|PrivateTmp)=' "$file")" 3
	check_eq "$svc.service runs as the agent's user" \
		"$(unit_value "$file" User)" fleetbench
	check_eq "$svc.service may write the work, spool and state directories" \
		"$(unit_value "$file" ReadWritePaths)" \
		"/var/lib/fleetbench/work /var/lib/fleetbench/spool /var/lib/fleetbench/state"
done
check_eq "the daily run takes turns with the kernel check" \
	"$(unit_value "$agent_a/etc/systemd/system/fleetbench-agent.service" ExecStart)" \
	"/usr/bin/flock /var/lib/fleetbench/state/run.lock /usr/bin/fleetbench-agent run -c /etc/fleetbench/agent.conf"
check_eq "the kernel check runs --if-kernel-changed, taking turns" \
	"$(unit_value "$agent_a/etc/systemd/system/fleetbench-agent-kernel.service" ExecStart)" \
	"/usr/bin/flock /var/lib/fleetbench/state/run.lock /usr/bin/fleetbench-agent run --if-kernel-changed -c /etc/fleetbench/agent.conf"
check_eq "the collector's service is hardened" \
	"$(grep -cE '^(NoNewPrivileges|ProtectSystem|PrivateTmp)=' "$collector/etc/systemd/system/fleetbench-collector.service")" \
	3

kill -TERM "$collector_pid" 2>/dev/null
wait "$collector_pid" 2>/dev/null
step "done"
finish
