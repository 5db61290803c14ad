#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What people read (issue 40), on the fleet fixture (fleet_load): compare,
# compare --figures io, rank, kernels and alerts run in a real terminal
# (tmux, 100 columns) show rows that do not wrap, their screens kept in
# BUILD_DIR/tests/integration/artifacts/screens/; every command's empty
# answer says why and what to do, on standard error, exit 0; and advise
# says what the fixture's figures imply, each checked against the runs'
# own values.
#
# Environment: SOURCE_DIR, BUILD_DIR, FLEETBENCH (the CLI), PG_BINDIR;
# fleet_load's COLLECTOR, AGENT, FLEETGEN.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
artifacts=$BUILD_DIR/tests/integration/artifacts/screens
if [ ! -x "$FLEETBENCH" ]; then
	not_ok "'$FLEETBENCH' is not built"
	finish
fi
if ! command -v tmux >/dev/null; then
	not_ok "tmux is not installed (scripts/deps installs it)"
	finish
fi

tmp_new reading
trap 'exit 1' INT TERM HUP
fleet_load
sock=$tmp/tmux.sock
on_cleanup() {
	tmux -S "$sock" kill-server 2>/dev/null
}

# the CLI as a user in the terminal runs it
cat >"$tmp/fb" <<EOF
#!/bin/sh
exec "$FLEETBENCH" --dsn "$conninfo" "\$@"
EOF
chmod +x "$tmp/fb"

# screen NAME ARGS...: `fb ARGS` in a terminal of 100 columns; its screen
# (wrapped lines joined: the lines as printed) in $artifacts/NAME.txt
screen() {
	local name=$1 tries=100
	shift
	rm -f "$tmp/done"
	tmux -S "$sock" new-session -d -x 100 -y 60 -s "$name" \
		"$tmp/fb $*; echo \$? >$tmp/done; sleep 600"
	while [ ! -s "$tmp/done" ] && [ $tries -gt 0 ]; do
		sleep 0.1
		tries=$((tries - 1))
	done
	check_eq "$name: exits 0 in the terminal" "$(cat "$tmp/done" 2>/dev/null)" 0
	tmux -S "$sock" capture-pane -p -J -t "$name" >"$artifacts/$name.txt"
	tmux -S "$sock" capture-pane -p -t "$name" >"$tmp/$name.raw"
	tmux -S "$sock" kill-session -t "$name"
	# trailing blanks are the terminal's, not the output's
	sed -i 's/ *$//' "$artifacts/$name.txt"
	check_eq "$name: no line is wider than the terminal" \
		"$(($(LC_ALL=C.UTF-8 wc -L <"$artifacts/$name.txt") <= 100))" 1
	check_eq "$name: no row wrapped (the screen's lines are the printed lines)" \
		"$(grep -c . "$tmp/$name.raw")" "$(grep -c . "$artifacts/$name.txt")"
}

mkdir -p "$artifacts"
screen compare compare
check_grep "compare: the rows of the fleet" "$artifacts/compare.txt" \
	'^gcp +n2-standard-2 +6\.2\.0-1014-gcp +3 +9 +no +1\.[0-9]+ ±[0-9]+%'
screen compare-io compare --figures io
check_grep "compare --figures io: io_uring's figures" "$artifacts/compare-io.txt" \
	'vs_pread +vs_libaio'
screen rank rank --metric iouring_vs_pread
check_grep "rank: the best type first" "$artifacts/rank.txt" '^iouring_vs_pread +1 '
screen kernels kernels --provider gcp --instance-type n2-standard-2
check_grep "kernels: the pair of kernels" "$artifacts/kernels.txt" \
	'^gcp n2-standard-2, method full: 5\.15\.0-1042-gcp -> 6\.2\.0-1014-gcp$'
# the collapsed io_uring gain as fleet_kernels_delta() computes it
want=$(qn <<-'EOF'
	SELECT format('%s%% \[%s, %s\]', round(change * 100), round(change_lo * 100),
		      round(change_hi * 100))
	FROM fleet_kernels_delta('{"provider": "gcp", "instance_type": "n2-standard-2"}')
	WHERE figure = 'iouring_vs_pread'
EOF
)
check_grep "kernels: a line per figure, benchstat's: old, new, the change with its interval, q, runs" \
	"$artifacts/kernels.txt" \
	"^iouring_vs_pread +x +3\.00 ±1% +1\.10 ±2% +$want +<0\.001 +9\+9\$"
