#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fleetbench report on the fleet fixture (fleet_load), opened in headless
# Chromium (Debian's chromium, installed here when missing) through the
# DevTools protocol (report_check.py): no console errors, nothing fetched
# but the file itself, the charts and the capability matrix in the DOM
# with every instance type of the fixture, the open alerts when the
# database has an alerts table. The screenshot and the report are kept in
# BUILD_DIR/tests/integration/artifacts/.
#
# Environment: SOURCE_DIR, BUILD_DIR, FLEETBENCH (the CLI), CHROMIUM
# (default chromium), PYTHON (default /usr/bin/python3: Debian's, with
# python3-websocket), PG_BINDIR; fleet_load's COLLECTOR, AGENT, FLEETGEN.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
CHROMIUM=${CHROMIUM:-chromium}
PYTHON=${PYTHON:-/usr/bin/python3}
artifacts=$BUILD_DIR/tests/integration/artifacts

# Chromium and the DevTools client come from Debian, installed on demand
# (CI runs as root with the apt registry).
if ! command -v "$CHROMIUM" >/dev/null ||
	! "$PYTHON" -c 'import websocket' 2>/dev/null; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "skipped: chromium and python3-websocket are not installed and installing them needs root (apt-get install chromium python3-websocket)"
		exit 77
	fi
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -qq --no-install-recommends chromium \
		python3-websocket >/dev/null 2>&1; then
		apt-get update -qq >/dev/null 2>&1
		apt-get install -y -qq --no-install-recommends chromium \
			python3-websocket >/dev/null 2>&1 ||
			{ echo "FAIL apt-get install chromium python3-websocket" >&2; exit 1; }
	fi
fi
if [ ! -x "$FLEETBENCH" ]; then
	echo "FAIL '$FLEETBENCH' is not built" >&2
	exit 1
fi

tmp_new report
trap 'exit 1' INT TERM HUP
fleet_load

q() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -v ON_ERROR_STOP=1 "$@"
}

types=$(cut -f3 "$fleet_manifest" | sort -u)
check_eq "the fixture has seven instance types" "$(wc -l <<<"$types")" 7

report=$tmp/report.html
"$FLEETBENCH" --dsn "$conninfo" report --out "$report" --title 'Fleet <test>' \
	2>"$tmp/report.err"
check_eq "report exits 0" "$?" 0
check_eq "the report is readable by all" "$(stat -c %a "$report")" 644
check_eq "no temporary file is left" "$(find "$tmp" -maxdepth 1 -name 'report.html.*' | wc -l)" 0

# self-contained: nothing to fetch (the SVG namespace is a name, not a link)
check_eq "no src, href, @import or url() in the report" \
	"$(grep -Eoc '(src|href)=|@import|url\(' "$report")" 0
check_eq "the title is escaped" "$(grep -c '<title>Fleet &lt;test&gt;</title>' "$report")" 1

# check FILE SHOT: report_check.py with the selectors below; JSON in $tmp/check.json
# the headline charts: each headline family's first figure
thp='#thp-chart svg[data-metric="thp_speedup"]'
iouring='#iouring-chart svg[data-metric="iouring_vs_pread"]'
selectors=('svg.chart' '#thp-chart svg.chart' '#iouring-chart svg.chart'
	'#thp-chart svg[data-metric="thp_speedup"]' '#iouring-chart svg[data-metric="iouring_vs_pread"]'
	'#iouring-chart svg[data-metric="sqpoll_vs_iouring"]'
	'#capabilities table.matrix' '#alerts' '#alerts table.alerts tbody tr'
	'#capabilities span.cap.failed'
	'#capabilities tr[data-instance-type="b2-7"] td[data-kernel="6.8.0-49-generic"] span.cap.failed[data-failed="3"]'
	'section.family' '#mmap-section svg.chart' '#membw-section svg.chart'
	'#ioscale-section svg.chart' '#writeback-section svg.chart'
	'#db-section svg.chart' '#ioscale-section svg[data-metric="iouring_knee_depth"]'
	'#db-section g.kernel circle.median' '#db-section g.kernel'
	'#writeback-section p.absent[data-metric="writeback_tuned_vs_host"]')
