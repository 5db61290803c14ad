#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fleetbench compare, rank and kernels on the fleet fixture (fleet_load:
# tests/fixtures/README.md), delivered through the real collector: what
# they answer about the fixture's known distributions, that the CLI and
# the views give the same bytes, that the summary kept for speed gives what
# run_figures gives, and that bad options are refused with their reason.
#
# Environment: SOURCE_DIR, BUILD_DIR (the build tree, default
# SOURCE_DIR/build), FLEETBENCH (the CLI, default under BUILD_DIR),
# PG_BINDIR; fleet_load's COLLECTOR, AGENT and FLEETGEN.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
if [ ! -x "$FLEETBENCH" ]; then
	not_ok "'$FLEETBENCH' is not built"
	finish
fi

tmp_new queries
trap 'exit 1' INT TERM HUP
fleet_load

# q: runs SQL from stdin, prints unaligned rows
q() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -v ON_ERROR_STOP=1 "$@"
}

# qcsv SQL: the query as psql --csv prints it
qcsv() {
	"$PG_BINDIR/psql" "$conninfo" -X -q --csv -v ON_ERROR_STOP=1 -c "$1"
}

fb() {
	"$FLEETBENCH" --dsn "$conninfo" "$@"
}

# field CSV_FILE KEY_COLUMNS... COLUMN: prints COLUMN of each row, after
# its key columns, as "key|key|value" lines
field() {
	local file=$1
	shift
	awk -F, -v want="$*" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; n = split(want, w, " "); next }
		{ line = ""; for (i = 1; i <= n; i++) line = line (i > 1 ? "|" : "") $col[w[i]]; print line }
	' "$file"
}

# in_range NAME VALUE LO HI
in_range() {
	if awk -v v="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(v != "" && v >= lo && v <= hi) }'; then
		ok
	else
		not_ok "$1: $2 is not in [$3, $4]"
	fi
}

check_eq "the fleet is delivered" "$(q <<<"SELECT count(*) FROM runs")" 114
check_eq "run_figures holds every run as run_figures_live computes it" \
	"$(q <<-EOF
	SELECT (SELECT count(*) FROM run_figures),
	       (SELECT count(*) FROM (SELECT * FROM run_figures_live
				      EXCEPT SELECT * FROM run_figures) AS x)
EOF
)" "114|0"

check_eq "fleet_dirty holds each changed instance type and kernel once for each level" \
	"$(q <<-EOF
	SELECT count(*), count(DISTINCT (provider, instance_type, kernel_release)),
	       count(*) FILTER (WHERE level = 2), count(*) FILTER (WHERE level = 3)
	FROM fleet_dirty
EOF
)" "28|14|14|14"

# --- compare ----------------------------------------------------------------

fb compare --format csv >"$tmp/compare.csv" 2>"$tmp/compare.err"
check_eq "compare exits 0" "$?" 0
qcsv "SELECT * FROM fleet_compare" >"$tmp/view.csv"
if cmp -s "$tmp/compare.csv" "$tmp/view.csv"; then
	ok
else
	not_ok "compare --format csv differs from the view fleet_compare: $(diff "$tmp/compare.csv" "$tmp/view.csv" | head -5)"
fi
check_eq "one row per provider, instance type and kernel" \
	"$(($(wc -l <"$tmp/compare.csv") - 1))" 14
check_eq "three hosts in every group" \
	"$(field "$tmp/compare.csv" hosts | sort -u)" 3
check_eq "only ovh b2-7's groups (3 runs each) are marked few_runs" \
	"$(field "$tmp/compare.csv" instance_type runs few_runs | grep '|t$' | sort -u)" \
	"b2-7|3|t"
check_eq "few-run groups have medians but no intervals" \
	"$(field "$tmp/compare.csv" instance_type iouring_vs_pread_lo thp_speedup_hi | grep '^b2-7')" \
	"b2-7||
b2-7||"
check_eq "c6i.xlarge: SQPOLL permitted on the old kernel, denied on the new" \
	"$(field "$tmp/compare.csv" instance_type kernel sqpoll_share | grep '^c6i')" \
	"c6i.xlarge|6.1.0-18-cloud-amd64|1.000
c6i.xlarge|6.5.0-0.deb12.4-cloud-amd64|0.000"
check_eq "failed variants: io_uring_sqpoll crashes in all 3 runs of b2-7's new kernel" \
	"$(field "$tmp/compare.csv" instance_type kernel runs failed failures | grep -v '|0|$')" \
	"b2-7|6.8.0-49-generic|3|3|randread/io_uring_sqpoll (3)"
check_eq "failed variants add no sample: b2-7's new kernel has its io_uring gain" \
	"$(q <<-EOF
	SELECT count(*), count(m.*)
	FROM bench_results b JOIN runs r USING (run_id)
	LEFT JOIN bench_metrics m USING (run_id, benchmark, variant)
	WHERE b.status = 'failed'
EOF
)|$(field "$tmp/compare.csv" kernel iouring_vs_pread | grep -c '^6.8.0-49-generic|[0-9]')" "3|0|1"
check_eq "every other group permits SQPOLL" \
	"$(field "$tmp/compare.csv" instance_type sqpoll_share | grep -v '^c6i' | cut -d'|' -f2 | sort -u)" \
	"1.000"

# the io_uring gains around their known means (3.0 -> 1.1, 3.0 -> 2.9)
n2=$(field "$tmp/compare.csv" instance_type kernel iouring_vs_pread iouring_vs_pread_lo iouring_vs_pread_hi | grep '^n2-standard-2')
in_range "n2-standard-2 old kernel io_uring/pread" "$(sed -n 1p <<<"$n2" | cut -d'|' -f3)" 2.9 3.1
in_range "n2-standard-2 new kernel io_uring/pread" "$(sed -n 2p <<<"$n2" | cut -d'|' -f3)" 1.0 1.2
in_range "n2-standard-2 new kernel interval's top below the old's bottom" \
	"$(awk -F'|' 'NR == 2 { hi = $5 } NR == 1 { lo = $4 } END { print lo - hi }' <<<"$n2")" 1 3