check_grep "kernels: ~ where nothing changed" "$artifacts/kernels.txt" \
	'^thp_speedup +x +1\.30 ±2% +1\.31 ±2% +~ +0\.[0-9]{3} +9\+9$'
"$tmp/fb" kernels --provider aws --instance-type c6i.xlarge >"$tmp/k.txt" 2>&1
check_grep "kernels: the capability change in words above the figures" "$tmp/k.txt" \
	'^  SQPOLL permitted 100% -> 0% of runs$'
check_grep "kernels: a figure the new kernel no longer measures" "$tmp/k.txt" \
	'^sqpoll_vs_iouring +x +0\.849 ±3% +- +not measured +- +9\+0$'
"$tmp/fb" kernels --provider aws --instance-type c6i.xlarge --wide >"$tmp/kw.txt" 2>&1
check_grep "kernels --wide: a row per kernel, as before" "$tmp/kw.txt" \
	'^aws +c6i\.xlarge +6\.5\.0-0\.deb12\.4-cloud-amd64 +3 +9 +f +1\.383 \['
screen alerts alerts
check_grep "alerts: the sentence under its row" "$artifacts/alerts.txt" \
	'^    io_uring/pread gain decreased by a median 64%'
echo "screens: $artifacts"

# --- empty answers: a sentence on standard error, exit 0 -------------------

# empty NAME SENTENCE ARGS...: `fb ARGS` prints a table without a row and
# SENTENCE (verbatim) on standard error, exit 0
empty() {
	local name=$1 want=$2
	shift 2
	"$tmp/fb" "$@" >"$tmp/empty.out" 2>"$tmp/empty.err"
	check_eq "$name: exit 0" "$?" 0
	check_grep "$name: the table has no row" "$tmp/empty.out" '^\(0 rows\)$'
	check_has "$name: says why" "$tmp/empty.err" "$want"
}
empty "compare of a method not run" \
	'no run of method standard in the whole database; methods present: full (114 runs); add --method full' \
	compare --profile standard
empty "compare of nothing" \
	'no run matches provider=nope; the database holds 114 runs of 7 instance types' \
	compare --where provider=nope
want=$(qn <<<"SELECT count(*) FROM run_figures WHERE instance_type = 'b2-7' AND kernel_release = '6.8.0-49-generic'")
empty "rank with too few runs" \
	"rank needs at least 6 runs of an instance type that measured thp_speedup; instance_type=b2-7, kernel=6.8.0-49-generic has 1 type with $want runs" \
	rank --metric thp_speedup --where instance_type=b2-7 --where kernel=6.8.0-49-generic
empty "rank of a figure nobody measured" \
	'provider=aws has no run that measured it' \
	rank --metric hugetlb_1g_speedup --where provider=aws
empty "kernels of an unknown type" \
	'no run matches instance_type=m7.huge, provider=aws; instance types of provider=aws: c6i.xlarge (18 runs), m6i.large (18 runs)' \
	kernels --provider aws --instance-type m7.huge
empty "alerts since the future" \
	'no alert matches since 2030-01-01 00:00:00+00; 4 alerts in all' \
	alerts --since 2030-01-01
empty "prices without a price" 'no price is stored: fleetbench prices import FILE.csv' \
	prices list
"$tmp/fb" gate --kernel 9.9.9 >/dev/null 2>"$tmp/gate.err"
check_eq "gate of a kernel nobody runs: waiting (3)" "$?" 3
check_grep "and says so" "$tmp/gate.err" "no host has reported from kernel '9.9.9' yet: waiting"
"$tmp/fb" compare --where provider=nope --format csv >"$tmp/csv.out" 2>"$tmp/csv.err"
check_eq "CSV stays the bare header, nothing on standard error" \
	"$(wc -l <"$tmp/csv.out")|$(wc -c <"$tmp/csv.err")" "1|0"

# --- advise: what the fixture's figures imply, computed here from its runs

# check_re NAME VALUE REGEX: VALUE matches the extended regular expression
check_re() {
	if [[ $2 =~ $3 ]]; then
		ok
	else
		not_ok "$1: got '$2', expected it to match /$3/"
	fi
}

