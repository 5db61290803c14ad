#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fleetbench-agent run --textfile-dir for node_exporter (docs/agent.md,
# "node_exporter textfile"): a directory that is missing or not a directory
# is refused before the run, naming it; a quick run with textfile_dir in
# agent.conf writes DIR/fleetbench.prom (0644, nothing else left in DIR)
# that promtool finds clean; the real node_exporter with only its textfile
# collector serves it without a scrape error, with the run's figures
# (medians of the samples the run printed with --json), failed and skipped
# variants, comparisons and capabilities, under host labels that keep
# quotes and backslashes (tests/integration/textfile_check.py); a second
# run replaces the file and node_exporter serves the new run alone.
#
# Environment: SOURCE_DIR, AGENT, NODE_EXPORTER
# (/usr/bin/prometheus-node-exporter), PROMTOOL (/usr/bin/promtool).
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NODE_EXPORTER=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
PROMTOOL=${PROMTOOL:-/usr/bin/promtool}
check_py=$SOURCE_DIR/tests/integration/textfile_check.py
require_built "$AGENT" "$NODE_EXPORTER" "$PROMTOOL"

tmp_new textfile
trap 'exit 1' INT TERM HUP

ne_pid=
# shellcheck disable=SC2317 # called by harness_cleanup
on_cleanup() {
	if [ -n "$ne_pid" ]; then
		kill -TERM "$ne_pid" 2>/dev/null
		wait "$ne_pid" 2>/dev/null
	fi
}

dir=$tmp/textfile
mkdir -p "$dir" "$tmp/work"
common=(--spool-dir "$tmp/spool" --state-dir "$tmp/state" --dir "$tmp/work"
	--steal-window 0)
provider='test "cloud" \ one'
instance_type='tf.small'

# --- a bad directory: refused before the run -------------------------------