for t in $types; do
	selectors+=("$thp g.kernel[data-instance-type=\"$t\"]"
		"$iouring g.kernel[data-instance-type=\"$t\"] circle.median"
		"$iouring g.kernel[data-instance-type=\"$t\"] line.ci"
		"#capabilities tr[data-instance-type=\"$t\"] td[data-kernel]")
done
check() {
	if ! "$PYTHON" "$SOURCE_DIR/tests/integration/report_check.py" \
		"$CHROMIUM" "$1" "$2" "${selectors[@]}" >"$tmp/check.json" \
		2>"$tmp/check.err"; then
		not_ok "report_check.py: $(cat "$tmp/check.err")"
		finish
	fi
}
# count SELECTOR: its count in $tmp/check.json
count() {
	q -v j="$(cat "$tmp/check.json")" -v s="$1" <<<"SELECT :'j'::jsonb -> 'counts' ->> :'s'"
}

mkdir -p "$artifacts"
check "$report" "$artifacts/report.png"
cp "$report" "$artifacts/report.html"
echo "screenshot: $artifacts/report.png"
check_eq "no console errors" \
	"$(q -v j="$(cat "$tmp/check.json")" <<<"SELECT :'j'::jsonb -> 'console_errors'")" "[]"
check_eq "the page fetched nothing but itself" \
	"$(q -v j="$(cat "$tmp/check.json")" <<<"SELECT jsonb_array_length(:'j'::jsonb -> 'requests')")" 1
check_eq "twenty charts: THP's four, io_uring's five and issue 15's eleven measured" "$(count 'svg.chart')" 20
check_eq "a section per benchmark family of issue 15" "$(count 'section.family')" 5
check_eq "mmap'd-file reads: the THP and the hugetlb speedup" "$(count '#mmap-section svg.chart')" 2
check_eq "memory bandwidth: triad GB/s, the THP gain, the thread scaling" "$(count '#membw-section svg.chart')" 3
check_eq "I/O scaling: the knee, the best IOPS, depth 32 over 1" \
	"$(count '#ioscale-section svg.chart')|$(count '#ioscale-section svg[data-metric="iouring_knee_depth"]')" "3|1"
check_eq "write-back: p99 and stalls" "$(count '#writeback-section svg.chart')" 2
check_eq "and the tuned over host figure, which no run measured, says so" \
	"$(count '#writeback-section p.absent[data-metric="writeback_tuned_vs_host"]')" 1
# the database ran on the two hetzner types only (--with-database)
check_eq "database: its chart, a median for the kernels that ran it" \
	"$(count '#db-section svg.chart')|$(count '#db-section g.kernel circle.median')|$(count '#db-section g.kernel')" \
	"1|4|14"
check_grep "the knee chart's axis starts at 0, no 'no gain' line" "$report" \
	'data-metric="iouring_knee_depth">
<line class="grid" x1="300.0" y1="0" x2="300.0" y2="[0-9]+"/><text class="tick" x="300.0" y="[0-9]+">0</text>'
check_grep "what changed: the mmap THP speedup lost on m6i.large" "$report" \
	'<td>aws m6i.large</td><td>6.1.0-21-cloud-amd64</td><td>mmap_thp_speedup 1.2'
check_eq "the THP chart, and the family's other three figures" \
	"$(count "$thp")|$(count '#thp-chart svg.chart')" "1|4"
check_eq "the io_uring chart, and the family's other four figures" \
	"$(count "$iouring")|$(count '#iouring-chart svg.chart')" "1|5"
check_eq "SQPOLL's gain among them (a figure declared later, issue 37)" \
	"$(count '#iouring-chart svg[data-metric="sqpoll_vs_iouring"]')" 1
check_eq "the capability matrix" "$(count '#capabilities table.matrix')" 1
for t in $types; do
	check_eq "THP chart: $t on its two kernels" \
		"$(count "$thp g.kernel[data-instance-type=\"$t\"]")" 2
	check_eq "io_uring chart: $t's two medians" \
		"$(count "$iouring g.kernel[data-instance-type=\"$t\"] circle.median")" 2
	# an interval is three lines: the bar and its two ends; b2-7 has none
	if [ "$t" = b2-7 ]; then want=0; else want=6; fi
	check_eq "io_uring chart: $t's intervals" \
		"$(count "$iouring g.kernel[data-instance-type=\"$t\"] line.ci")" "$want"
	check_eq "capability matrix: $t on its two kernels" \
		"$(count "#capabilities tr[data-instance-type=\"$t\"] td[data-kernel]")" 2
