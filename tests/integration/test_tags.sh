#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Tags (issue 17): `fleetbench-agent run --tag` and agent.conf's tag lines
# travel in the Report to the collector and are stored with the run
# (runs.tags, run_figures.tags); `--where tag.KEY=VALUE` counts only the
# tagged runs, with the figures psql computes from run_figures, and
# `--by tag.KEY` groups by the tag; rank, kernels and report take --where
# too, and --by tag.KEY (rank within each tag group, kernels and the
# report's rows per group, the figures psql's over the tagged runs; other
# keys and rank --per-price --by refused); bad tags are refused by the
# agent (exit 2, nothing run) and, sent raw, by the collector with the
# reason.
#
# Environment: SOURCE_DIR, BUILD_DIR, FLEETBENCH, PG_BINDIR, ZSEND;
# fleet_load's COLLECTOR, AGENT and FLEETGEN.
set -uo pipefail

# shellcheck source=tests/integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$SOURCE_DIR/build}
FLEETBENCH=${FLEETBENCH:-$BUILD_DIR/cli/fleetbench}
ZSEND=${ZSEND:-$BUILD_DIR/tests/integration/zsend}
for bin in "$FLEETBENCH" "$ZSEND"; do
	if [ ! -x "$bin" ]; then
		not_ok "'$bin' is not built"
		finish
	fi
done

tmp_new tags
trap 'exit 1' INT TERM HUP
fleet_load

fb() {
	"$FLEETBENCH" --dsn "$conninfo" "$@"
}

# tagrun NAME [ARGS]: a quick run with the fleet's agent key, sent to the
# fleet's collector; stdout and stderr in $tmp/NAME.out
tagrun() {
	local name=$1

	shift
	"$AGENT" run --profile quick --only false_sharing \
		--fs-increments 100000 --repeats 2 --steal-window 0 \
		--dir "$tmp" --spool-dir "$tmp/spool.$name" \
		--state-dir "$tmp/state.$name" --endpoint "$fleet_endpoint" \
		--server-key "$fleet_keys/collector.pub" \
		--agent-key "$fleet_keys/agent.key" --send-timeout 10000 \
		--provider tagtest --instance-type t1 "$@" >"$tmp/$name.out" 2>&1
}

# csvcol FILE COLUMN...: those columns of a CSV file with a header, by
# name, as "a|b" lines
csvcol() {
	local file=$1

	shift
	awk -F, -v want="$*" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; n = split(want, w, " "); next }
		{ line = ""; for (i = 1; i <= n; i++) line = line (i > 1 ? "|" : "") $col[w[i]]; print line }
	' "$file"
}

# runs_sum FILE: the sum of a CSV file's runs column
runs_sum() {
	csvcol "$1" runs | awk '{ n += $1 } END { print n + 0 }'
}

# --- the agent: flags and agent.conf -----------------------------------------

printf '[agent]\ntag = env=staging\ntag = team=storage\ntag = site=fra 1 (rack=4)\n' \
	>"$tmp/agent.conf"
tagrun conf --config "$tmp/agent.conf"
check_eq "run with agent.conf's tag lines exits 0" "$?" 0
tagrun flags --config "$tmp/agent.conf" --tag env=prod --tag owner=ops
check_eq "run with --tag over agent.conf exits 0" "$?" 0
tagrun bare
check_eq "run without tags exits 0" "$?" 0
check_eq "the tags are stored with each run, a flag overriding the file's key" \
	"$(q <<<"SELECT string_agg(tags::text, ' | ' ORDER BY started_at) FROM runs WHERE provider = 'tagtest'")" \
	'{"env": "staging", "site": "fra 1 (rack=4)", "team": "storage"} | {"env": "prod", "site": "fra 1 (rack=4)", "team": "storage", "owner": "ops"} | {}'
check_eq "run_figures holds the same tags" \
	"$(q <<<"SELECT count(*) FROM runs r JOIN run_figures f USING (run_id) WHERE r.provider = 'tagtest' AND r.tags = f.tags")" 3