e2=$(field "$tmp/compare.csv" instance_type iouring_vs_pread iouring_vs_pread_lo iouring_vs_pread_hi | grep '^e2-standard-4')
in_range "e2-standard-4 old kernel io_uring/pread" "$(sed -n 1p <<<"$e2" | cut -d'|' -f2)" 2.6 3.4
in_range "e2-standard-4 new kernel io_uring/pread" "$(sed -n 2p <<<"$e2" | cut -d'|' -f2)" 2.5 3.3
check_eq "e2-standard-4's two intervals overlap (noise only)" \
	"$(awk -F'|' 'NR == 1 { lo1 = $3; hi1 = $4 } NR == 2 { lo2 = $3; hi2 = $4 }
		END { print (lo1 <= hi2 && lo2 <= hi1) }' <<<"$e2")" 1

# THP never granted against THP that gains
check_eq "cx22: THP never, no huge pages in the buffer" \
	"$(field "$tmp/compare.csv" instance_type thp_mode thp_huge_fraction | grep '^cx22' | sort -u)" \
	"cx22|never|0.000"
cx22=$(field "$tmp/compare.csv" instance_type thp_speedup_lo thp_speedup_hi thp_fault_p99_us | grep '^cx22' | head -1)
check_eq "cx22: THP speedup's interval holds 1.0" \
	"$(awk -F'|' '{ print ($2 <= 1 && $3 >= 1) }' <<<"$cx22")" 1
in_range "cx22: the thp variant's fault p99 is a 4 KiB fault's" "$(cut -d'|' -f4 <<<"$cx22")" 3.0 4.0
in_range "m6i.large: THP speedup" \
	"$(field "$tmp/compare.csv" instance_type thp_speedup | grep '^m6i' | head -1 | cut -d'|' -f2)" 1.30 1.40
in_range "b2-7: THP backs about half the buffer" \
	"$(field "$tmp/compare.csv" instance_type thp_huge_fraction | grep '^b2-7' | head -1 | cut -d'|' -f2)" 0.45 0.65
check_eq "hugetlb speedups only where the pools were there (ccx23)" \
	"$(field "$tmp/compare.csv" instance_type hugetlb_2m_speedup hugetlb_1g_speedup | grep -v '||$' | cut -d'|' -f1 | sort -u)" \
	"ccx23"
in_range "ccx23: hugetlb 1 GiB speedup" \
	"$(field "$tmp/compare.csv" instance_type hugetlb_1g_speedup | grep '^ccx23' | head -1 | cut -d'|' -f2)" 1.45 1.55
check_eq "no 1 GiB pages on cx22 and b2-7 only" \
	"$(field "$tmp/compare.csv" instance_type hugepage_1g_share | grep '|0.000$' | cut -d'|' -f1 | sort -u | tr '\n' ' ')" \
	"b2-7 cx22 "
check_eq "steal flagged on the noisy types only" \
	"$(field "$tmp/compare.csv" instance_type steal_share | grep -v '|0.000$' | cut -d'|' -f1 | sort -u | tr '\n' ' ')" \
	"b2-7 e2-standard-4 "

# the same numbers in the other formats
fb compare --format json >"$tmp/compare.json"
check_eq "compare --format json is valid JSON with 14 objects" \
	"$(q -v j="$(cat "$tmp/compare.json")" <<<"SELECT jsonb_array_length(:'j'::jsonb)")" 14
check_eq "JSON numbers are numbers, nulls null, booleans booleans" \
	"$(q -v j="$(cat "$tmp/compare.json")" <<-'EOF'
	SELECT jsonb_typeof(e->'runs'), jsonb_typeof(e->'thp_speedup'),
	       jsonb_typeof(e->'hugetlb_2m_speedup'), jsonb_typeof(e->'few_runs'),
	       jsonb_typeof(e->'provider')
	FROM jsonb_array_elements(:'j'::jsonb) AS e LIMIT 1
EOF
)" "number|number|null|boolean|string"
check_eq "JSON and the view agree on every value" \
	"$(q -v j="$(cat "$tmp/compare.json")" <<-'EOF'
	SELECT count(*) FROM (
		SELECT provider, instance_type, kernel, runs, thp_speedup,
		       iouring_vs_pread_lo, sqpoll_share, few_runs
		FROM jsonb_to_recordset(:'j'::jsonb) AS x(provider text,
			instance_type text, kernel text, runs bigint,
			thp_speedup numeric, iouring_vs_pread_lo numeric,
			sqpoll_share numeric, few_runs boolean)
		EXCEPT
		SELECT provider, instance_type, kernel, runs, thp_speedup,
		       iouring_vs_pread_lo, sqpoll_share, few_runs
		FROM fleet_compare) AS d
EOF
)" 0
fb compare --wide >"$tmp/compare.txt"
check_grep "the table prints an estimate with its interval" "$tmp/compare.txt" \
	'^aws +c6i\.xlarge +6\.1\.0-18-cloud-amd64 +3 +9 +f +[0-9.]+ \[[0-9.]+, [0-9.]+\]'
check_grep "the table ends with its row count" "$tmp/compare.txt" '^\(14 rows\)$'

# the summary kept for speed gives what run_figures gives: a filter that
# keeps every run forces the computation from run_figures
check_eq "fleet_summary and run_figures agree" "$(q <<-'EOF'
	SELECT count(*) FROM (
		(SELECT * FROM fleet_compare_by() EXCEPT
		 SELECT * FROM fleet_compare_by(NULL, '{"vcpus": [2, 4]}'))
		UNION ALL
		(SELECT * FROM fleet_compare_by(NULL, '{"vcpus": [2, 4]}') EXCEPT
		 SELECT * FROM fleet_compare_by())) AS d
EOF
)" 0

fb compare --by provider --format csv >"$tmp/by-provider.csv"
check_eq "--by provider: one row per provider, the runs add up" \
	"$(field "$tmp/by-provider.csv" provider runs | tr '\n' ' ')" \
	"aws|36 gcp|36 hetzner|36 ovh|6 "
check_eq "--by provider shows only the provider key, and the method" \
	"$(head -1 "$tmp/by-provider.csv" | cut -d, -f1-4)" "method,provider,hosts,runs"