touch "$tmp/plain"
for bad in "$tmp/missing:No such file or directory" \
	"$tmp/plain:Not a directory"; do
	path=${bad%%:*}
	why=${bad#*:}
	start=$SECONDS
	"$AGENT" run --profile quick "${common[@]}" --json \
		--textfile-dir "$path" >"$tmp/bad.out" 2>"$tmp/bad.err"
	check_eq "run --textfile-dir $path: exit status" "$?" 1
	check_has "the error names $path" "$tmp/bad.err" "'$path'"
	check_has "the error says why for $path" "$tmp/bad.err" "$why"
	# before the run: no probe, no benchmark, nothing printed
	check_eq "nothing ran for $path" "$(wc -c <"$tmp/bad.out")" 0
	check_eq "refused at once for $path" "$((SECONDS - start < 5))" 1
done
check_eq "nothing made in the missing directory" \
	"$(test -e "$tmp/missing" && echo yes || echo no)" no

# --- a quick run with textfile_dir in agent.conf ---------------------------

cat >"$tmp/agent.conf" <<EOF
[agent]
textfile_dir = $dir
EOF
since=$(date +%s)
"$AGENT" run --config "$tmp/agent.conf" --profile quick "${common[@]}" \
	--provider "$provider" --instance-type "$instance_type" --json \
	>"$tmp/run.json" 2>"$tmp/run.err"
status=$?
# 4: a benchmark failed; its variants are then in the file as failed
check_match "quick run: exit status (0, or 4 for a failed benchmark)" \
	"$status" "[04]"
check_has "the run says where it wrote" "$tmp/run.err" \
	"written to $dir/fleetbench.prom"
check_eq "only fleetbench.prom in the directory" "$(ls -A "$dir")" \
	fleetbench.prom
check_eq "mode 0644: node_exporter runs as another user" \
	"$(stat -c %a "$dir/fleetbench.prom")" 644
if lint=$("$PROMTOOL" check metrics <"$dir/fleetbench.prom" 2>&1); then
	check_eq "promtool check metrics says nothing" "$lint" ""
else
	not_ok "promtool check metrics: $lint"
fi

# --- node_exporter serves it -----------------------------------------------

# start_node_exporter: on a free loopback port (another process may take
# the port between the probe and the bind: tried three times); sets port
start_node_exporter() {
	local try

	for try in 1 2 3; do
		port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$port" \
			--collector.disable-defaults --collector.textfile \
			--collector.textfile.directory="$dir" \
			2>"$tmp/node_exporter.$try.log" &
		ne_pid=$!
		if wait_for 10 curl -fsS -o /dev/null \
			"http://127.0.0.1:$port/metrics"; then
			return 0
		fi
		kill -TERM "$ne_pid" 2>/dev/null
		wait "$ne_pid" 2>/dev/null
		ne_pid=
	done
	not_ok "node_exporter did not start: $(cat "$tmp/node_exporter.3.log")"
	finish
}

start_node_exporter
curl -fsS "http://127.0.0.1:$port/metrics" >"$tmp/metrics.txt" ||
	not_ok "curl /metrics"
check_grep "node_exporter read the file" "$tmp/metrics.txt" \
	"^node_textfile_mtime_seconds\{file=\"([^\"]*/)?fleetbench.prom\"\} "
check_grep "no textfile scrape error" "$tmp/metrics.txt" \
	'^node_textfile_scrape_error 0$'
if out=$(python3 "$check_py" "$tmp/run.json" "$tmp/metrics.txt" \
	"$provider" "$instance_type" "$since"); then
	ok
else
	not_ok "node_exporter's series against the run: $out"
fi
echo "${out##*$'\n'}"

# --- a second run replaces the file ----------------------------------------

since=$(date +%s)
"$AGENT" run --config "$tmp/agent.conf" --profile quick \
	--only false_sharing "${common[@]}" --provider "$provider" \
	--instance-type "$instance_type" --json >"$tmp/run2.json" \
	2>"$tmp/run2.err"
check_match "second run: exit status" "$?" "[04]"
check_eq "still only fleetbench.prom in the directory" "$(ls -A "$dir")" \
	fleetbench.prom
curl -fsS "http://127.0.0.1:$port/metrics" >"$tmp/metrics2.txt" ||
	not_ok "curl /metrics after the second run"
check_grep "no textfile scrape error after the second run" \
	"$tmp/metrics2.txt" '^node_textfile_scrape_error 0$'
if out=$(python3 "$check_py" "$tmp/run2.json" "$tmp/metrics2.txt" \
	"$provider" "$instance_type" "$since"); then
	ok
else
	not_ok "node_exporter's series against the second run: $out"
fi
echo "${out##*$'\n'}"

# --- the spool and the textfile have the run's one report -----------------

"$AGENT" run --config "$tmp/agent.conf" --profile quick \
	--only false_sharing "${common[@]}" --provider "$provider" \
	--instance-type "$instance_type" --no-send >/dev/null 2>"$tmp/run3.err"
check_match "third run (--no-send): exit status" "$?" "[04]"
spooled=$(ls "$tmp/spool"/*.fbr 2>/dev/null | head -1)
"$AGENT" show "$spooled" >"$tmp/spooled.json" 2>/dev/null ||
	not_ok "fleetbench-agent show $spooled"
# the same object, not one built again later: the same end, to the ms
if out=$(/usr/bin/python3 - "$dir/fleetbench.prom" "$tmp/spooled.json" <<'PY'
import json, sys
prom, report = sys.argv[1], json.load(open(sys.argv[2]))
end = int(report["finished_unix_ms"]) / 1000.0
for line in open(prom):
    if line.startswith("fleetbench_last_run_timestamp_seconds{"):
        got = float(line.split()[-1])
        sys.exit(0 if abs(got - end) < 1e-6 else
                 "textfile %.3f, spooled report %.3f" % (got, end))
sys.exit("no fleetbench_last_run_timestamp_seconds")
PY
); then
	ok
else
	not_ok "the textfile's run ended when the spooled report's did: $out"
fi

finish