# refused WHAT ARGS: refused before anything runs: exit 2, nothing spooled
refused() {
	local what=$1

	shift
	rm -rf "$tmp/spool.refused"
	tagrun refused "$@"
	check_eq "$what: exit 2" "$?" 2
	check_eq "$what: nothing spooled" \
		"$(find "$tmp/spool.refused" -name '*.fbr' 2>/dev/null | wc -l)" 0
}
refused "a bad key" --tag Env=prod
check_grep "a bad key is named" "$tmp/refused.out" \
	"bad value for --tag: agent.tag: 'Env=prod': tag: bad key \(3 bytes\): a key is 1 to 32 of \[a-z0-9_\], starting with a letter"
refused "no '='" --tag env
check_grep "a tag without '=' is named" "$tmp/refused.out" \
	"bad value for --tag: agent.tag: 'env': expected key=value"
refused "a value too long" --tag "env=$(printf 'x%.0s' $(seq 65))"
check_grep "a long value is named" "$tmp/refused.out" \
	"tag env: value is 65 bytes, at most 64"
# one key twice: which value was meant? (issue 38: the last one was
# kept without a word); a flag still replaces agent.conf's line
refused "a key given twice" --tag env=prod --tag env=dev
check_grep "the key given twice is named" "$tmp/refused.out" \
	"bad value for --tag: agent.tag: 'env' given twice"
printf '[agent]\ntag = env=prod\ntag = owner=ops\ntag = env=dev\n' \
	>"$tmp/twice.conf"
refused "a key twice in agent.conf" --config "$tmp/twice.conf"
check_grep "the line and the key are named" "$tmp/refused.out" \
	"twice.conf:4: 'tag' in \[agent\]: 'env' is set again \(an earlier line set it\)"
many=()
for i in $(seq 1 17); do
	many+=(--tag "k$i=v")
done
refused "17 tags" "${many[@]}"
check_grep "too many tags is said" "$tmp/refused.out" \
	"too many tags: 'k17' would be key 17, at most 16"
printf '[agent]\ntag = env=prod\ntag = 9lives=x\n' >"$tmp/bad.conf"
refused "a bad key in agent.conf" --config "$tmp/bad.conf"
check_grep "agent.conf's bad line is named with its file and line" \
	"$tmp/refused.out" "$tmp/bad.conf:3: agent.tag: '9lives=x': tag: bad key"
check_eq "no refused run reached the collector" \
	"$(q <<<"SELECT count(*) FROM runs WHERE provider = 'tagtest'")" 3

# --- the collector: a report with a bad tag, sent raw -------------------------

tagrun raw --no-send
check_eq "a report spooled without sending" "$?" 0
fbr=$(find "$tmp/spool.raw" -name '*.fbr' | head -1)
# the packed Report after the spool's 64-byte header (docs/spool.md), and
# field 16 appended (a protobuf message may end so): a Tag of key "Env"
tail -c +65 "$fbr" >"$tmp/badtag.bin"
printf '\x82\x01\x0b\x0a\x03Env\x12\x04prod' >>"$tmp/badtag.bin"
zraw() {
	"$ZSEND" --endpoint "$fleet_endpoint" \
		--server-key "$fleet_keys/collector.pub" \
		--agent-key "$fleet_keys/agent.key" --timeout 10000 --file "$1" 2>&1
}
check_match "the collector rejects a bad tag key, saying why" \
	"$(zraw "$tmp/badtag.bin")" \
	"ack REJECTED *tags\[0\]: tag: bad key (3 bytes): a key is 1 to 32 of \[a-z0-9_\], starting with a letter*"
tail -c +65 "$fbr" >"$tmp/twice.bin"
printf '\x82\x01\x0b\x0a\x03env\x12\x04prod\x82\x01\x0b\x0a\x03env\x12\x04test' \
	>>"$tmp/twice.bin"
check_match "the collector rejects a key given twice" \
	"$(zraw "$tmp/twice.bin")" \
	"ack REJECTED *tags\[1\]: tag env: the same key as tags\[0\]*"
check_eq "neither is stored" \
	"$(q <<<"SELECT count(*) FROM runs WHERE provider = 'tagtest'")" 3

# --- queries on the fleet fixture, tagged here --------------------------------

