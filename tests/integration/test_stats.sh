#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fleet tests' statistics (schema/functions/12_stats.sql, issue 39) on
# a real PostgreSQL against brute force (stats_oracle.py enumerates every
# sign pattern and every split of the hosts): Wilcoxon's signed-rank
# p-value, the Hodges-Lehmann estimate and its 95% interval for 1 to 14
# paired hosts, with zeros, ties and outliers; the two-sample shift and
# its interval for 3 to 16 hosts; Benjamini-Hochberg's q-values. Then
# what brute force cannot reach: 100 hosts (the normal approximation)
# and the edges (no host, all zeros, too few hosts for an interval).
#
# Environment: SOURCE_DIR, BUILD_DIR, COLLECTOR, PG_BINDIR.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_built "$COLLECTOR"
db_new stats 029_ingest_contract

# cases: seeded, so the same every run
/usr/bin/python3 - >"$tmp/cases" <<-'EOF'
	import random
	r = random.Random(39)
	def vals(n, shift, sd):
	    return ",".join("%.6f" % (shift + r.gauss(0, sd)) for _ in range(n))
	for n in range(1, 15):
	    print("sr " + vals(n, -0.05 * (n % 3), 0.04))
	# a zero (dropped), an outlier, tied magnitudes
	print("sr 0,-0.08,-0.061,-0.075,0.02,-0.07,-0.09,-0.11")
	print("sr -0.05,-0.06,-0.07,-0.08,-0.09,-0.1,-0.04,3.5")
	for m, n in ((3, 3), (5, 4), (6, 6), (8, 7), (4, 12)):
	    print("hl %s;%s" % (vals(m, 0, 0.03), vals(n, -0.06, 0.03)))
	print("bh 0.01,0.04,0.03,0.005,0.5,0.2,0.04,1,0.0001,0.049")
EOF
/usr/bin/python3 "$SOURCE_DIR/tests/integration/stats_oracle.py" \
	<"$tmp/cases" >/dev/null ||
	{ not_ok "the oracle fails on its own cases"; finish; }

# the database's answer to each case, one line each
while read -r kind args; do
	case $kind in
	sr) echo "SELECT concat_ws('|', n, w, p, estimate,
			coalesce(lo::text, 'NULL'), coalesce(hi::text, 'NULL'))
		FROM fleetbench_signed_rank('{$args}');" ;;
	hl) echo "SELECT concat_ws('|', estimate,
			coalesce(lo::text, 'NULL'), coalesce(hi::text, 'NULL'))
		FROM fleetbench_hodges_lehmann('{${args%;*}}', '{${args#*;}}');" ;;
	bh) echo "SELECT array_to_string(fleetbench_bh('{$args}'), '|');" ;;
	esac
done <"$tmp/cases" | qn >"$tmp/answers" 2>"$tmp/answers.err"
check_eq "the database answers every case ($(head -c 300 "$tmp/answers.err"))" \
	"$(wc -l <"$tmp/answers")" "$(wc -l <"$tmp/cases")"
if out=$(/usr/bin/python3 "$SOURCE_DIR/tests/integration/stats_oracle.py" \
	"$tmp/answers" <"$tmp/cases"); then
	ok
else
	not_ok "the database and brute force differ: $out"
fi

# exact where it can be: no tied magnitude, at most 60 hosts
check_eq "10 hosts that all gained: exact, p = 2/2^10, interval from W" \
	"$(qn <<<"SELECT n, w, exact, p, estimate, lo, hi FROM fleetbench_signed_rank('{1,2,3,4,5,6,7,8,9,10}')")" \
	"10|55|t|0.001953125|5.5|3|8"
check_eq "5 hosts: no 95% interval exists (the smallest p is 2/32)" \
	"$(qn <<<"SELECT n, p, lo, hi FROM fleetbench_signed_rank('{-1,-2,-3,-4,-5}')")" \
	"5|0.0625|NULL|NULL"