fb compare --by vcpus,thp --format csv >"$tmp/by-vcpus.csv"
check_eq "--by vcpus,thp" \
	"$(field "$tmp/by-vcpus.csv" vcpus thp hosts runs | tr '\n' ' ')" \
	"4|always|3|18 2|madvise|9|42 4|madvise|6|36 2|never|3|18 "
fb compare --by host --where instance_type=n2-standard-2 --format csv >"$tmp/by-host.csv"
check_eq "--by host --where instance_type: each n2 host, both kernels" \
	"$(field "$tmp/by-host.csv" host runs | tr '\n' ' ')" \
	"gcp-n2-1|6 gcp-n2-2|6 gcp-n2-3|6 "
fb compare --where provider=aws --where provider=ovh --format csv >"$tmp/where.csv"
check_eq "--where a key twice: either value" \
	"$(field "$tmp/where.csv" provider | sort -u | tr '\n' ' ')" "aws ovh "
fb compare --since 2025-03-31 --format csv >"$tmp/since.csv"
check_eq "--since: the new kernels' runs only" \
	"$(field "$tmp/since.csv" instance_type kernel | grep -c -e '6.1.0-18' -e '5.15.0' -e '6.8.0-45')|$(($(wc -l <"$tmp/since.csv") - 1))" \
	"0|7"
FLEETBENCH_DSN=$conninfo "$FLEETBENCH" --format csv compare --where kernel=6.2.0-1014-gcp \
	>"$tmp/env.csv" 2>&1
check_eq "FLEETBENCH_DSN and --format before the command" \
	"$(field "$tmp/env.csv" instance_type | tr '\n' ' ')" "e2-standard-4 n2-standard-2 "

# --- kernels ----------------------------------------------------------------

fb kernels --provider gcp --instance-type n2-standard-2 --format csv >"$tmp/kernels.csv"
check_eq "kernels exits 0" "$?" 0
qcsv "SELECT * FROM fleet_kernels WHERE provider = 'gcp' AND instance_type = 'n2-standard-2'" \
	>"$tmp/kernels-view.csv"
if cmp -s "$tmp/kernels.csv" "$tmp/kernels-view.csv"; then
	ok
else
	not_ok "kernels differs from the view fleet_kernels: $(diff "$tmp/kernels.csv" "$tmp/kernels-view.csv" | head -5)"
fi
check_eq "n2-standard-2's kernels oldest first" \
	"$(field "$tmp/kernels.csv" kernel | tr '\n' ' ')" "5.15.0-1042-gcp 6.2.0-1014-gcp "
check_match "the gain's collapse is what changed" \
	"$(tail -1 "$tmp/kernels.csv")" '*iouring_vs_pread 2.9* -> 1.[01]* (-6?%)*'
fb kernels --provider aws --instance-type c6i.xlarge --format csv >"$tmp/k-c6i.csv"
check_match "c6i.xlarge: SQPOLL denied is what changed, and its gain no longer measured" \
	"$(tail -1 "$tmp/k-c6i.csv")" '*,SQPOLL permitted 100% -> 0% of runs; sqpoll_vs_iouring no longer measured (was 0.8[0-9]*)'
fb kernels --provider ovh --instance-type b2-7 --format csv >"$tmp/k-b2.csv"
check_eq "b2-7: the failures on the new kernel are what changed (SQPOLL's gain with them)" \
	"$(field "$tmp/k-b2.csv" kernel failed failures changes | tail -1)" \
	"6.8.0-49-generic|3|randread/io_uring_sqpoll (3)|runs with a failed variant 0% -> 100% of runs; sqpoll_vs_iouring no longer measured (was 0.865)"
for t in "gcp e2-standard-4" "hetzner cx22"; do
	read -r p i <<<"$t"
	fb kernels --provider "$p" --instance-type "$i" --format csv >"$tmp/k.csv"
	check_match "$i: nothing beyond noise" "$(tail -1 "$tmp/k.csv")" '*,nothing beyond noise'
done
# issue 15's figures move as io_uring's do (tests/fixtures/README.md)
fb kernels --provider aws --instance-type m6i.large --format csv >"$tmp/k-m6i.csv"
check_match "m6i.large: the mmap THP speedup lost is what changed" \
	"$(tail -1 "$tmp/k-m6i.csv")" \
	'*,mmap_thp_speedup 1.2[6-9]* -> [01].[09]* (-2[0-3]%)'
fb kernels --provider hetzner --instance-type ccx23 --format csv >"$tmp/k-ccx23.csv"
check_match "ccx23: the database's p99 under THP always is what changed" \
	"$(tail -1 "$tmp/k-ccx23.csv")" \
	'*,db_p99_always_vs_never 1.[01]* -> 1.6* (+[45]?%)'
fb kernels --provider gcp --instance-type n2-standard-2 --since 2025-03-31 --format csv \
	>"$tmp/k-since.csv"
check_eq "kernels --since: the new kernel alone, nothing to compare" \
	"$(field "$tmp/k-since.csv" kernel changes)" "6.2.0-1014-gcp|"

# --- issue 15's figures in compare ------------------------------------------

check_eq "compare has a column and an interval for each new figure" \
	"$(head -1 "$tmp/compare.csv" | tr ',' '\n' | grep -c -x \
		-e 'mmap_thp_speedup\(_lo\|_hi\)\?' -e 'membw_thp_gain\(_lo\|_hi\)\?' \
		-e 'membw_triad_gbps\(_lo\|_hi\)\?' -e 'iouring_qd32_vs_qd1\(_lo\|_hi\)\?' \
		-e 'iouring_knee_depth\(_lo\|_hi\)\?' -e 'iouring_best_iops\(_lo\|_hi\)\?' \
		-e 'writeback_p99_us\(_lo\|_hi\)\?' -e 'writeback_stalls\(_lo\|_hi\)\?' \
		-e 'db_p99_always_vs_never\(_lo\|_hi\)\?')" 27