# the fixture's runs in start order: odd ones env=prod, even ones env=dev;
# team=storage on the GCP runs, no team on the others
q >/dev/null <<<"
	CREATE TEMP TABLE t AS
	SELECT run_id, jsonb_build_object('env',
		CASE WHEN row_number() OVER (ORDER BY started_at, run_id) % 2 = 1
		     THEN 'prod' ELSE 'dev' END)
	       || CASE WHEN provider = 'gcp' THEN '{\"team\": \"storage\"}'::jsonb
		       ELSE '{}' END AS tags
	FROM runs WHERE provider <> 'tagtest';
	UPDATE runs AS r SET tags = t.tags FROM t WHERE r.run_id = t.run_id;
	UPDATE run_figures AS f SET tags = t.tags FROM t WHERE f.run_id = t.run_id;"
check_eq "the fixture is tagged" \
	"$(q <<<"SELECT count(*) FILTER (WHERE tags ? 'env'), count(*) FILTER (WHERE tags @> '{\"env\": \"prod\"}') FROM run_figures WHERE provider <> 'tagtest'")" \
	"114|57"

# the method compare shows by default, that of the fixture's runs
fm=$(fb compare --format csv >"$tmp/default.csv" && csvcol "$tmp/default.csv" method | sort -u)
check_match "the fixture's runs are of one method" "$fm" "?*"
fb compare --where tag.env=prod --format csv >"$tmp/prod.csv" 2>"$tmp/prod.err"
check_eq "compare --where tag.env=prod exits 0" "$?" 0
# the figures psql computes from run_figures_wide over the prod runs of the
# default method, by provider, instance type and kernel
check_eq "compare --where tag.env=prod: the prod runs only, figures as psql computes them" \
	"$(csvcol "$tmp/prod.csv" provider instance_type kernel runs thp_speedup iouring_vs_pread)" \
	"$(q <<<"
	SELECT provider || '|' || instance_type || '|' || kernel_release || '|'
	       || count(*) || '|'
	       || coalesce(round(percentile_cont(0.5) WITHIN GROUP
			(ORDER BY thp_speedup)::numeric, 3)::text, '') || '|'
	       || coalesce(round(percentile_cont(0.5) WITHIN GROUP
			(ORDER BY iouring_vs_pread)::numeric, 3)::text, '')
	FROM run_figures_wide
	WHERE tags @> '{\"env\": \"prod\"}' AND method = '$fm'
	GROUP BY provider, instance_type, kernel_release
	ORDER BY provider, instance_type, kernel_release")"
check_eq "the prod groups count the 57 prod runs" "$(runs_sum "$tmp/prod.csv")" 57

fb compare --where tag.env=prod --where tag.env=dev --format csv \
	>"$tmp/both.csv" 2>&1
check_eq "a tag key given twice takes any of its values: every fixture run" \
	"$(runs_sum "$tmp/both.csv")" 114
fb compare --where tag.env=prod --where tag.team=storage --format csv \
	>"$tmp/and.csv" 2>&1
check_eq "two tag keys: the runs with both" "$(runs_sum "$tmp/and.csv")" \
	"$(q <<<"SELECT count(*) FROM run_figures WHERE method = '$fm' AND tags @> '{\"env\": \"prod\", \"team\": \"storage\"}'")"

fb compare --by tag.team --format csv >"$tmp/team.csv" 2>"$tmp/team.err"
check_eq "compare --by tag.team exits 0" "$?" 0
check_eq "--by tag.team: a group per value, (none) for runs without the tag" \
	"$(csvcol "$tmp/team.csv" tags runs)" \
	"$(q <<<"SELECT 'team=' || coalesce(tags ->> 'team', '(none)') || '|' || count(*) FROM run_figures WHERE method = '$fm' GROUP BY tags ->> 'team' ORDER BY 1")"
check_eq "--by tag.team: the thp_speedup of each group as psql computes it" \
	"$(csvcol "$tmp/team.csv" tags thp_speedup)" \
	"$(q <<<"SELECT 'team=' || coalesce(tags ->> 'team', '(none)') || '|' || coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY thp_speedup)::numeric, 3)::text, '') FROM run_figures_wide WHERE method = '$fm' GROUP BY tags ->> 'team' ORDER BY 1")"
fb compare --by provider,tag.env >"$tmp/table.out" 2>&1
check_grep "a table grouped by a tag shows the tags column" "$tmp/table.out" "env=prod"
fb compare >"$tmp/plain.out" 2>&1
if grep -q "tags" "$tmp/plain.out"; then
	not_ok "compare without --by tag.KEY shows a tags column"