# advice PROVIDER TYPE TOPIC [ARGS...]: "advice | sure | evidence" of the
# row of TOPIC in `advise --format json`
advice() {
	"$tmp/fb" advise --provider "$1" --instance-type "$2" --format json "${@:4}" |
		/usr/bin/python3 -c 'import json, sys
rows = json.load(sys.stdin)
print("\n".join(r["advice"] + " | " + r["sure"] + " | " + r["evidence"]
		for r in rows if r["topic"] == sys.argv[1]))' "$3"
}
# runs' values of FIGURE of TYPE on KERNEL: "n min max"
values() {
	qn <<<"SELECT count(*), min(value), max(value) FROM run_figure_values
	       WHERE instance_type = '$1' AND kernel_release = '$2' AND figure = '$3'"
}

# n2-standard-2's new kernel: every run's io_uring is slower than its libaio
read -r n lo hi <<<"$(values n2-standard-2 6.2.0-1014-gcp iouring_vs_libaio | tr '|' ' ')"
check_eq "the fixture: io_uring under libaio in each of n2-standard-2's $n runs on 6.2" \
	"$(awk -v h="$hi" 'BEGIN { print (h < 1) }')" 1
a=$(advice gcp n2-standard-2 io)
check_re "advise: not io_uring on the kernel that collapsed its gain ($a)" "$a" \
	'^libaio, not io_uring: .* \| measured beyond noise \| io_uring over libaio 0\.3[0-9]+ \[.*the gain over pread fell with this kernel'
a=$(advice gcp n2-standard-2 io --kernel 5.15.0-1042-gcp)
check_re "advise --kernel: on the kernel before, io_uring ($a)" "$a" '^io_uring: it beats libaio'

# c6i.xlarge's new kernel: SQPOLL refused in every run
check_eq "the fixture: SQPOLL EPERM in every run of c6i.xlarge on 6.5" \
	"$(qn <<<"SELECT count(*) FILTER (WHERE sqpoll = 'EPERM') || '/' || count(*) FROM runs
		  WHERE instance_type = 'c6i.xlarge' AND kernel_release = '6.5.0-0.deb12.4-cloud-amd64'")" 9/9
a=$(advice aws c6i.xlarge sqpoll)
check_re "advise: SQPOLL is refused ($a)" "$a" \
	'^no SQPOLL: the kernel refuses it here \| measured \| .*failed with EPERM in every run'

# ccx23's new kernel: the database's p99 worse under always in every run
read -r n lo hi <<<"$(values ccx23 6.1.0-21-amd64 db_p99_always_vs_never | tr '|' ' ')"
check_eq "the fixture: p99 under always above never in each of ccx23's $n runs on 6.1.0-21" \
	"$(awk -v l="$lo" 'BEGIN { print (l > 1) }')" 1
a=$(advice hetzner ccx23 thp)
check_re "advise: not always, the database's p99 is worse under it ($a)" "$a" \
	'^madvise, not always: the database.s p99 is worse under always \| measured beyond noise \| database p99 under THP always over never 1\.[0-9]+'

# cx22: THP never granted
read -r n lo hi <<<"$(values cx22 6.1.0-21-amd64 thp_huge_fraction | tr '|' ' ')"
check_eq "the fixture: no huge page in any of cx22's $n runs" "$hi" 0
check_re "advise: THP never granted, the mode changes nothing" "$(advice hetzner cx22 thp)" \
	'^never \(or madvise\): THP is never granted here'

# b2-7: three runs a kernel, too few to say
check_re "advise: too few runs, it cannot say yet" "$(advice ovh b2-7 io)" \
	'^cannot say yet \| too few runs for an interval'
"$tmp/fb" advise --provider aws --instance-type c6i.xlarge >"$tmp/advise.txt" 2>&1
check_grep "advise's table: the kernel said once" "$tmp/advise.txt" '^kernel: 6\.5\.0-0\.deb12\.4-cloud-amd64$'
check_grep "and the advice under its topic" "$tmp/advise.txt" '^    advice: no SQPOLL: the kernel refuses it here$'
check_eq "advise's table fits 100 characters" "$(($(LC_ALL=C.UTF-8 wc -L <"$tmp/advise.txt") <= 100))" 1
empty "advise of an unknown type" \
	'no run matches instance_type=m7.huge, provider=aws; instance types of provider=aws: c6i.xlarge (18 runs), m6i.large (18 runs)' \
	advise --provider aws --instance-type m7.huge
"$tmp/fb" advise --provider aws >/dev/null 2>"$tmp/advise.err"
check_eq "advise without --instance-type: exit 2" "$?" 2

finish
