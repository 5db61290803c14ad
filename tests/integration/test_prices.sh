#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fleetbench prices import / list, rank --per-price and the report's
# price/performance section on the fleet fixture (fleet_load:
# tests/fixtures/README.md): a good file is stored as written and again
# changes nothing; a file with bad lines names each line and stores
# nothing; each priced figure per price is the median over the runs
# (computed here from run_figures) over the price in effect; a type
# without a price is listed as unpriced, never given another's price; the
# report has the section only when prices exist.
#
# Environment: SOURCE_DIR, BUILD_DIR (the build tree, default
# SOURCE_DIR/build), FLEETBENCH (the CLI, default under BUILD_DIR),
# PG_BINDIR; fleet_load's COLLECTOR, AGENT and FLEETGEN.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
require_built "$FLEETBENCH"

tmp_new prices
trap 'exit 1' INT TERM HUP
fleet_load

q() {
	"$PG_BINDIR/psql" "$conninfo" -X -q -A -t -v ON_ERROR_STOP=1 "$@"
}

fb() {
	"$FLEETBENCH" --dsn "$conninfo" "$@"
}

# stored: the price rows, one line each, in key order
stored() {
	q <<<"SELECT provider, instance_type, region, currency, price_per_hour,
		     valid_from, imported_at
	      FROM instance_prices ORDER BY 1, 2, 3, 4, 6"
}

# --- the report without prices ----------------------------------------------

fb report --out "$tmp/before.html" 2>"$tmp/before.err"
check_eq "report without prices exits 0" "$?" 0
check_eq "no price/performance section without prices" \
	"$(grep -c 'id="price-performance"' "$tmp/before.html")" 0

# --- import -------------------------------------------------------------------

# e2-standard-4 runs in europe-west1 but is priced in us-central1 only;
# ovh b2-7 has no price; m6i.large's 2099 price is not in effect yet
cat >"$tmp/good.csv" <<'EOF'
provider,instance_type,region,currency,price_per_hour,valid_from
aws,m6i.large,us-east-1,USD,0.096,2024-01-01
aws,m6i.large,us-east-1,USD,0.2,2099-01-01
aws,m6i.large,us-east-1,USD,0.09,2023-01-01
aws,c6i.xlarge,us-east-1,USD,0.17,2024-01-01
gcp,n2-standard-2,europe-west1,USD,0.0971,2024-01-01
gcp,e2-standard-4,us-central1,USD,0.134,2024-01-01
hetzner,cx22,fsn1,USD,0.0066,2024-01-01
"hetzner","ccx23","fsn1","USD","0.0432","2024-01-01"
EOF
fb prices import "$tmp/good.csv" --format csv >"$tmp/import1.csv" 2>"$tmp/import1.err"
check_eq "a good file imports: exit 0" "$?" 0
check_eq "every line is new" "$(tail -n 1 "$tmp/import1.csv")" "8,8,0,0"
check_eq "the rows are stored as written" \
	"$(q <<<"SELECT count(*), string_agg(price_per_hour::text, ' ' ORDER BY provider, instance_type, valid_from)
		FROM instance_prices")" \
	"8|0.17 0.09 0.096 0.2 0.134 0.0971 0.0432 0.0066"
check_eq "a quoted CSV line is read as its values" \
	"$(q <<<"SELECT currency || ' ' || valid_from FROM instance_prices WHERE instance_type = 'ccx23'")" \
	"USD 2024-01-01"
stored >"$tmp/stored1"

fb prices import "$tmp/good.csv" --format csv >"$tmp/import2.csv" 2>&1
check_eq "importing it again exits 0" "$?" 0
check_eq "again: every line unchanged" "$(tail -n 1 "$tmp/import2.csv")" "8,0,0,8"
stored >"$tmp/stored2"
if cmp -s "$tmp/stored1" "$tmp/stored2"; then
	ok
else
	not_ok "importing again changed the rows: $(diff "$tmp/stored1" "$tmp/stored2")"
fi

printf 'provider,instance_type,region,currency,price_per_hour,valid_from\naws,c6i.xlarge,us-east-1,USD,0.18,2024-01-01\n' \
	>"$tmp/change.csv"
fb prices import "$tmp/change.csv" --format csv >"$tmp/import3.csv" 2>&1
check_eq "a new price for a stored key replaces it" \
	"$(tail -n 1 "$tmp/import3.csv")|$(q <<<"SELECT price_per_hour FROM instance_prices WHERE instance_type = 'c6i.xlarge'")" \
	"1,0,1,0|0.18"

fb prices list --format csv >"$tmp/list.csv"
check_eq "prices list exits 0" "$?" 0
check_eq "list: the statuses of m6i.large's three prices" \
	"$(grep m6i.large "$tmp/list.csv" | cut -d, -f5,7 | tr '\n' ' ')" \
	"0.09,superseded 0.096,current 0.2,future "