else
	ok
fi

# bad --where and --by
fb compare --where tag.Env=prod >"$tmp/bad.out" 2>&1
check_eq "a bad tag key in --where: exit 2" "$?" 2
check_grep "a bad tag key in --where is named" "$tmp/bad.out" \
	"where: bad tag key 'tag.Env'"
fb compare --where tag.env >"$tmp/bad.out" 2>&1
check_eq "--where without '=': exit 2" "$?" 2
check_grep "--where without '=' is said" "$tmp/bad.out" "expected KEY=VALUE"
fb compare --by tag.9 >"$tmp/bad.out" 2>&1
check_grep "a bad tag key in --by is named" "$tmp/bad.out" "by: bad tag key 'tag.9'"

# rank, kernels and report take --where tag.KEY=VALUE
fb rank --metric iouring_vs_pread --min-runs 1 --where tag.env=prod \
	--format csv >"$tmp/rank.csv" 2>"$tmp/rank.err"
check_eq "rank --where tag.env=prod exits 0" "$?" 0
check_eq "rank --where tag.env=prod: runs and medians per instance type as psql computes them" \
	"$(csvcol "$tmp/rank.csv" provider instance_type runs median | sort)" \
	"$(q <<<"SELECT provider || '|' || instance_type || '|' || count(*) || '|' || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY iouring_vs_pread)::numeric, 3) FROM run_figures_wide WHERE method = '$fm' AND tags @> '{\"env\": \"prod\"}' AND iouring_vs_pread IS NOT NULL GROUP BY provider, instance_type ORDER BY 1")"
fb kernels --provider gcp --instance-type n2-standard-2 --where tag.env=prod \
	--format csv >"$tmp/kernels.csv" 2>"$tmp/kernels.err"
check_eq "kernels --where tag.env=prod exits 0" "$?" 0
check_eq "kernels --where tag.env=prod: runs per kernel as psql counts them" \
	"$(csvcol "$tmp/kernels.csv" kernel runs)" \
	"$(q <<<"SELECT kernel_release || '|' || count(*) FROM run_figures WHERE method = '$fm' AND tags @> '{\"env\": \"prod\"}' AND provider = 'gcp' AND instance_type = 'n2-standard-2' GROUP BY kernel_release ORDER BY min(started_at)")"
fb report --out "$tmp/prod.html" --where tag.env=prod >"$tmp/report.out" 2>&1
check_eq "report --where tag.env=prod exits 0" "$?" 0
check_grep "the report says which runs it shows" "$tmp/prod.html" "tag.env=prod"

# --- --by tag.KEY in rank, kernels and report ----------------------------------

# med COLUMN: psql's median of a run_figures_wide column, as the queries round it
med() {
	echo "round(percentile_cont(0.5) WITHIN GROUP (ORDER BY $1)::numeric, 3)"
}

# rank: instance types ranked within each tag group
fb rank --metric iouring_vs_pread --min-runs 1 --by tag.team --format csv \
	>"$tmp/rank-team.csv" 2>"$tmp/rank-team.err"
check_eq "rank --by tag.team exits 0" "$?" 0
check_eq "rank --by tag.team: each instance type in its team's group, runs and medians as psql computes them" \
	"$(csvcol "$tmp/rank-team.csv" tags provider instance_type runs median | sort)" \
	"$(q <<<"SELECT 'team=' || coalesce(tags ->> 'team', '(none)') || '|' || provider || '|' || instance_type || '|' || count(*) || '|' || $(med iouring_vs_pread) FROM run_figures_wide WHERE method = '$fm' AND iouring_vs_pread IS NOT NULL GROUP BY 1 = 1, tags ->> 'team', provider, instance_type ORDER BY 1")"
check_eq "rank --by tag.team: each group ranked on its own, from 1" \
	"$(csvcol "$tmp/rank-team.csv" tags rank | sort -t'|' -k1,1 -k2n | awk -F'|' '!seen[$1]++ { print }')" \
	"team=(none)|1
team=storage|1"
fb rank --metric iouring_vs_pread --min-runs 1 --by tag.env --format csv \
	>"$tmp/rank-env.csv" 2>&1