check_eq "tied magnitudes: the normal approximation, said" \
	"$(qn <<<"SELECT exact FROM fleetbench_signed_rank('{-1,-1,-2,-3,-4,-5,-6}')")" f
check_eq "no host, or only zeros: n 0 and nothing else" \
	"$(qn <<<"SELECT concat_ws('|', n, p, estimate) FROM fleetbench_signed_rank('{}') UNION ALL SELECT concat_ws('|', n, p, estimate) FROM fleetbench_signed_rank('{0,0,NULL}')")" \
	"0
0"
check_eq "BH: NULLs stay NULL and do not count" \
	"$(qn <<<"SELECT fleetbench_bh('{0.01,NULL,0.02}')")" "{0.02,NULL,0.02}"

# the normal approximation (above 60 hosts) where the exact test still
# reaches: 60 hosts exactly, the same with one more, tiny, change
check_eq "61 hosts, approximated, agree with the same 60 exactly" \
	"$(qn <<-'EOF'
		WITH v AS (SELECT ARRAY(SELECT -0.01 + 0.03 * sin(i * 12.9898)
					FROM generate_series(1, 60) AS i) AS a)
		SELECT e.exact, x.exact, x.p / e.p BETWEEN 0.67 AND 1.5,
		       abs(x.lo - e.lo) < 0.001 AND abs(x.hi - e.hi) < 0.001
		FROM v, fleetbench_signed_rank(v.a) AS e,
		     fleetbench_signed_rank(v.a || 0.00001::float8) AS x
	EOF
	)" "t|f|t|t"
check_eq "31 hosts in two sets, approximated, agree with the same 30 exactly" \
	"$(qn <<-'EOF'
		WITH v AS (SELECT ARRAY(SELECT 0.03 * sin(i * 12.9898)
					FROM generate_series(1, 15) AS i) AS x,
				  ARRAY(SELECT -0.04 + 0.03 * sin(i * 78.233)
					FROM generate_series(1, 15) AS i) AS y)
		SELECT abs(a.lo - e.lo) < 0.002 AND abs(a.hi - e.hi) < 0.002
		FROM v, fleetbench_hodges_lehmann(v.x, v.y) AS e,
		     fleetbench_hodges_lehmann(v.x, v.y || (-0.04)::float8) AS a
	EOF
	)" t
# 100 hosts that each lost 8% (log-ratio, noise 3%): the approximation's
# p is tiny and the interval covers the truth; 100 hosts without a change
# are not significant
check_eq "100 paired hosts at -8%: significant, the interval covers -8%" \
	"$(qn <<-'EOF'
		SELECT exact, p < 1e-10, lo < ln(0.92) AND ln(0.92) < hi,
		       hi - lo < 0.02
		FROM fleetbench_signed_rank(ARRAY(
			SELECT ln(0.92) + 0.03 * sin(i * 12.9898) FROM generate_series(1, 100) AS i))
	EOF
	)" "f|t|t|t"
check_eq "100 paired hosts without a change: not significant" \
	"$(qn <<-'EOF'
		SELECT p > 0.05, lo < 0 AND 0 < hi
		FROM fleetbench_signed_rank(ARRAY(
			SELECT 0.03 * sin(i * 12.9898) FROM generate_series(1, 100) AS i))
	EOF
	)" "t|t"
check_eq "two sets of 60 hosts 8% apart: the shift's interval covers it" \
	"$(qn <<-'EOF'
		SELECT lo < ln(0.92) AND ln(0.92) < hi, hi < 0
		FROM fleetbench_hodges_lehmann(
			ARRAY(SELECT 0.03 * sin(i * 12.9898) FROM generate_series(1, 60) AS i),
			ARRAY(SELECT ln(0.92) + 0.03 * sin(i * 78.233) FROM generate_series(1, 60) AS i))
	EOF
	)" "t|t"

finish