m6i=$(field "$tmp/compare.csv" instance_type kernel mmap_thp_speedup | grep '^m6i')
in_range "m6i.large's mmap THP speedup, old kernel" "$(sed -n 1p <<<"$m6i" | cut -d'|' -f3)" 1.25 1.31
in_range "m6i.large's mmap THP speedup, new kernel" "$(sed -n 2p <<<"$m6i" | cut -d'|' -f3)" 0.98 1.02
check_eq "the knee of each group is its type's (16, 32 or 4)" \
	"$(field "$tmp/compare.csv" instance_type iouring_knee_depth | sort -u | tr '\n' ' ')" \
	"b2-7|4.000 c6i.xlarge|32.000 ccx23|32.000 cx22|4.000 e2-standard-4|16.000 m6i.large|16.000 n2-standard-2|16.000 "
check_eq "the database ran on the hetzner hosts only (--with-database)" \
	"$(field "$tmp/compare.csv" provider db_p99_always_vs_never | sed 's/|[0-9.]\+$/|ran/' | sort -u | tr '\n' ' ')" \
	"aws| gcp| hetzner|ran ovh| "
in_range "cx22's write-back p99" \
	"$(field "$tmp/compare.csv" instance_type writeback_p99_us | grep '^cx22' | head -1 | cut -d'|' -f2)" 4500 6000
fb compare >"$tmp/compare.txt" 2>"$tmp/compare.err"
check_eq "the default table fits 100 characters" \
	"$(($(LC_ALL=C.UTF-8 wc -L <"$tmp/compare.txt") <= 100))" 1
check_grep "with each family's first figure, its unit under its name" "$tmp/compare.txt" \
	'^ +runs +speedup +p99_us +vs_pread$'
check_grep "an estimate with its interval as a share of it" "$tmp/compare.txt" \
	'^aws +c6i\.xlarge +6\.1\.0-18-cloud-amd64 +3 +9 +no +1\.[0-9][0-9] ±[0-9]+%'
check_grep "a long label cut with an ellipsis" "$tmp/compare.txt" '^aws +c6i\.xlarge +6\.5\.0-0\.deb12\.4-clo… '
check_grep "and the columns left out named on standard error" "$tmp/compare.err" \
	'more columns did not fit 100 characters: mmap_thp_speedup,'
check_grep "within 100 characters a line, how to see them last" "$tmp/compare.err" \
	'^  .*\(--wide prints every column\)$'
check_eq "a family's other figures are left out" \
	"$(head -4 "$tmp/compare.txt" | grep -c -e huge_ -e vs_libaio -e mmap_)" 0
fb compare --figures mmap,writeback --wide >"$tmp/compare-fig.txt"
check_grep "--figures mmap,writeback: those families' columns" "$tmp/compare-fig.txt" \
	'^provider +instance_type +kernel +hosts +runs +few_runs +mmap_thp_speedup +mmap_hugetlb_speedup +writeback_p99_us +writeback_stalls +writeback_tuned_vs_host +iouring_share'
check_eq "--figures leaves the other figures out" \
	"$(head -2 "$tmp/compare-fig.txt" | grep -c -w -e thp_speedup -e iouring_vs_pread -e membw_thp_gain)" 0
fb compare --figures all --wide >"$tmp/compare-all.txt"
fb rank --metric sqpoll_vs_iouring --format csv >"$tmp/rank-sqpoll.csv"
check_eq "rank by SQPOLL's gain (a figure declared later, issue 37): the types that measured it in 6 runs" \
	"$(field "$tmp/rank-sqpoll.csv" metric | sort -u)|$(($(wc -l <"$tmp/rank-sqpoll.csv") > 1))" "sqpoll_vs_iouring|1"
check_grep "compare --figures all shows it, last of its family" "$tmp/compare-all.txt" \
	'pread_iops +sqpoll_vs_iouring +mmap_thp_speedup'
check_grep "--figures all: every figure" "$tmp/compare-all.txt" \
	'thp_speedup .*iouring_vs_libaio .*mmap_thp_speedup .*db_p99_always_vs_never '
fb kernels --provider hetzner --instance-type ccx23 --figures db --wide >"$tmp/k-fig.txt"
check_grep "kernels --figures db: the database's column, and what changed" "$tmp/k-fig.txt" \
	'^hetzner +ccx23 +6.1.0-21-amd64 .* 1.6[0-9]* \[.*db_p99_always_vs_never 1.[01][0-9]* -> 1.6'
check_eq "kernels --figures db leaves the THP columns out" \
	"$(sed -n 2p "$tmp/k-fig.txt" | grep -c -w thp_speedup)" 0
fb compare --figures db --metric randread/io_uring/iops >/dev/null 2>"$tmp/fig-metric.err"
check_eq "--figures with --metric exits 2" "$?" 2
fb compare --figures nosuch >/dev/null 2>"$tmp/fig.err"
check_eq "--figures nosuch exits 2" "$?" 2
check_grep "and names the families" "$tmp/fig.err" "unknown figure family 'nosuch'"

# --- rank -------------------------------------------------------------------

fb rank --metric iouring_vs_pread --format csv >"$tmp/rank.csv"
check_eq "rank exits 0" "$?" 0
qcsv "SELECT * FROM fleet_rank WHERE metric = 'iouring_vs_pread'" >"$tmp/rank-view.csv"
if cmp -s "$tmp/rank.csv" "$tmp/rank-view.csv"; then
	ok
else
	not_ok "rank differs from the view fleet_rank: $(diff "$tmp/rank.csv" "$tmp/rank-view.csv" | head -5)"
fi
check_eq "c6i.xlarge (3.2) ranks first, alone" \
	"$(field "$tmp/rank.csv" rank tie instance_type | head -1)" "1|f|c6i.xlarge"
check_eq "ovh b2-7 (6 runs) is ranked: the default min-runs is 6" \
	"$(field "$tmp/rank.csv" instance_type runs | grep b2-7)" "b2-7|6"
# rank is 1 + the types whose interval is wholly above this one's; tie
# when another type shares the rank
check_eq "ranks and ties follow from the intervals" "$(awk -F, '
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	{ n++; lo[n] = $c["median_lo"]; hi[n] = $c["median_hi"]; rk[n] = $c["rank"]; tie[n] = $c["tie"] }
	END {
		bad = 0
		for (i = 1; i <= n; i++) {
			better = 0; same = 0
			for (j = 1; j <= n; j++) {
				if (lo[j] > hi[i]) better++
				if (j != i && rk[j] == rk[i]) same++
			}
			if (rk[i] != better + 1 || (tie[i] == "t") != (same > 0)) bad++
			if (i > 1 && rk[i] < rk[i - 1]) bad++
		}
		print n, bad
	}' "$tmp/rank.csv")" "7 0"