check_eq "rank --by tag.env: the figures of each env's runs, as psql computes them" \
	"$(csvcol "$tmp/rank-env.csv" tags provider instance_type runs median | sort)" \
	"$(q <<<"SELECT 'env=' || (tags ->> 'env') || '|' || provider || '|' || instance_type || '|' || count(*) || '|' || $(med iouring_vs_pread) FROM run_figures_wide WHERE method = '$fm' AND iouring_vs_pread IS NOT NULL AND provider <> 'tagtest' GROUP BY tags ->> 'env', provider, instance_type ORDER BY 1")"
fb rank --metric iouring_vs_pread --min-runs 1 --by tag.team >"$tmp/rank-team.out" 2>&1
check_grep "a rank table by a tag shows the tags column" "$tmp/rank-team.out" "team=storage"
fb rank --metric iouring_vs_pread --min-runs 1 >"$tmp/rank-plain.out" 2>&1
if grep -q "tags" "$tmp/rank-plain.out"; then
	not_ok "rank without --by shows a tags column"
else
	ok
fi
fb rank --metric iouring_vs_pread --by provider >"$tmp/bad.out" 2>&1
check_eq "rank --by a key that is not a tag: exit 2" "$?" 2
check_grep "rank --by a key that is not a tag is named" "$tmp/bad.out" \
	"by: only tag keys \(tag.KEY\) split these groups, not 'provider'"
fb rank --metric iouring_vs_pread --by tag.9 >"$tmp/bad.out" 2>&1
check_eq "rank --by a bad tag key: exit 2" "$?" 2
check_grep "rank --by a bad tag key is named" "$tmp/bad.out" "by: bad tag key 'tag.9'"
fb rank --per-price --by tag.team >"$tmp/bad.out" 2>&1
check_eq "rank --per-price --by tag.team: exit 2" "$?" 2
check_grep "rank --per-price --by is refused, saying why" "$tmp/bad.out" \
	"--per-price ranks instance types per region, not split by tags: --by 'tag.team'"

# kernels: a sequence of kernels per tag group
fb kernels --provider gcp --instance-type n2-standard-2 --by tag.team \
	--format csv >"$tmp/kernels-team.csv" 2>"$tmp/kernels-team.err"
check_eq "kernels --by tag.team exits 0" "$?" 0
check_eq "kernels --by tag.team: the GCP type's runs are all in team=storage" \
	"$(csvcol "$tmp/kernels-team.csv" tags kernel runs)" \
	"$(q <<<"SELECT 'team=' || coalesce(tags ->> 'team', '(none)') || '|' || kernel_release || '|' || count(*) FROM run_figures WHERE method = '$fm' AND provider = 'gcp' AND instance_type = 'n2-standard-2' GROUP BY tags ->> 'team', kernel_release ORDER BY 1, min(started_at)")"
fb kernels --provider gcp --instance-type n2-standard-2 --by tag.env \
	--format csv >"$tmp/kernels-env.csv" 2>&1
check_eq "kernels --by tag.env: per env, its kernels oldest first with the figures psql computes" \
	"$(csvcol "$tmp/kernels-env.csv" tags kernel runs thp_speedup iouring_vs_pread)" \
	"$(q <<<"SELECT 'env=' || (tags ->> 'env') || '|' || kernel_release || '|' || count(*) || '|' || coalesce($(med thp_speedup)::text, '') || '|' || coalesce($(med iouring_vs_pread)::text, '') FROM run_figures_wide WHERE method = '$fm' AND provider = 'gcp' AND instance_type = 'n2-standard-2' GROUP BY tags ->> 'env', kernel_release ORDER BY tags ->> 'env', min(started_at), kernel_release")"
check_eq "kernels --by tag.env: each group's first kernel has nothing to compare with" \
	"$(csvcol "$tmp/kernels-env.csv" tags changes | awk -F'|' '!seen[$1]++ { print }')" \
	"env=dev|
env=prod|"
fb kernels --provider gcp --instance-type n2-standard-2 --by kernel >"$tmp/bad.out" 2>&1
check_eq "kernels --by a key that is not a tag: exit 2" "$?" 2
check_grep "kernels --by a key that is not a tag is named" "$tmp/bad.out" \
	"by: only tag keys \(tag.KEY\) split these groups, not 'kernel'"

