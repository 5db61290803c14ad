#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Item 10 of docs/reliability.md: texts with quotes, backslashes, SQL
# fragments, control characters and non-ASCII, each put in every free-text
# field of a report (tests/sample_report.h), spooled and sent by the real
# agent: every column and JSON value they land in holds them byte for byte,
# but the labels and the hostname, which tables print, where a control
# character has the report rejected, naming the field.
set -uo pipefail

# shellcheck source=tests/reliability/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rel_setup strings a1
start_collector

rocket=🚀
texts=(
	"it's \"quoted\", 'single' and \`back\` ticks"
	'back\slash \\ \n \t \0 \x41 \u0041 \'
	"'); DROP TABLE runs; --"
	"Robert'); DELETE FROM runs WHERE ('1' = '1"
	'$$ $body$ E'"'"'\x41'"'"' %s %n {} ${HOME} $(id) `id`'
	"Grüße — 東京 ☃ $rocket עברית é 👩‍💻"
	$'line one\nline two\ttab\rreturn\x01\x7f'
	'{"key": [1, "two", null], "esc": "\u0000"}'
	"$(for _ in $(seq 256); do printf '%s' "$rocket"; done)"
)

# where the text lands: "table|column expression|row filter"
fields=(
	"runs|agent_version|true"
	"runs|provider|true"
	"runs|instance_type|true"
	"runs|region|true"
	"runs|hostname|true"
	"runs|kernel_version|true"
	"runs|kernel_cmdline|true"
	"runs|profile|true"
	"runs|runs.probe->>'text'|true"
	"bench_results|benchmark|benchmark = :'t'"
	"bench_results|variant|benchmark = :'t'"
	"bench_results|skip_reason|benchmark = :'t'"
	"bench_results|parameters->>:'t'|benchmark = :'t'"
	"bench_results|(SELECT k FROM jsonb_object_keys(parameters) k)|benchmark = :'t'"
	"comparisons|name|true"
	"comparisons|benchmark|true"
	"comparisons|metric|true"
	"comparisons|numerator|true"
	"comparisons|denominator|true"
	"comparisons|method|true"
	"comparisons|reason|true"
)

checked=0 refused=0
for i in "${!texts[@]}"; do
	t=${texts[$i]}
	plain=()
	# the labels that tables print refuse control characters (one rule
	# with the tags', issue 38); the other fields keep them
	if [[ $t == *[[:cntrl:]]* ]]; then
		spoolgen a1 1 --text "$t"
		ragent a1 send
		check_eq "text $i in the labels: the report is rejected" \
			"$(cat "$tmp/a1.out")" \
			"sent 1, committed 0, duplicate 0, rejected 1, quarantined 0, remaining 0"
		check_grep "text $i in the labels: the rejection names the label" \
			"$tmp/a1.err" "host.provider: holds a control character"
		refused=$((refused + 1))
		plain=(--plain-labels)
	fi
	spoolgen a1 1 --text "$t" "${plain[@]}"
	id=$(tail -n 1 "$tmp/ledger/a1.ids")
	ragent a1 send
	check_eq "text $i: the report is stored" "$?|$(cat "$tmp/a1.out")" \
		"0|sent 1, committed 1, duplicate 0, rejected 0, quarantined 0, remaining 0"
	want=$(hex "$t")
	for f in "${fields[@]}"; do
		IFS='|' read -r table expr filter <<<"$f"
		case ${#plain[@]}:$expr in
		1:provider | 1:instance_type | 1:region | 1:hostname) continue ;;
		esac
		got=$("$PG_BINDIR/psql" "$conninfo" -X -q -A -t -v ON_ERROR_STOP=1 \
			-v t="$t" -v id="$id" <<-EOF
			SELECT encode(convert_to($expr, 'UTF8'), 'hex')
			FROM $table WHERE run_id = :'id' AND $filter
		EOF
		)
		check_eq "text $i: $table.$expr is the text, byte for byte" \
			"$got" "$want"
		checked=$((checked + 1))
	done
done
check_eq "nothing else was stored, no table was dropped" \
	"$(q <<<"SELECT count(*) FROM runs")" "${#texts[@]}"
figures "strings: ${#texts[@]} texts (quotes, backslashes, SQL, control characters, non-ASCII, 1024 bytes of 4-byte characters) x ${#fields[@]} fields: $checked values stored byte for byte; $refused with control characters refused in the labels, naming them"

rel_check_end
stop_collector
check_eq "the collector exits 0" "$?" 0
finish
