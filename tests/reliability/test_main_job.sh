#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 14 of docs/reliability.md: the main job as users run it from a timer,
# `fleetbench-agent run --profile quick` delivering to a real collector, 5
# times in a row (200 with FLEETBENCH_LONG=1: the soak; MAIN_JOB_RUNS=N
# sets any count). Every run must exit 0 without a signal, a core or a
# sanitizer report; each leaves its spool and its work directory empty;
# at the end exactly that many runs of this host are stored, and the end
# check holds. A failing run's standard error is printed.
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

runs=5
[ "$long" = 1 ] && runs=200
runs=${MAIN_JOB_RUNS:-$runs}
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
	not_ok "MAIN_JOB_RUNS='$runs' is not a positive number"
	finish
fi
# One run may take this long before it counts as hung: ten times what the
# quick profile promises (30 s), for the ASan build on a loaded machine.
limit=300

rel_setup main-job m1
start_collector
work=$tmp/work
cwd=$tmp/cwd
mkdir -p "$work" "$cwd"
# The user's command line: the defaults (send timeout, retries, backoff,
# probe steal window), only the paths are the test's.
argv=("$AGENT" run --profile quick --provider main-job --instance-type soak
	--dir "$work" --spool-dir "$tmp/spool.m1" --state-dir "$tmp/state.m1"
	--endpoint "$endpoint"
	--server-key "$keys/collector.pub" --agent-key "$keys/m1.key")

# leftovers DIR: the entries under DIR, a few of them, on one line
leftovers() {
	find "$1" -mindepth 1 2>/dev/null | head -n 5 | tr '\n' ' '
}

# signal_name STATUS: "SIGSEGV" for 139, and so on; empty below 129
signal_name() {
	[ "$1" -gt 128 ] && echo "SIG$(kill -l $(($1 - 128)) 2>/dev/null)"
}

# because REASON: adds it to why, the reasons a run failed
because() {
	why=${why:+$why, }$1
}

sanitizer_report='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: [A-Za-z]*Sanitizer'

# The cache each run sees (issue 36): the host's own, then a fake L3 of
# 480 MiB and of 1 GiB (an Intel Xeon guest's sysfs says 480 MiB, where the
# quick profile took 55 s when membw sized its arrays from it; 3D V-Cache
# parts and Xeon 6 have 0.5-1 GiB), bind-mounted over cpu0's cache
# directory in a private mount namespace, or, on a guest without cache
# directories (the EPYC's), over a copy of cpu0's directory with one added.
# The profile's budget must hold whatever the cache.
llcs=(host 480M 1G)
if [ "$(id -u)" -ne 0 ]; then
	echo "the fake 480M and 1G L3 runs need root (unshare -m, mount): every run sees the host's cache"
	llcs=(host)
fi
cpu0=/sys/devices/system/cpu/cpu0
# fake_cpu0 SIZE: prints SRC DST for the bind mount of a fake L3 of SIZE
fake_cpu0() {
	local dir=$tmp/llc-$1 cache=$tmp/llc-$1 dst=$cpu0/cache
	if [ ! -d "$cpu0/cache" ]; then
		cache=$dir/cache dst=$cpu0
	fi
	if [ ! -d "$cache/index1" ]; then
		# cpu0's other files, when its whole directory is covered
		[ "$dst" = "$cpu0" ] && mkdir -p "$dir" &&
			cp -r "$cpu0/." "$dir/" 2>/dev/null
		# an L1d and the L3, whatever the host had
		cache_index "$cache/index0" 1 Data 48K 0
		cache_index "$cache/index1" 3 Unified "$1" "0-$(($(nproc) - 1))"
	fi
	echo "$dir $dst"
}
# cache_index DIR LEVEL TYPE SIZE CPUS: one sysfs cache index
cache_index() {
	mkdir -p "$1"
	echo "$2" >"$1/level"
	echo "$3" >"$1/type"
	echo "$4" >"$1/size"
	echo "$5" >"$1/shared_cpu_list"
}
# llc_prefix LLC: sets prefix, the command line that runs a command with
# that cache (host: none)
llc_prefix() {
	local src dst
	prefix=()
	[ "$1" = host ] && return
	read -r src dst < <(fake_cpu0 "$1")
	prefix=(unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
		sh "$src" "$dst")
}
# bytes SIZE: 480M as bytes
bytes() {
	numfmt --from=iec "$1"
}