# --- bad files: each bad line named, nothing stored --------------------------

stored >"$tmp/stored-before-bad"
# lines 2 to 6 are bad, line 7 is good
cat >"$tmp/bad.csv" <<'EOF'
provider,instance_type,region,currency,price_per_hour,valid_from
aws,t3.micro,us-east-1,USD,-0.0104,2024-01-01
aws,t3.small,us-east-1,usd,0.0208,2024-01-01
aws,t3.medium,us-east-1,USD,0.0416,2024-02-30
aws,t3.large,us-east-1,USD,cheap,2024-01-01
,t3.xlarge,us-east-1,USD,0.1664,yesterday
aws,t3.2xlarge,us-east-1,USD,0.3328,2024-01-01
EOF
fb prices import "$tmp/bad.csv" >"$tmp/bad.out" 2>"$tmp/bad.err"
check_eq "bad lines: exit 1" "$?" 1
check_grep "negative price named with its line" "$tmp/bad.err" \
	"^$tmp/bad.csv:2: price_per_hour -0.0104 is not above 0$"
check_grep "bad currency named with its line" "$tmp/bad.err" \
	"^$tmp/bad.csv:3: currency 'usd' is not an ISO 4217 code"
check_grep "bad date named with its line" "$tmp/bad.err" \
	"^$tmp/bad.csv:4: valid_from '2024-02-30' is not a date"
check_grep "a price that is no number named with its line" "$tmp/bad.err" \
	"^$tmp/bad.csv:5: price_per_hour 'cheap' is not a decimal number"
check_grep "every fault of a line named" "$tmp/bad.err" \
	"^$tmp/bad.csv:6: provider is empty; valid_from 'yesterday' is not a date"
check_eq "the good line is not named" "$(grep -c "bad.csv:7:" "$tmp/bad.err")" 0
check_grep "the bad lines are counted" "$tmp/bad.err" "5 bad lines: nothing imported"

# COPY's end-of-data marker alone on a line would end the file there
# without a word (every line after it dropped, "1 line added")
printf 'provider,instance_type,region,currency,price_per_hour,valid_from\naws,t3.nano,us-east-1,USD,0.0052,2024-01-01\n\\.\naws,t3.nano,us-east-1,USD,bad,2024-01-01\n' \
	>"$tmp/marker.csv"
fb prices import "$tmp/marker.csv" >/dev/null 2>"$tmp/marker.err"
check_eq "a line of \\. alone: exit 1" "$?" 1
check_grep "it is named with its line, and why" "$tmp/marker.err" \
	"^$tmp/marker.csv:3: the line is \\\\\\. alone, which COPY takes for the end of the data"
printf 'provider,instance_type,region,currency,price_per_hour,valid_from\naws,t3.nano,us-east-1,USD,0.0052,2024-01-01\n\\.' \
	>"$tmp/marker-end.csv"
fb prices import "$tmp/marker-end.csv" >/dev/null 2>"$tmp/marker-end.err"
check_eq "one at the end of the file, without a newline: exit 1" "$?" 1
start=$SECONDS
timeout 60 "$FLEETBENCH" --dsn "$conninfo" prices import /dev/zero \
	>/dev/null 2>"$tmp/zero.err"
check_eq "prices import /dev/zero: exit 1" "$?" 1
check_eq "at once, not streaming on after the first byte" \
	"$((SECONDS - start < 10))" 1
check_grep "the NUL byte named with its line" "$tmp/zero.err" \
	"^/dev/zero:1: the line holds a NUL byte"
check_eq "nothing of them stored" "$(stored)" "$(cat "$tmp/stored-before-bad")"

printf 'provider,instance_type,region,currency,price_per_hour,valid_from\naws,t3.micro,us-east-1,USD,0.0104,2024-01-01\naws,t3.small,us-east-1,USD,0.0208\n' \
	>"$tmp/missing.csv"
fb prices import "$tmp/missing.csv" >/dev/null 2>"$tmp/missing.err"
check_eq "a missing column: exit 1" "$?" 1
check_grep "a missing column named with its line" "$tmp/missing.err" \
	"^$tmp/missing.csv:3: missing data for column \"valid_from\""

printf 'provider,instance_type,region,currency,price_per_hour,valid_from\naws,t3.micro,us-east-1,USD,0.0104,2024-01-01\naws,t3.micro,us-east-1,USD,0.0104,2024-01-01,spot\n' \
	>"$tmp/extra.csv"
fb prices import "$tmp/extra.csv" >/dev/null 2>"$tmp/extra.err"
check_eq "an extra column: exit 1" "$?" 1
check_grep "an extra column named with its line" "$tmp/extra.err" \
	"^$tmp/extra.csv:3: extra data after last expected column"