fb rank --metric iouring_vs_pread --require sqpoll --format csv >"$tmp/rank-sq.csv"
check_eq "--require sqpoll leaves c6i.xlarge out (denied on its new kernel)" \
	"$(grep -c c6i "$tmp/rank-sq.csv")|$(($(wc -l <"$tmp/rank-sq.csv") - 1))" "0|6"
fb rank --metric thp_speedup --require hugepages-1g,io_uring --format csv >"$tmp/rank-1g.csv"
check_eq "--require hugepages-1g leaves cx22 and b2-7 out" \
	"$(field "$tmp/rank-1g.csv" instance_type | grep -c -e cx22 -e b2-7)|$(($(wc -l <"$tmp/rank-1g.csv") - 1))" "0|5"
check_eq "thp_speedup: ccx23 (1.42) ranks first" \
	"$(field "$tmp/rank-1g.csv" rank instance_type | head -1)" "1|ccx23"
fb rank --metric thp_fault_p99_us --min-runs 7 --format csv >"$tmp/rank-p99.csv"
check_eq "thp_fault_p99_us: lower is better, cx22 (4 KiB faults) last" \
	"$(field "$tmp/rank-p99.csv" instance_type | tail -1)" "cx22"
check_eq "--min-runs 7 leaves b2-7 out" "$(grep -c b2-7 "$tmp/rank-p99.csv")" 0
fb rank --metric iouring_iops --per vcpu --format csv >"$tmp/rank-vcpu.csv"
check_eq "--per vcpu: cx22 (30k pread IOPS x 2.5 over 2 vCPUs) first" \
	"$(field "$tmp/rank-vcpu.csv" rank instance_type vcpus | head -1)" "1|cx22|2"
in_range "--per vcpu: cx22's io_uring IOPS per vCPU" \
	"$(field "$tmp/rank-vcpu.csv" instance_type median | head -1 | cut -d'|' -f2)" 35000 40000
fb rank --metric iouring_vs_pread --where kernel=6.2.0-1014-gcp --where kernel=6.1.0-21-amd64 \
	--format csv >"$tmp/rank-where.csv"
check_eq "--where: only those kernels' runs (n2 after its collapse last)" \
	"$(field "$tmp/rank-where.csv" instance_type | tr '\n' ' ')" \
	"e2-standard-4 ccx23 cx22 n2-standard-2 "
fb rank --metric thp_speedup --wide >"$tmp/rank.txt"
check_grep "rank's table: the median with its interval" "$tmp/rank.txt" \
	'^thp_speedup +1 +[tf] +hetzner +ccx23 +1\.[0-9]+ \[1\.[0-9]+, 1\.[0-9]+\]'

fb rank --metric writeback_p99_us --format csv >"$tmp/rank-wb.csv"
check_eq "writeback_p99_us: lower is better, ccx23 (700 us) first, cx22 (5.2 ms) last" \
	"$(field "$tmp/rank-wb.csv" rank instance_type | sed -n '1p;$p' | tr '\n' ' ')" \
	"1|ccx23 7|cx22 "
fb rank --metric db_p99_always_vs_never --format csv >"$tmp/rank-db.csv"
check_eq "db_p99_always_vs_never: lower is better, the two database types, cx22 first" \
	"$(field "$tmp/rank-db.csv" rank instance_type | tr '\n' ' ')" "1|cx22 2|ccx23 "
fb rank --metric membw_triad_gbps --per vcpu --format csv >"$tmp/rank-bw.csv"
check_eq "membw_triad_gbps --per vcpu: every type ranked" \
	"$(($(wc -l <"$tmp/rank-bw.csv") - 1))" 7
for m in mmap_thp_speedup membw_thp_gain iouring_qd32_vs_qd1 iouring_knee_depth \
	iouring_best_iops writeback_stalls; do
	fb rank --metric "$m" --format csv >"$tmp/rank-m.csv"
	check_eq "rank --metric $m ranks the seven types" \
		"$?|$(($(wc -l <"$tmp/rank-m.csv") - 1))" "0|7"
done
fb rank --metric mmap_thp_speedup --per vcpu >/dev/null 2>"$tmp/rank-per.err"
check_eq "--per vcpu refuses a ratio of the new figures" "$?" 2

# --- the summary follows new runs -------------------------------------------

"$FLEETGEN" --spool "$tmp/more" --seed 7 --host gcp-n2-1 --kernel new \
	>/dev/null 2>&1 && fleet_send "$tmp/more"
check_eq "three more runs of gcp-n2-1 are delivered" \
	"$(q <<<"SELECT count(*) FROM runs")" 117
fb compare --where instance_type=n2-standard-2 --format csv >"$tmp/more.csv"
check_eq "compare counts them at once" \
	"$(field "$tmp/more.csv" kernel runs | tr '\n' ' ')" \
	"5.15.0-1042-gcp|9 6.2.0-1014-gcp|12 "
check_eq "compare refreshed its level only: the instance type's row waits for rank" \
	"$(q <<<"SELECT string_agg(DISTINCT level || ':' || instance_type || ':' || kernel_release, ' ') FROM fleet_dirty")" \
	"2:n2-standard-2:6.2.0-1014-gcp"
check_eq "and still agrees with run_figures" "$(q <<-'EOF'
	SELECT (SELECT count(*) FROM (
			SELECT * FROM fleet_compare_by() EXCEPT
			SELECT * FROM fleet_compare_by(NULL, '{"vcpus": [2, 4]}')) AS c),
	       (SELECT count(*) FROM (
			SELECT * FROM fleet_rank_by('iouring_vs_pread') EXCEPT
			SELECT * FROM fleet_rank_by('iouring_vs_pread', NULL, NULL,
						    NULL, '{"vcpus": [2, 4]}')) AS r),
	       (SELECT count(*) FROM fleet_rank_by('iouring_vs_pread'))
