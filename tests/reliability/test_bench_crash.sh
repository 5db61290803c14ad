#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 11: a real `fleetbench-agent run --profile quick` that sends to a
# real collector, with one benchmark's child process (found by its name,
# fb-<benchmark>, and its parent, the agent) killed from outside while it
# runs: once with SIGSEGV (randread, the benchmark of the io_uring SQPOLL
# crash), once with SIGKILL (thp_fault). Each time the agent goes on with
# the next benchmark, exits 4, and delivers the report: the killed
# benchmark's variants "failed" with the signal, every other benchmark ok
# with its samples.
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rel_setup bench-crash a1
start_collector
# ASan's SEGV handler would turn the signal into its own report and exit 1;
# the agent must see what a production build sees: death by SIGSEGV
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"

# the quick profile, less randread's engines' time so the run stays short
# on 2 shared vCPUs; thp_fault, randread and false_sharing run in turn
crash_args=(--profile quick --only thp_fault,randread,false_sharing
	--file-bytes 64M --io-ms 300 --steal-window 0 --provider crash
	--instance-type t1 --dir "$tmp" --json)

# child_of PID NAME: the pid of PID's child process named NAME
child_of() {
	pgrep -P "$1" -x "$2"
}

# crash SIGNAL BENCHMARK: runs the agent, kills BENCHMARK's child with
# SIGNAL as soon as it is seen; sets status (the agent's exit status), out
# and err (its output files) and id (the run id it spooled)
crash() {
	local sig=$1 bench=$2 apid child=

	out=$tmp/crash.$sig.json err=$tmp/crash.$sig.err
	agent_argv a1 run "${crash_args[@]}"
	ledger_snapshot a1
	"${argv[@]}" >"$out" 2>"$err" &
	apid=$!
	# the agent makes the child after the probe and the benchmarks before
	for _ in $(seq 1200); do
		child=$(child_of "$apid" "fb-$bench") && break
		kill -0 "$apid" 2>/dev/null || break
		sleep 0.1
	done
	if [ -n "$child" ]; then
		# past its setup, well before its end: a second was too long
		# for thp_fault on a loaded CI machine (it had ended; the
		# signal found no process)
		sleep 0.2
		kill "-$sig" "$child" ||
			not_ok "$sig: fb-$bench ($child) ended before the signal"
	else
		not_ok "$sig: no process fb-$bench under the agent $apid"
	fi
	wait "$apid"
	status=$?
	cat "$err" >>"$tmp/ledger/a1.log"
	id=$(sed -n 's/.*report \([0-9a-f-]\{36\}\) spooled in .*/\1/p' "$err")
}