done
check_grep "the matrix shows SQPOLL denied on c6i.xlarge's new kernel" "$report" \
	'data-kernel="6.5.0-0.deb12.4-cloud-amd64"><span class="cap yes" data-cap="io_uring">io_uring &#10003;</span><span class="cap no" data-cap="SQPOLL">'
check_eq "the matrix shows one group with failed variants" \
	"$(count '#capabilities span.cap.failed')" 1
check_eq "b2-7's new kernel: io_uring_sqpoll failed in its 3 runs" \
	"$(count '#capabilities tr[data-instance-type="b2-7"] td[data-kernel="6.8.0-49-generic"] span.cap.failed[data-failed="3"]')" 1
check_grep "and says which variant" "$report" \
	'failed in 3 of 3 runs: randread/io_uring_sqpoll \(3\)</span>'
check_grep "what changed: the io_uring gain's collapse" "$report" \
	'<td>gcp n2-standard-2</td><td>6.2.0-1014-gcp</td><td>iouring_vs_pread 2.9'

# open alerts in words: alert_summary's sentences, as the CLI, the hook
# and Alertmanager say them (issue 40)
check_eq "the database's open alerts are listed" \
	"$(count '#alerts table.alerts tbody tr')" \
	"$(q <<<"SELECT count(*) FROM alert_summary WHERE acknowledged_at IS NULL")"
while IFS= read -r sentence; do
	check_has "an alert in words: $sentence" "$report" \
		"<td class=\"summary\">$(sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g' <<<"$sentence")</td>"
done < <(q <<<"SELECT summary FROM alert_summary WHERE acknowledged_at IS NULL")
check_eq "and no raw JSON in the alerts" \
	"$(sed -n '/<section id="alerts">/,/<\/section>/p' "$report" | grep -c -e '<code>{' -e '&quot;after&quot;')" 0