# report: each instance type's charts, matrix row and changes per tag group
fb report --out "$tmp/team.html" --by tag.team >"$tmp/report-team.out" 2>&1
check_eq "report --by tag.team exits 0" "$?" 0
check_grep "the report's title says how it is split" "$tmp/team.html" \
	"<h1>fleetbench report \(by tag.team\)</h1>"
# (of every method: the report shows each kernel's own)
check_eq "report --by tag.team: a matrix row per instance type and team" \
	"$(grep -o '<tr data-instance-type="[^"]*" data-tags="[^"]*"' "$tmp/team.html" | sed -E 's/.*type="([^"]*)" data-tags="([^"]*)"/\2|\1/' | sort)" \
	"$(q <<<"SELECT DISTINCT 'team=' || coalesce(tags ->> 'team', '(none)') || '|' || instance_type FROM run_figures ORDER BY 1")"
fb report --out "$tmp/env.html" --by tag.env --where provider=gcp \
	>"$tmp/report-env.out" 2>&1
check_eq "report --by tag.env exits 0" "$?" 0
check_grep "the title says both --where and --by" "$tmp/env.html" \
	"<h1>fleetbench report \(where provider=gcp; by tag.env\)</h1>"
# the THP chart's rows of n2-standard-2 in env=prod: kernel, median, runs
check_eq "report --by tag.env: the THP speedup of n2-standard-2's prod runs per kernel, as psql computes it" \
	"$(sed -n '/<svg[^>]*data-metric="thp_speedup"/,/<\/svg>/p' "$tmp/env.html" |
		grep 'class="kernel" data-instance-type="n2-standard-2"[^>]*data-tags="env=prod"' |
		sed -E 's/.*<title>[^<]*&#183; env=prod ([^ :]+): ([^ ,]+)[^<]*, ([0-9]+) runs of method.*/\1|\2|\3/')" \
	"$(q <<<"SELECT kernel_release || '|' || $(med thp_speedup) || '|' || count(*) FROM run_figures_wide WHERE method = '$fm' AND provider = 'gcp' AND instance_type = 'n2-standard-2' AND tags @> '{\"env\": \"prod\"}' GROUP BY kernel_release ORDER BY min(started_at), kernel_release")"
fb report --out "$tmp/bad.html" --by tag.Team >"$tmp/bad.out" 2>&1
check_eq "report --by a bad tag key: exit 2" "$?" 2
check_grep "report --by a bad tag key is named" "$tmp/bad.out" "by: bad tag key 'tag.Team'"

# groups are keyed by the values, not by their display text (issue 38): a
# run tagged with the text (none) is not a run without the tag, and a
# value that reads like two tags is one
tagrun none --tag "team=(none)"
check_eq "a run tagged team=(none) exits 0" "$?" 0
tagrun comma --tag "team=a, env=prod"
check_eq "a run tagged team=a, env=prod exits 0" "$?" 0
fb compare --where provider=tagtest --by tag.team --all-methods \
	--format csv >"$tmp/struct.csv" 2>"$tmp/struct.err"
check_eq "compare --by tag.team over them exits 0" "$?" 0
check_eq "three groups, each labelled apart: no tag, the text (none), the text with a comma" \
	"$(/usr/bin/python3 -c 'import csv, sys
rows = csv.DictReader(open(sys.argv[1]))
print("\n".join(sorted(r["tags"] + "|" + r["runs"] for r in rows)))' "$tmp/struct.csv")" \
	"$(q <<<"SELECT x.label || '|' || count(*) FROM (SELECT CASE WHEN NOT tags ? 'team' THEN 'team=(none)' WHEN tags ->> 'team' ~ '^[A-Za-z0-9_.:/@+-]+\$' THEN 'team=' || (tags ->> 'team') ELSE 'team=' || to_jsonb(tags ->> 'team')::text END AS label FROM run_figures WHERE provider = 'tagtest') AS x GROUP BY x.label ORDER BY 1")"
check_grep "the text (none): quoted apart from no tag" "$tmp/struct.csv" \
	'"team=""\(none\)"""'
check_grep "the text with a comma: one value, quoted" "$tmp/struct.csv" \
	'"team=""a, env=prod"""'
finish