printf 'provider,instance_type,region,currency,price_per_hour,valid_from,discount\naws,t3.micro,us-east-1,USD,0.0104,2024-01-01,0.1\n' \
	>"$tmp/unknown.csv"
fb prices import "$tmp/unknown.csv" >/dev/null 2>"$tmp/unknown.err"
check_eq "an unknown column in the header: exit 1" "$?" 1
check_grep "the header named as line 1" "$tmp/unknown.err" \
	"^$tmp/unknown.csv:1: wrong number of fields in header line"

printf 'provider,instance_type,region,currency,price,valid_from\naws,t3.micro,us-east-1,USD,0.0104,2024-01-01\n' \
	>"$tmp/renamed.csv"
fb prices import "$tmp/renamed.csv" >/dev/null 2>"$tmp/renamed.err"
check_grep "a column of another name refused with its line" "$tmp/renamed.err" \
	"^$tmp/renamed.csv:1: column name mismatch in header line field 5: got \"price\""

printf 'provider,instance_type,region,currency,price_per_hour,valid_from\naws,t3.micro,us-east-1,USD,0.0104,2024-01-01\naws,t3.micro,us-east-1,USD,0.011,2024-01-01\n' \
	>"$tmp/twice.csv"
fb prices import "$tmp/twice.csv" >/dev/null 2>"$tmp/twice.err"
check_grep "a key given twice names both lines" "$tmp/twice.err" \
	"^$tmp/twice.csv:3: the same provider, instance_type, region, currency and valid_from as line 2$"

stored >"$tmp/stored-after-bad"
if cmp -s "$tmp/stored-before-bad" "$tmp/stored-after-bad"; then
	ok
else
	not_ok "a refused file changed the prices: $(diff "$tmp/stored-before-bad" "$tmp/stored-after-bad")"
fi
check_eq "no t3 price was stored" \
	"$(q <<<"SELECT count(*) FROM instance_prices WHERE instance_type LIKE 't3.%'")" 0

fb prices import "$tmp/none.csv" >/dev/null 2>"$tmp/none.err"
check_eq "a missing file: exit 1" "$?" 1
check_grep "a missing file named" "$tmp/none.err" "cannot open '$tmp/none.csv'"

# --- rank --per-price -----------------------------------------------------------

check_eq "the fixture's runs are of one method" \
	"$(q <<<"SELECT count(DISTINCT method) FROM run_figures")" 1

fb rank --per-price --format csv >"$tmp/pp.csv" 2>"$tmp/pp.err"
check_eq "rank --per-price exits 0" "$?" 0

# the CLI's priced rows: metric|provider|type|region|price|per_price
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$c["per_price"] != "" { print $c["metric"] "|" $c["provider"] "|" $c["instance_type"] "|" $c["region"] "|" $c["price_per_hour"] "|" $c["per_price"] }' \
	"$tmp/pp.csv" | sort >"$tmp/pp-cli"
# the same computed here: the median over the runs (percentile_cont),
# rounded as shown, over the price of the latest valid_from not after today
q >"$tmp/pp-sql" <<'EOF'
WITH fig AS (
	SELECT f.provider, f.instance_type, f.region, x.metric, x.v
	FROM run_figures_wide AS f,
	     LATERAL (VALUES ('iouring_iops', f.iouring_iops),
			     ('pread_iops', f.pread_iops),
			     ('iouring_best_iops', f.iouring_best_iops),
			     ('membw_triad_gbps', f.membw_triad_gbps)) AS x(metric, v)
	WHERE x.v IS NOT NULL
), med AS (
	SELECT metric, provider, instance_type, region, count(*) AS n,
	       round((percentile_cont(0.5) WITHIN GROUP (ORDER BY v))::numeric, 3) AS m
	FROM fig GROUP BY 1, 2, 3, 4
), price AS (
	SELECT DISTINCT ON (provider, instance_type, region)
	       provider, instance_type, region, price_per_hour
	FROM instance_prices
	WHERE currency = 'USD' AND valid_from <= current_date
	ORDER BY provider, instance_type, region, valid_from DESC
)
SELECT med.metric || '|' || med.provider || '|' || med.instance_type || '|' ||
       med.region || '|' || p.price_per_hour || '|' ||
       round(med.m / p.price_per_hour, 3)
FROM med JOIN price AS p USING (provider, instance_type, region)
WHERE med.n >= 6
ORDER BY 1
EOF
# the same order as sort's
sort -o "$tmp/pp-sql" "$tmp/pp-sql"
check_eq "four figures of five priced types" \
	"$(grep -vc '^chase_accesses_per_s' "$tmp/pp-cli")" 20