# what to set, as fleetbench advise says it, for each instance type
check_eq "what to set: five topics for each of the seven instance types" \
	"$(grep -c '<tr data-instance-type="[^"]*" data-topic=' "$report")" 35
check_grep "n2-standard-2: not io_uring on the kernel that collapsed its gain" "$report" \
	'data-topic="io"><td>gcp n2-standard-2</td><td>6\.2\.0-1014-gcp</td><td>io</td><td class="summary">libaio, not io_uring'
check_grep "c6i.xlarge: SQPOLL refused" "$report" \
	'data-topic="sqpoll"><td>aws c6i.xlarge</td><td>6\.5\.0-0\.deb12\.4-cloud-amd64</td><td>sqpoll</td><td class="summary">no SQPOLL: the kernel refuses it here'

# the page at a desktop's width and a phone's: the screenshots kept
for px in 1280 390; do
	if ! "$PYTHON" "$SOURCE_DIR/tests/integration/report_check.py" --width=$px \
		"$CHROMIUM" "$report" "$artifacts/report-$px.png" '#alerts' \
		>"$tmp/w$px.json" 2>"$tmp/w$px.err"; then
		not_ok "report_check.py --width=$px: $(cat "$tmp/w$px.err")"
		continue
	fi
	check_eq "at $px px: no console errors" \
		"$(q -v j="$(cat "$tmp/w$px.json")" <<<"SELECT :'j'::jsonb -> 'console_errors'")" "[]"
done
check_eq "at 1280 px the page does not scroll sideways" \
	"$(q -v j="$(cat "$tmp/w1280.json")" <<<"SELECT (:'j'::jsonb ->> 'scroll_width')::int <= (:'j'::jsonb ->> 'client_width')::int")" t
echo "screenshots: $artifacts/report-1280.png $artifacts/report-390.png"

# the method each section shows is said, and another method's runs have a
# section of their own
check_grep "the report says which method its sections show" "$report" \
	'<p class="note" id="methods">The sections show each kernel.s default method \(standard, else its method most run\): <code>full</code>\.</p>'
FLEETGEN=${FLEETGEN:-$BUILD_DIR/tests/fleetgen}
"$FLEETGEN" --spool "$tmp/quick" --seed 11 --host aws-c6i-1 --kernel new \
	--method quick >/dev/null 2>&1 && fleet_send "$tmp/quick"
"$FLEETBENCH" --dsn "$conninfo" report --out "$tmp/methods.html" 2>"$tmp/methods.err"
check_eq "report with a second method exits 0" "$?" 0
check_grep "it points to the other method" "$tmp/methods.html" \
	'The other methods. runs: <a href="#other-methods">Other methods</a>'
check_grep "which has its own section, a row per instance type and kernel" "$tmp/methods.html" \
	'<details class="method" data-method="quick"><summary>method <code>quick</code></summary>'
check_grep "with the runs and each family's first figure" "$tmp/methods.html" \
	'<td>aws c6i.xlarge</td><td>6.5.0-0.deb12.4-cloud-amd64</td><td class="num">[0-9]+</td><td class="num">1\.[0-9]+</td>'

# an empty database still gives a page
q <<<"CREATE DATABASE $(db_sibling_name empty)" >/dev/null
empty=$(db_sibling empty)
"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$empty" >/dev/null 2>&1
"$FLEETBENCH" --dsn "$empty" report --out "$tmp/empty.html" 2>"$tmp/empty.err"
check_eq "report of an empty fleet exits 0" "$?" 0
check_grep "and says there are no runs" "$tmp/empty.html" '<p>No runs yet.</p>'
check_has "and why, on standard error" "$tmp/empty.err" 'the database holds no run yet'
check_eq "and each family says no run measured it" \
	"$(grep -c '<p class="note absent">No run measured' "$tmp/empty.html")" 5
check_grep "the database's says what runs it" "$tmp/empty.html" \
	'the full profile with --with-database, as root'

# the method selection: one no run has gives an empty page; two clash
"$FLEETBENCH" --dsn "$conninfo" report --out "$tmp/none.html" \
	--method standard+iodepth=7 2>"$tmp/none.err"
check_eq "report of a method no run has exits 0" "$?" 0
check_grep "and has no runs" "$tmp/none.html" '<p>No runs yet.</p>'
check_has "and says why on standard error (issue 40)" "$tmp/none.err" \
	'no run of method standard+iodepth=7 in the whole database; methods present: full'
"$FLEETBENCH" --dsn "$conninfo" report --out "$tmp/two.html" \
	--profile quick --all-methods >"$tmp/two.err" 2>&1
check_eq "report with two method selections exits 2" "$?" 2
check_grep "and says why" "$tmp/two.err" "choose one method selection"

"$FLEETBENCH" --dsn "$conninfo" report >"$tmp/noout.err" 2>&1
check_eq "report without --out exits 2" "$?" 2
check_grep "and says why" "$tmp/noout.err" "report needs --out FILE"
"$FLEETBENCH" --dsn "$conninfo" report --out "$tmp/no/such/dir/r.html" >"$tmp/nodir.err" 2>&1
check_eq "an unwritable --out exits 1" "$?" 1
check_grep "and names the file" "$tmp/nodir.err" "cannot write the report '$tmp/no/such/dir/r.html'"

# labels are data, never markup: an instance type holding what HTML and its
# attributes give meaning to (labels refuse only control characters)
evil="x<img src=y onerror=alert(1)>\"&'"
SPOOLGEN=${SPOOLGEN:-$BUILD_DIR/tests/reliability/spoolgen}
"$SPOOLGEN" --spool-dir "$tmp/evil-spool" --count 1 --instance-type "$evil" \
	>/dev/null 2>"$tmp/evil-spoolgen.err" ||
	not_ok "spoolgen: $(cat "$tmp/evil-spoolgen.err")"
fleet_send "$tmp/evil-spool"
check_eq "the report with that instance type is stored" \
	"$(q -v evil="$evil" <<<"SELECT count(*) FROM runs WHERE instance_type = :'evil'")" 1
"$FLEETBENCH" --dsn "$conninfo" report --out "$tmp/evil.html" 2>"$tmp/evil.err"
check_eq "report with an instance type full of markup exits 0" "$?" 0
check_match "the instance type shows up, escaped" \
	"$(grep -c 'x&lt;img src=y onerror=alert(1)&gt;' "$tmp/evil.html")" '[1-9]*'
check_eq "never as markup" "$(grep -c '<img' "$tmp/evil.html")" 0

finish