# check_report SIGNAL BENCHMARK: the agent-side facts of crash()
check_report() {
	local sig=$1 bench=$2 facts

	check_eq "$sig: the agent exits 4 (done, a benchmark failed)" \
		"$status" 4
	check_match "$sig: the report is spooled" "$id" "*-*-*-*-*"
	check_has "$sig: and stored" "$err" "report $id stored by"
	check_eq "$sig: nothing is left in the spool" "$(spooled a1)" 0
	check_has "$sig: the failure is logged" "$err" \
		"benchmark $bench/"
	# the JSON report: BENCHMARK failed with the signal, the others ok
	facts=$(python3 - "$out" "$bench" "$sig" <<-'EOF'
		import json, sys
		report = json.load(open(sys.argv[1]))
		bench, sig = sys.argv[2], "SIG" + sys.argv[3]
		results = report["bench"]["benchmarks"]
		repeats = report["bench"]["method"]["repeats"]
		def status(r):
		    return ("failed" if "failure" in r else
		            "skipped" if "skip_reason" in r else "ok")
		killed = [r for r in results if r["benchmark"] == bench]
		others = [r for r in results if r["benchmark"] != bench]
		print("killed", len(killed) > 0 and all(
		    status(r) == "failed" and "skip_reason" not in r
		    and sig + " in " + bench in r["failure"]
		    and not r["metrics"] and not r["windows"] for r in killed))
		print("direct", sum(r["failure"].startswith(sig + " in ")
		                    for r in killed) >= 1)
		def cut(r):
		    # fewer rounds than the least, because the benchmark's time
		    # allowance ran out (a loaded machine): said by rounds_cut
		    return any(p.get("key") == "rounds_cut"
		               for p in r.get("parameters", []))
		print("others", len({r["benchmark"] for r in others}) == 2 and all(
		    status(r) == "skipped" or (status(r) == "ok"
		    and r["metrics"] and all(
		        # adaptive (issue 19): the least repeats or more, or
		        # fewer as rounds_cut says; one sample per window
		        (len(m["samples"]) >= repeats
		         or (cut(r) and len(m["samples"]) >= 1))
		        and len(m["samples"]) == len(r["windows"])
		        for m in r["metrics"])) for r in others))
		# what the others were, for the message when they are not ok
		print("others_were", "; ".join(
		    "%s/%s %s, %d windows, samples %s%s%s" % (
		        r["benchmark"], r.get("variant", "?"), status(r),
		        len(r["windows"]),
		        [len(m["samples"]) for m in r["metrics"]],
		        ", rounds cut" if cut(r) else "",
		        ": " + r.get("failure", r.get("skip_reason", ""))
		        if status(r) != "ok" else "")
		    for r in others))
		print("compared", not any(c["benchmark"] == bench
		                          for c in report["bench"]["comparisons"]))
		print("failure", killed[0]["failure"] if killed else "")
	EOF
	)
	check_eq "$sig: $bench's variants failed with $sig" \
		"$(sed -n 's/^killed //p' <<<"$facts")" True
	check_eq "$sig: one variant says it died in it" \
		"$(sed -n 's/^direct //p' <<<"$facts")" True
	# which of them were not, said under the failure
	[ "$(sed -n 's/^others //p' <<<"$facts")" = True ] ||
		echo "  the others: $(sed -n 's/^others_were //p' <<<"$facts")" >&2
	check_eq "$sig: the other benchmarks are ok with every sample" \
		"$(sed -n 's/^others //p' <<<"$facts")" True
	check_eq "$sig: $bench has no comparisons" \
		"$(sed -n 's/^compared //p' <<<"$facts")" True
	figures "kill -$sig of fb-$bench: exit $status, '$(sed -n 's/^failure //p' <<<"$facts")'"
}

# check_stored SIGNAL BENCHMARK: the collector's rows of run $id.
#
# (migration 007, schema/baseline.sql: bench_results.failure, status 'failed')
check_stored() {
	local sig=$1 bench=$2

	check_eq "$sig: the run is stored once" \
		"$(q <<<"SELECT count(*) FROM runs WHERE run_id = '$id'")" 1
	check_eq "$sig: $bench's rows are failed with the signal" "$(q <<-EOF
		SELECT count(*) > 0 AND bool_and(status = 'failed'
			AND failure LIKE '%SIG$sig in $bench%'
			AND skip_reason IS NULL)
		FROM bench_results WHERE run_id = '$id' AND benchmark = '$bench'
	EOF
	)" t
	check_eq "$sig: and have no metrics" "$(q <<-EOF
		SELECT count(*) FROM bench_metrics
		WHERE run_id = '$id' AND benchmark = '$bench'
	EOF
	)" 0
	check_eq "$sig: the other benchmarks' ok rows have their samples" \
		"$(q <<-EOF
		SELECT count(*) = 0 FROM bench_results r
		WHERE r.run_id = '$id' AND r.benchmark <> '$bench'
			AND (r.status NOT IN ('ok', 'skipped')
			OR (r.status = 'ok' AND NOT EXISTS (
				SELECT 1 FROM bench_metrics m
				WHERE m.run_id = r.run_id
					AND m.benchmark = r.benchmark
					AND m.variant = r.variant)))
	EOF
	)" t
}

crash SEGV randread
check_report SEGV randread
segv_id=$id
crash KILL thp_fault
check_report KILL thp_fault
kill_id=$id

id=$segv_id check_stored SEGV randread
id=$kill_id check_stored KILL thp_fault

check_eq "no benchmark child is left" \
	"$(pgrep -x 'fb-randread|fb-thp_fault|fb-false_sharin' -P 1 | wc -l)" 0
check_eq "no file is left in the work directory" \
	"$(find "$tmp" -maxdepth 1 -name '.fleetbench-*' | wc -l)" 0
rel_check_end
finish