if [ -s "$tmp/pp-sql" ] && diff <(grep -v '^chase_accesses_per_s' "$tmp/pp-cli") \
	"$tmp/pp-sql" >"$tmp/pp.diff"; then
	ok
else
	not_ok "per_price is not the median over the price: $(head -5 "$tmp/pp.diff")"
fi
check_eq "the price in effect: m6i.large's 2024 price, not 2023's or 2099's" \
	"$(grep '^iouring_iops|aws|m6i.large' "$tmp/pp-cli" | cut -d'|' -f5)" 0.096

# accesses per second: 10^9 over the pointer chase's median ns per access
check_eq "accesses/s per price of cx22" \
	"$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["metric"] == "chase_accesses_per_s" && $c["instance_type"] == "cx22" { print $c["median"] "|" $c["per_price"] }' "$tmp/pp.csv")" \
	"$(q <<<"SELECT round(1e9 / m.median, 3) || '|' || round(round(1e9 / m.median, 3) / 0.0066, 3)
		FROM fleet_metric_by('thp_chase/4k/ns_per_access', '{provider,instance_type,region}') AS m
		WHERE m.instance_type = 'cx22'")"

unpriced_rows() {
	awk -F, -v t="$1" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["instance_type"] == t { print $c["rank"] "|" $c["price_per_hour"] "|" $c["per_price"] "|" $c["note"] }' \
		"$tmp/pp.csv" | sort -u
}
check_eq "b2-7, without a price, is listed unpriced for every figure" \
	"$(unpriced_rows b2-7)" "|||unpriced: no USD price of ovh b2-7 in region gra"
check_eq "e2-standard-4 is not given its other region's price" \
	"$(unpriced_rows e2-standard-4)" \
	"|||unpriced: no USD price of gcp e2-standard-4 in region europe-west1"
check_eq "each figure lists its unpriced types after the priced" \
	"$(awk -F, 'NR > 1 { if ($1 != m) { m = $1; seen = 0 } if ($3 == "") seen = 1; else if (seen) bad++ }
		END { print bad + 0 }' "$tmp/pp.csv")" 0

fb rank --per-price --metric iouring_iops >"$tmp/pp-table.txt" 2>&1
check_eq "a table exits 0" "$?" 0
check_grep "a table says the unit once" "$tmp/pp-table.txt" "^per_price_unit: IOPS per USD/h$"
fb rank --per-price --metric iouring_iops --format json >"$tmp/pp.json" 2>&1
check_eq "json: seven instance types" \
	"$(/usr/bin/python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$tmp/pp.json")" 7

fb rank --per-price --metric thp_speedup >/dev/null 2>"$tmp/ratio.err"
check_eq "a ratio per price is refused: exit 2" "$?" 2
check_grep "naming the figures it takes" "$tmp/ratio.err" "per price ranks the absolute figures"

printf 'provider,instance_type,region,currency,price_per_hour,valid_from\novh,b2-7,gra,EUR,0.041,2024-01-01\n' \
	>"$tmp/eur.csv"
fb prices import "$tmp/eur.csv" >/dev/null 2>&1
fb rank --per-price >/dev/null 2>"$tmp/two.err"
check_eq "two currencies without --currency: exit 2" "$?" 2
check_grep "naming them" "$tmp/two.err" "the prices are in EUR, USD: choose one"
fb rank --per-price --currency EUR --metric iouring_iops --format csv >"$tmp/eur-rank.csv"
check_eq "--currency EUR: b2-7 ranked alone, in EUR" \
	"$(awk -F, 'NR > 1 && $3 != "" { print $3 "|" $6 "|" $12 "|" $18 }' "$tmp/eur-rank.csv")" \
	"1|b2-7|EUR|IOPS per EUR/h"

# --- the report with prices -----------------------------------------------------

fb report --out "$tmp/after.html" 2>"$tmp/after.err"
check_eq "report with prices exits 0" "$?" 0
check_eq "one price/performance section" \
	"$(grep -c 'id="price-performance"' "$tmp/after.html")" 1
check_eq "a chart per figure and currency" \
	"$(grep -o 'data-per-price="[a-z_]*" data-currency="[A-Z]*"' "$tmp/after.html" | sort | tr '\n' ' ')" \
	"$(for m in chase_accesses_per_s iouring_best_iops iouring_iops membw_triad_gbps pread_iops; do
		printf 'data-per-price="%s" data-currency="EUR" ' $m
		printf 'data-per-price="%s" data-currency="USD" ' $m
	done)"
check_grep "the charts are SVG of per_price" "$tmp/after.html" '<svg class="chart"[^>]*data-metric="per_price"'
check_grep "the unpriced type named" "$tmp/after.html" \
	'Unpriced in USD .*gcp e2-standard-4 \(europe-west1\)'

finish