EOF
)" "0|0|7"
check_eq "nothing is left to refresh" "$(q <<<"SELECT count(*) FROM fleet_dirty")" 0
# a read-only transaction cannot refresh: it computes from run_figures
"$FLEETGEN" --spool "$tmp/more2" --seed 8 --host gcp-n2-2 --kernel new \
	>/dev/null 2>&1 && fleet_send "$tmp/more2"
check_eq "a read-only transaction gets the new runs too" "$(q <<-'EOF'
	BEGIN READ ONLY;
	SELECT runs FROM fleet_compare WHERE instance_type = 'n2-standard-2'
	       AND kernel = '6.2.0-1014-gcp';
	COMMIT;
EOF
)" 15
check_eq "and leaves the refresh for later" \
	"$(q <<<"SELECT count(*) > 0 FROM fleet_dirty")" t

# --- methods: figures measured differently are never mixed ---------------

# the fleet so far is of the full profile, sent without a method
fb compare --format csv >"$tmp/full.csv"
check_eq "without a standard run, the method most run is shown" \
	"$(field "$tmp/full.csv" method | sort -u)" full
# a host of m6i.large under quick (a smaller THP gain) and standard, and
# standard with a 64 MiB chase on the new kernel
"$FLEETGEN" --spool "$tmp/quick" --seed 9 --host aws-m6i-1 --method quick \
	--thp-scale 0.8 >/dev/null 2>&1 && fleet_send "$tmp/quick"
"$FLEETGEN" --spool "$tmp/standard" --seed 9 --host aws-m6i-1 \
	--method standard >/dev/null 2>&1 && fleet_send "$tmp/standard"
"$FLEETGEN" --spool "$tmp/chase64" --seed 9 --host aws-m6i-1 --kernel new \
	--method standard --chase-bytes 64M --thp-scale 0.6 >/dev/null 2>&1 &&
	fleet_send "$tmp/chase64"
check_eq "their runs are stored with their methods" "$(q <<-'EOF'
	SELECT string_agg(method || ' ' || n, ',' ORDER BY method)
	FROM (SELECT method, count(*) AS n FROM runs GROUP BY method) AS m
EOF
)" "full 120,quick 6,standard 6,standard+chase_bytes=64M 3"
fb compare --format csv >"$tmp/std.csv"
check_eq "compare: the standard method by default, and only it" \
	"$(field "$tmp/std.csv" method instance_type kernel runs | tr '\n' ' ')" \
	"standard|m6i.large|6.1.0-18-cloud-amd64|3 standard|m6i.large|6.1.0-21-cloud-amd64|3 "
fb compare >"$tmp/std.txt"
check_eq "the table names the method in its header" "$(head -1 "$tmp/std.txt")" \
	"method: standard"
fb compare --profile standard --format csv >"$tmp/profile.csv"
check_eq "--profile standard is the default here" "$(cat "$tmp/profile.csv")" \
	"$(cat "$tmp/std.csv")"
fb compare --method full --format csv >"$tmp/full2.csv"
check_eq "--method full: the full fleet as before" "$(cat "$tmp/full2.csv")" \
	"$(cat "$tmp/full.csv")"
fb compare --all-methods --where instance_type=m6i.large --format csv \
	>"$tmp/all.csv"
check_eq "--all-methods: one row per method and kernel, each saying its method" \
	"$(field "$tmp/all.csv" method kernel runs | tr '\n' ' ')" \
	"full|6.1.0-18-cloud-amd64|9 full|6.1.0-21-cloud-amd64|9 quick|6.1.0-18-cloud-amd64|3 quick|6.1.0-21-cloud-amd64|3 standard|6.1.0-18-cloud-amd64|3 standard|6.1.0-21-cloud-amd64|3 standard+chase_bytes=64M|6.1.0-21-cloud-amd64|3 "
check_eq "quick's THP gain is its own, below standard's" "$(awk -F, '
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$c["kernel"] == "6.1.0-18-cloud-amd64" { v[$c["method"]] = $c["thp_speedup"] }
	END { print (v["quick"] < v["standard"] * 0.9) ? "lower" : "not lower" }' "$tmp/all.csv")" lower
fb compare --method standard+chase_bytes=64M --format csv >"$tmp/c64.csv"
check_eq "--method KEY: that method alone" \
	"$(field "$tmp/c64.csv" method kernel runs)" \
	"standard+chase_bytes=64M|6.1.0-21-cloud-amd64|3"
check_eq "the views show the default selection, as the CLI does" "$(q <<-'EOF'
	SELECT (SELECT string_agg(DISTINCT method, ',') FROM fleet_compare),
	       (SELECT count(*) FROM fleet_compare),
	       (SELECT count(*) FROM (
			SELECT * FROM fleet_compare_by() EXCEPT
			SELECT * FROM fleet_compare_by(method_key => 'standard')) AS c),
	       (SELECT count(*) FROM fleet_compare_by(filter => '{"method": "quick"}')),
	       (SELECT count(DISTINCT method) FROM fleet_compare_by(method_key => '*')),
	       (SELECT string_agg(DISTINCT method, ',') FROM fleet_rank),
	       (SELECT string_agg(DISTINCT method, ',') FROM fleet_kernels)
EOF
)" "standard|2|0|2|4|standard|full,standard"
check_eq "and the CLI's rows are the view's" "$(($(wc -l <"$tmp/std.csv") - 1))" 2
fb rank --metric thp_speedup --all-methods --min-runs 3 --format csv >"$tmp/rank-all.csv"
check_eq "rank --all-methods ranks each method on its own" \
	"$(field "$tmp/rank-all.csv" method rank instance_type | grep -v '^full' | tr '\n' ' ')" \
	"quick|1|m6i.large standard|1|m6i.large standard+chase_bytes=64M|1|m6i.large "
fb kernels --provider aws --instance-type m6i.large --format csv >"$tmp/k.csv"
check_eq "kernels: the standard method on each kernel" \
	"$(field "$tmp/k.csv" method kernel | tr '\n' ' ')" \
	"standard|6.1.0-18-cloud-amd64 standard|6.1.0-21-cloud-amd64 "
fb kernels --provider aws --instance-type m6i.large --method quick \
	--format csv >"$tmp/kq.csv"
check_eq "kernels --method: that method only" \
	"$(field "$tmp/kq.csv" method | sort -u | tr '\n' ' ')" "quick "