# The quick profile's budget (docs/bench.md), checked from what the run
# reported it cost, as the collector stored it (run_costs, runs): a
# sanitizer build is no product and runs slower, so there only the cost
# is required, not the budget.
budget_s=30
costs=()
# run_budget I LLC: run I's cost within the budget, and the cache it saw
run_budget() {
	local id total wall seen
	id=$(q <<<"SELECT run_id FROM runs WHERE provider = 'main-job'
		ORDER BY started_at DESC LIMIT 1")
	total=$(q <<<"SELECT wall_s FROM run_costs
		WHERE run_id = '$id' AND benchmark = 'total'")
	wall=$(q <<<"SELECT extract(epoch FROM finished_at - started_at)
		FROM runs WHERE run_id = '$id'")
	check_match "run $1 ($2 LLC): it reported its benchmarks' cost" \
		"$total" '[0-9]*.[0-9]*'
	costs+=("${total%.*}/${wall%.*} s ($2)")
	if ! asan_built "$AGENT"; then
		check_eq "run $1 ($2 LLC): benchmarks ${total:-?} s, run ${wall:-?} s, within quick's $budget_s s" \
			"$(awk -v t="${total:-999}" -v w="${wall:-999}" \
				-v b="$budget_s" 'BEGIN { print (t <= b && w <= b) }')" 1
	fi
	[ "$2" = host ] && return
	seen=$(q <<<"SELECT parameters->>'llc_bytes' FROM bench_results
		WHERE run_id = '$id' AND benchmark = 'membw'
		AND variant = '4k_1t'")
	check_eq "run $1: membw saw the fake $2 L3" "$seen" "$(bytes "$2")"
}

crashes=0 ms_all=() statuses=()
for i in $(seq "$runs"); do
	llc=${llcs[$(((i - 1) % ${#llcs[@]}))]}
	err=$tmp/run.$i.err
	ledger_snapshot m1
	start=$(date +%s%N)
	# in its own directory, with cores allowed: core_pattern 'core' puts
	# them there
	llc_prefix "$llc"
	(cd "$cwd" && ulimit -c unlimited &&
		exec timeout -k 10 "$limit" "${prefix[@]}" "${argv[@]}") \
		>/dev/null 2>"$err"
	status=$?
	ms_all+=($((($(date +%s%N) - start) / 1000000)))
	cat "$err" >>"$tmp/ledger/m1.log"
	why=
	[ "$status" -ne 0 ] && because "exit status $status"
	[ "$status" -eq 124 ] && because "hung: killed after $limit s"
	sig=$(signal_name "$status")
	[ -n "$sig" ] && because "killed by $sig"
	grep -qE "$sanitizer_report" "$err" && because "a sanitizer report"
	cores=$(leftovers "$cwd")
	[ -n "$cores" ] && because "left ${cores% }"
	if [ -n "$why" ]; then
		crashes=$((crashes + 1))
		statuses+=("$status")
		not_ok "run $i of $runs: $why; its standard error:"
		sed 's/^/    /' "$err" >&2
		rm -rf "${cwd:?}"/*
	fi
	check_eq "run $i: the spool is empty" \
		"$(find "$tmp/spool.m1" -type f 2>/dev/null | head -n 5 |
			tr '\n' ' ')" ""
	check_eq "run $i: the work directory is empty" "$(leftovers "$work")" ""
	run_budget "$i" "$llc"
	# the next run starts in an empty one, as the first did
	rm -rf "${work:?}"/*
	if ! kill -0 "$pid" 2>/dev/null; then
		not_ok "run $i: the collector is gone: $(tail -n 5 "$log")"
		pid=
		break
	fi
done
# the collector's memory after the soak, in KiB: now and at its peak
read -r rss hwm < <(awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 }
	END { print r, h }' "/proc/${pid:-0}/status" 2>/dev/null)

stored=$(q <<-EOF
	SELECT count(DISTINCT run_id) FROM runs
	WHERE hostname = '$(cat /proc/sys/kernel/hostname)'
		AND provider = 'main-job'
EOF
)
check_eq "exactly $runs runs of this host are stored" "$stored" "$runs"
# the quick profile's own method, as the agent names it (issue 12)
check_eq "and every one is of the method quick" "$(q <<-EOF
	SELECT string_agg(DISTINCT method, ',') FROM runs
	WHERE provider = 'main-job'
EOF
)" quick
# the quick profile's sizes of issue 15's benchmarks, stored typed
check_eq "its methods row holds the quick sizes of the newer benchmarks" \
	"$(q <<<"SELECT mmap_bytes, mmap_accesses, bw_bytes, wb_bytes, wb_fsync_bytes, scaling_ms FROM methods WHERE key = 'quick'")" \
	"67108864|2000000|46137344|67108864|16777216|200"
check_eq "the runs exit 0, none crashes" "$crashes" 0
check_eq "no sanitizer report from the collector" \
	"$(grep -cE "$sanitizer_report" "$log")" 0

# min, median and max of the runs' wall times, in seconds
wall=$(printf '%s\n' "${ms_all[@]}" | sort -n | awk '{ t[NR] = $1 / 1000 }
	END { printf "%.1f / %.1f / %.1f s", t[1], t[int((NR + 1) / 2)], t[NR] }')
figures "main job: ${#ms_all[@]} of $runs quick runs sending to the collector: $crashes crashed${statuses[*]:+ (exit statuses ${statuses[*]})}, $stored stored; spool and work directory empty after each; wall per run min / median / max $wall; benchmarks / run as reported per run (LLC): ${costs[*]}; collector RSS ${rss:-?} KiB (peak ${hwm:-?} KiB)"
rel_check_end
if [ -n "$pid" ]; then
	stop_collector
	check_eq "the collector exits 0" "$?" 0
fi
finish