# c6i.xlarge: standard runs on the new kernel only
"$FLEETGEN" --spool "$tmp/switch" --seed 11 --host aws-c6i-1 --kernel new \
	--method standard >/dev/null 2>&1 && fleet_send "$tmp/switch"
fb kernels --provider aws --instance-type c6i.xlarge --format csv >"$tmp/k2.csv"
check_eq "kernels: a method change is said, and no figure compared" \
	"$(field "$tmp/k2.csv" method kernel changes | tr '\n' ' ')" \
	"full|6.1.0-18-cloud-amd64| standard|6.5.0-0.deb12.4-cloud-amd64|method full -> standard: figures not compared "

# --- bad input ----------------------------------------------------------------

# bad NAME STATUS REGEX COMMAND...: exits STATUS, saying what is wrong
bad() {
	local name=$1 status=$2 regex=$3
	shift 3
	"$@" >"$tmp/bad.out" 2>&1
	check_eq "$name: exit status" "$?" "$status"
	check_grep "$name: message" "$tmp/bad.out" "$regex"
}
bad "unknown --by key" 2 "by: unknown key 'zone', one of provider, instance_type, kernel" \
	fb compare --by provider,zone
bad "unknown --where key" 2 "where: unknown key 'colour'" fb compare --where colour=red
bad "--where without =" 2 "--where 'provider': expected KEY=VALUE" fb compare --where provider
bad "--since not a date" 2 'invalid input syntax for type timestamp with time zone: "last tuesday"' \
	fb compare --since "last tuesday"
bad "unknown --format" 2 "unknown --format 'xml': table, csv or json" fb compare --format xml
bad "rank without --metric" 2 "rank needs --metric NAME" fb rank
bad "unknown metric" 2 "metric: unknown metric 'speed', one of thp_speedup" fb rank --metric speed
bad "--per vcpu on a ratio" 2 "per: iouring_vs_pread is a ratio" \
	fb rank --metric iouring_vs_pread --per vcpu
bad "unknown --per" 2 "per: unknown 'socket', only vcpu" fb rank --metric iouring_iops --per socket
bad "unknown --require" 2 "require: unknown capability 'avx512'" \
	fb rank --metric thp_speedup --require sqpoll,avx512
bad "--min-runs not a number" 2 "--min-runs 'many': not a whole number" \
	fb rank --metric thp_speedup --min-runs many
bad "kernels without --instance-type" 2 "kernels needs --provider and --instance-type" \
	fb kernels --provider aws
bad "kernels of an instance type with no runs: exit 0, and why (issue 40)" 0 "no run matches instance_type=m7.huge, provider=aws; instance types of provider=aws" \
	fb kernels --provider aws --instance-type m7.huge
bad "unknown command" 2 "unknown command 'list'" fb list
bad "an operand left over" 2 "unexpected argument 'extra'" fb compare extra
bad "no database" 1 "cannot connect to PostgreSQL" \
	"$FLEETBENCH" --dsn "host=$tmp/nowhere dbname=x" compare
"$FLEETBENCH" --version >"$tmp/version.out"
check_grep "--version" "$tmp/version.out" '^fleetbench [0-9]+\.[0-9]+\.[0-9]+$'
for c in compare rank kernels report; do
	"$FLEETBENCH" "$c" --help >"$tmp/help.out"
	check_eq "$c --help exits 0" "$?" 0
	check_grep "$c --help lists --format" "$tmp/help.out" '^ +--format FORMAT'
done


# the long views (docs/queries.md, "Long views"): a row per run (group)
# and declared figure with a value, the same values as the columns
# each declared figure's element of run_figures.figures, spelled out from
# the table figures (not through unnest, as the view reads them), and
# each column of run_figures_wide
cols=$(q <<<"SELECT string_agg(format('count(figures[%s])', id), ' + ' ORDER BY id) FROM figures")
check_eq "run_figure_values: a row for each figure value of run_figures" \
	"$(q <<<"SELECT count(*) FROM run_figure_values")" \
	"$(q <<<"SELECT $cols FROM run_figures")"
diffs=$(q <<<"SELECT string_agg(format('SELECT count(*) FROM run_figure_values AS v JOIN run_figures_wide AS r USING (run_id) WHERE v.figure = %L AND v.value IS DISTINCT FROM r.%I', name, name), ' UNION ALL ' ORDER BY id) FROM figures")
check_eq "run_figure_values: each value is its run's column" \
	"$(q <<<"SELECT sum(count) FROM ($diffs) AS d")" 0
check_eq "run_figure_values: thp_speedup and iouring_vs_pread of every run that has them" \
	"$(q <<-EOF
	SELECT (SELECT count(*) FROM run_figure_values WHERE figure = 'thp_speedup')
	       = (SELECT count(thp_speedup) FROM run_figures_wide),
	       (SELECT count(*) FROM run_figure_values WHERE figure = 'iouring_vs_pread')
	       = (SELECT count(iouring_vs_pread) FROM run_figures_wide)
EOF
)" "t|t"
q <<<"SELECT fleetbench_refresh()" >/dev/null
# fig_vs_stored FIGURE PER_VCPU: rows of fleet_summary_figures whose
# estimate is not the one fleet_summary stores for the same group at the
# figure's id (figures, or figures_per_vcpu with PER_VCPU true), and how
# many groups have one
fig_vs_stored() {
	q <<-EOF
	WITH e AS (
		SELECT s.*, (CASE WHEN $2 THEN s.figures_per_vcpu ELSE s.figures END)
			[(SELECT id FROM figures WHERE name = '$1')] AS est
		FROM fleet_summary AS s)
	SELECT count(*) FILTER (WHERE (v.n, v.median, v.ci_low, v.ci_high)
		IS DISTINCT FROM ((s.est).n, (s.est).median, (s.est).ci_low, (s.est).ci_high))
	       || '|' || count(*) || '|' || (SELECT count(*) FROM e WHERE (e.est).n > 0)
	FROM e AS s JOIN fleet_summary_figures AS v
	  ON v.level IS NOT DISTINCT FROM s.level AND v.figure = '$1'
	 AND v.per_vcpu = $2 AND v.method IS NOT DISTINCT FROM s.method
	 AND v.provider IS NOT DISTINCT FROM s.provider
	 AND v.instance_type IS NOT DISTINCT FROM s.instance_type
	 AND v.kernel IS NOT DISTINCT FROM s.kernel
	 AND v.tags IS NOT DISTINCT FROM s.tags
	EOF
}
for f in thp_speedup:false iouring_vs_pread:false iouring_iops:true; do
	IFS=: read -r name per <<<"$f"
	out=$(fig_vs_stored "$name" "$per")
	check_eq "fleet_summary_figures: $name (per vCPU $per) as fleet_summary stores it, every group" \
		"$out" "0|${out##*|}|${out##*|}"
	check_eq "and some groups have it" "$((${out##*|} > 0))" 1
done
check_eq "fleet_summary_figures: per-vCPU rows only for the figures declared so" \
	"$(q <<-EOF
	SELECT string_agg(DISTINCT v.figure, ' ' ORDER BY v.figure)
	FROM fleet_summary_figures AS v WHERE v.per_vcpu
EOF
)" "$(q <<<"SELECT string_agg(name, ' ' ORDER BY name) FROM figures WHERE per_vcpu AND EXISTS (SELECT 1 FROM run_figure_values WHERE figure = name)")"

# compare and kernels with a column per figure are made from the table
# figures over their fixed cores (docs/queries.md): each declared figure's
# three columns, in the declaration's order, its estimate as fleet_summary
# stores it at the figure's id (spelled out from figures here)
q <<<"SELECT fleetbench_refresh()" >/dev/null
triple="unnest('{\"\",_lo,_hi}'::text[]) WITH ORDINALITY AS x(s, o)"
for v in fleet_compare fleet_kernels; do
	check_eq "$v: NAME, NAME_lo and NAME_hi for each declared figure, in its order" \
		"$(q <<<"SELECT string_agg(a.attname, ' ' ORDER BY a.attnum)
			 FROM pg_attribute AS a
			 WHERE a.attrelid = '$v'::regclass
			   AND a.attname IN (SELECT name || x.s FROM figures, $triple)")" \
		"$(q <<<"SELECT string_agg(name || x.s, ' ' ORDER BY position, x.o)
			 FROM figures, $triple")"
done
diffs=$(q <<<"SELECT string_agg(format('SELECT count(*) FROM fleet_compare_by(method_key => ''*'') AS c JOIN fleet_summary AS s ON s.level = 3 AND s.method = c.method AND s.provider = c.provider AND s.instance_type = c.instance_type AND s.kernel = c.kernel AND s.tags IS NULL WHERE (c.%1\$I, c.%2\$I, c.%3\$I) IS DISTINCT FROM (fleetbench_round((s.figures[%4\$s]).median), fleetbench_round((s.figures[%4\$s]).ci_low), fleetbench_round((s.figures[%4\$s]).ci_high))', name, name || '_lo', name || '_hi', id), ' UNION ALL ' ORDER BY id) FROM figures")
check_eq "fleet_compare_by(): each figure's column is its group's estimate at its id" \
	"$(q <<<"SELECT sum(count) FROM ($diffs) AS d")" 0
check_eq "fleet_compare_by(): every group (of every method) found in fleet_summary" \
	"$(q <<<"SELECT count(*) || '|' || (SELECT count(*) FROM fleet_summary WHERE level = 3)
		 FROM fleet_compare_by(method_key => '*') AS c JOIN fleet_summary AS s
		 ON s.level = 3 AND s.method = c.method AND s.provider = c.provider
		 AND s.instance_type = c.instance_type AND s.kernel = c.kernel
		 AND s.tags IS NULL")" "$(q <<<"SELECT count(*) || '|' || count(*) FROM fleet_summary WHERE level = 3")"
check_eq "price/performance ranks the absolute rates better higher, then the chase" \
	"$(q <<<"SELECT string_agg(metric || ':' || unit, ' ' ORDER BY pos)
		 FROM fleetbench_price_metrics()")" \
	"iouring_iops:IOPS pread_iops:IOPS membw_triad_gbps:GB/s iouring_best_iops:IOPS chase_accesses_per_s:accesses/s"

# a figure declared after runs were stored: migrate fills it in them from
# what they stored (figures_filled), and marks their groups changed. As
# if db_p99_always_vs_never had just been declared: its element taken out
# of every run, its fill and the declarations' record forgotten
fid=$(q <<<"SELECT id FROM figures WHERE name = 'db_p99_always_vs_never'")
# its values, in run order, as text
values="SELECT count(figures[$fid]) || '|' || md5(string_agg(run_id || ':' || figures[$fid], ' ' ORDER BY run_id)) FROM run_figures"
held=$(q <<<"$values")
q <<<"UPDATE run_figures SET figures[$fid] = NULL;
      SELECT fleetbench_refresh();
      DELETE FROM figures_filled WHERE id = $fid;
      DELETE FROM schema_functions WHERE name = '00_figures.sql'" >/dev/null
check_eq "no run holds the figure now" \
	"$(q <<<"SELECT count(figures[$fid]) FROM run_figures")" 0
"$COLLECTOR" migrate --schema-dir "$SOURCE_DIR/schema" --dsn "$conninfo" \
	>"$tmp/fill.out" 2>&1
check_eq "migrate exits 0" "$?" 0
check_grep "it says how many runs it filled" "$tmp/fill.out" \
	"figure db_p99_always_vs_never \(id $fid\) filled in ${held%%|*} stored runs"
check_eq "every run that measured it holds it again, the same values" \
	"$(q <<<"$values")" "$held"
check_eq "its groups are marked changed: the database ran on hetzner only" \
	"$(q <<<"SELECT string_agg(DISTINCT provider, ' ') FROM fleet_dirty")" hetzner
check_eq "and the figure is noted as filled" \
	"$(q <<<"SELECT count(*) FROM figures_filled WHERE id = $fid")" 1
fb kernels --provider hetzner --instance-type ccx23 --figures db --wide >"$tmp/k-fill.txt"
check_grep "kernels shows it again" "$tmp/k-fill.txt" \
	'db_p99_always_vs_never 1.[01][0-9]* -> 1.6'

finish
