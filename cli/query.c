/* SPDX-License-Identifier: MIT */
/*
 * fleetbench compare, rank and kernels: each one query of a function of
 * schema/functions/40_queries.sql, whose defaults are the views
 * fleet_compare, fleet_rank and fleet_kernels (compare --metric:
 * schema/functions/45_metric.sql). The options become the query's
 * parameters; the database checks them and names what is wrong.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "cmd.h"
#include "families.h"
#include "figures.h"
#include "list.h"
#include "log.h"
#include "prices.h"

enum {
	OPT_BY = 0x100,
	OPT_WHERE,
	OPT_SINCE,
	OPT_METRIC,
	OPT_PER,
	OPT_REQUIRE,
	OPT_MIN_RUNS,
	OPT_PROVIDER,
	OPT_INSTANCE_TYPE,
	OPT_FIGURES,
	OPT_PER_PRICE,
	OPT_CURRENCY,
	OPT_KERNEL,
};

#define WHERE_OPTION { "where", required_argument, NULL, OPT_WHERE }
#define SINCE_OPTION { "since", required_argument, NULL, OPT_SINCE }

#define FILTER_USAGE                                                             \
	"      --where KEY=VALUE    only runs whose KEY is VALUE; repeat it: every\n" \
	"                           key must match, any of a key's values may\n"    \
	"      --since DATE         only runs started at or after DATE (ISO 8601,\n" \
	"                           e.g. 2025-03-31 or 2025-03-31T12:00:00Z)\n"

#define TAG_BY_USAGE                                                               \
	"      --by tag.KEY[,...]   split the groups by these tags: the tags column\n" \
	"                           says KEY=VALUE, KEY=(none) for runs without\n"  \
	"                           the tag, the figures those of its runs\n"

#define KEYS_USAGE                                                       \
	"KEY: provider, instance_type, kernel, region, vm, thp (the THP\n"  \
	"mode), vcpus, host (the hostname), method (the method key),\n"    \
	"tag.NAME (the run's tag NAME, agent --tag NAME=VALUE; by it, the\n" \
	"tags column says NAME=VALUE, NAME=(none) without the tag).\n"

static void json_release(struct json_object **o)
{
	json_object_put(*o);
}

#define _cleanup_json_ _cleanup_(json_release)

/*
 * Adds --where KEY=VALUE to the filter object: {"KEY": "VALUE"}, or an
 * array of the values when KEY is given again. The database checks the
 * key. Returns 0, or logs and returns -EINVAL or -ENOMEM.
 */
static int where_add(struct json_object *filter, const char *arg)
{
	const char *eq = strchr(arg, '=');
	_cleanup_free_ char *key = NULL;
	struct json_object *old, *v;

	if (!eq || eq == arg) {
		log_error("--where '%s': expected KEY=VALUE", arg);
		return -EINVAL;
	}
	key = strndup(arg, (size_t)(eq - arg));
	v = json_object_new_string(eq + 1);
	if (!key || !v)
		goto nomem;
	if (!json_object_object_get_ex(filter, key, &old)) {
		if (json_object_object_add(filter, key, v) < 0)
			goto nomem;
		return 0;
	}
	if (!json_object_is_type(old, json_type_array)) {
		struct json_object *a = json_object_new_array();

		if (!a || json_object_array_add(a, json_object_get(old)) < 0 ||
		    json_object_object_add(filter, key, a) < 0) {
			json_object_put(a);
			goto nomem;
		}
		old = a;
	}
	if (json_object_array_add(old, v) < 0)
		goto nomem;
	return 0;
nomem:
	json_object_put(v);
	log_error("out of memory");
	return -ENOMEM;
}

/* The filter as a query parameter: NULL when no --where was given. */
static const char *filter_param(struct json_object *filter)
{
	if (!filter || !json_object_object_length(filter))
		return NULL;
	return json_object_to_json_string_ext(filter, JSON_C_TO_STRING_PLAIN);
}

int cmd_where(struct json_object **filter, const char *arg)
{
	if (!*filter)
		*filter = json_object_new_object();
	if (!*filter) {
		log_error("out of memory");
		return -ENOMEM;
	}
	return where_add(*filter, arg);
}

const char *cmd_filter_param(struct json_object *filter)
{
	return filter_param(filter);
}

/*
 * The options compare, rank and kernels share (--where, --since): handles
 * c when it is one of them. Returns 1 handled, 0 not one of them, or -1
 * (logged).
 */
static int filter_option(int c, struct json_object **filter,
			 const char **since)
{
	switch (c) {
	case OPT_WHERE:
		if (!*filter)
			*filter = json_object_new_object();
		if (!*filter) {
			log_error("out of memory");
			return -1;
		}
		return where_add(*filter, optarg) < 0 ? -1 : 1;
	case OPT_SINCE:
		*since = optarg;
		return 1;
	default:
		return 0;
	}
}

/*
 * Prints res as cmd_output() does. In a table, each column of said (a
 * NULL-terminated list) whose rows all hold one value is said once above
 * it ("method: standard") instead of in a column; CSV and JSON keep the
 * column in every row.
 */
static int output_said_once(struct cmd_ctx *ctx, PGresult *res,
			    const char **hide, size_t room,
			    const char *const *said)
{
	size_t n = 0;

	while (hide[n])
		n++;
	for (; ctx->format == OUT_TABLE && *said && n + 1 < room; said++) {
		int col = PQfnumber(res, *said);
		bool one = col >= 0 && PQntuples(res) > 0;

		for (int i = 1; one && i < PQntuples(res); i++)
			one = !strcmp(PQgetvalue(res, i, col),
				      PQgetvalue(res, 0, col));
		if (!one)
			continue;
		hide[n++] = *said;
		hide[n] = NULL;
		printf("%s: %s\n", *said, PQgetvalue(res, 0, col));
	}
	return cmd_output(ctx, res, hide);
}

/* output_said_once() of the method column */
static int output_by_method(struct cmd_ctx *ctx, PGresult *res,
			    const char **hide, size_t room)
{
	static const char *const said[] = { "method", NULL };

	return output_said_once(ctx, res, hide, room, said);
}

/* Whether name is one of the comma-separated items of list. */
/* Whether the --by list by names a tag key (tag.KEY). */
static bool by_tags(const char *by)
{
	const char *cur = by, *item;
	size_t len;

	while (cur && (item = list_next(&cur, ',', &len)))
		if (len > 4 && !strncmp(item, "tag.", 4))
			return true;
	return false;
}

/* The exit status for what cmd_getopt() returned other than an option. */
static int getopt_status(int c)
{
	return c == CMD_OPT_HELP ? CMD_OK : CMD_USAGE;
}

/* ---- compare ---- */

static const char compare_usage[] =
	"usage: fleetbench compare [--by KEY[,KEY...]] [--where KEY=VALUE]...\n"
	"                          [--since DATE] [--metric NAME] [common options]\n"
	"\n"
	"One row per group of runs: hosts, runs (few_runs when there are too few,\n"
	"below 6, for a 95% interval) and for each headline figure the median\n"
	"over the group's runs with its 95% confidence interval (the families\n"
	"of --figures, below; in CSV and JSON every one), the shares of runs\n"
	"where io_uring was usable, SQPOLL permitted, 1 GiB pages present, a\n"
	"repeat flagged noisy (steal_share: CPU steal, CPU pressure or I/O\n"
	"pressure above the agent's thresholds) and a figure's interval wider\n"
	"than the agent's target (wide_share: measure more), and the most\n"
	"common THP mode. Every row is of one method (the method column; in a\n"
	"table of one method, its header).\n"
	"psql: the view fleet_compare, or fleet_compare_by(by, filter, since,\n"
	"method_key).\n"
	"\n"
	"With --metric NAME, one metric of any benchmark instead: per group, the\n"
	"runs whose variant measured it (few_runs below 6), the median over them\n"
	"of each run's median with its 95% interval, and the unit. NAME is\n"
	"BENCHMARK/VARIANT/METRIC (randread/io_uring/iops), or a bare METRIC when\n"
	"one benchmark variant alone measured it in the runs selected. The\n"
	"default method is chosen among the runs that measured it: standard,\n"
	"else the one that measured it most. --metric list lists the metrics\n"
	"stored. psql: fleet_metric_by(metric, by, filter, since, method_key),\n"
	"fleet_metric_list(filter, since, method_key).\n"
	"\n"
	"options:\n"
	"      --by KEYS            group by these keys, comma-separated (default\n"
	"                           provider,instance_type,kernel)\n"
	"      --metric NAME        one metric (above); list: the metrics stored\n"
	FAMILIES_USAGE
	"      --figures cost       instead of the figures, what the runs cost their\n"
	"                           hosts, per benchmark and in total: the median\n"
	"                           wall seconds with its 95% interval and the most,\n"
	"                           CPU seconds, peak and written MiB (psql:\n"
	"                           fleet_cost_by(by, filter, since, method_key))\n"
	FILTER_USAGE CMD_METHOD_USAGE "\n" KEYS_USAGE "\n";

/*
 * cmd_query(), then the groups printed with output_said_once(said) and
 * without the key columns that by (NULL: the default keys) does not
 * group by: the columns before hosts, but for the method and the metric,
 * which every row has; with figure families (families_hide(), when
 * with_figures), only the columns of those figures. Returns the exit
 * status.
 */
static int print_groups(struct cmd_ctx *ctx, const char *sql, int nparams,
			const char *const *params, const char *by,
			const char *const *said, bool with_figures,
			const char *figures)
{
	/* each figure's three columns, and the keys */
	const char *hide[3 * FIGURES_N + 32] = { NULL };
	PGresult *res = NULL;
	size_t n = 0;
	int r;

	if (with_figures &&
	    families_hide(figures, ctx->format, ctx->wide, hide, ARRAY_SIZE(hide) - 16) < 0)
		return CMD_USAGE;
	while (hide[n])
		n++;
	r = cmd_query(ctx, sql, nparams, params, &res);
	if (r != CMD_OK)
		return r;
	/* room for the keys and for said's columns */
	for (int i = 0; i < PQnfields(res) && strcmp(PQfname(res, i), "hosts") &&
			n + 3 < ARRAY_SIZE(hide);
	     i++)
		if (strcmp(PQfname(res, i), "method") &&
		    strcmp(PQfname(res, i), "metric") &&
		    strcmp(PQfname(res, i), "benchmark") &&
		    !in_list(by ? by : "provider,instance_type,kernel",
			     PQfname(res, i)) &&
		    /* tags labels the tag.KEY keys of by */
		    !(!strcmp(PQfname(res, i), "tags") && by_tags(by)))
			hide[n++] = PQfname(res, i);
	return output_said_once(ctx, res, hide, ARRAY_SIZE(hide), said);
}

/* compare --metric NAME (fleet_metric_by), or --metric list
 * (fleet_metric_list) */
static int compare_metric(struct cmd_ctx *ctx, const char *metric,
			  const char *by, const char *filter,
			  const char *since, const char *method)
{
	static const char *const said[] = { "metric", "method", NULL };

	if (by_tags(by)) {
		log_error("--metric groups by the keys of the runs, not by tags: --by tag.KEY is for the headline figures (--where tag.KEY=VALUE filters either)");
		return CMD_USAGE;
	}
	if (!strcmp(metric, "list")) {
		const char *params[] = { filter, since, method };

		if (by) {
			log_error("--metric list lists every metric: it takes no --by");
			return CMD_USAGE;
		}
		return cmd_print(ctx,
				 "SELECT * FROM fleet_metric_list($1::jsonb, "
				 "$2::timestamptz, $3)",
				 3, params, NULL);
	}
	{
		const char *params[] = { metric, by, filter, since, method };

		return print_groups(ctx,
				    "SELECT * FROM fleet_metric_by($1, "
				    "string_to_array($2, ','), $3::jsonb, "
				    "$4::timestamptz, $5)",
				    5, params, by, said, false, NULL);
	}
}

int cmd_compare(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option options[] = {
		{ "by", required_argument, NULL, OPT_BY },
		{ "metric", required_argument, NULL, OPT_METRIC },
		{ "figures", required_argument, NULL, OPT_FIGURES },
		WHERE_OPTION,
		SINCE_OPTION,
		CMD_METHOD_OPTIONS,
		{ 0 },
	};
	_cleanup_json_ struct json_object *filter = NULL;
	const char *by = NULL, *since = NULL, *method = NULL, *metric = NULL;
	const char *figures = NULL;
	int c, r;

	while ((c = cmd_getopt(ctx, argc, argv, NULL, options,
			       families_usage(compare_usage))) != -1) {
		if (c == OPT_BY) {
			by = optarg;
			continue;
		}
		if (c == OPT_FIGURES) {
			figures = optarg;
			continue;
		}
		if (c == OPT_METRIC) {
			metric = optarg;
			continue;
		}
		r = cmd_method_option(c, &method);
		if (r < 0)
			return CMD_USAGE;
		if (r > 0)
			continue;
		r = filter_option(c, &filter, &since);
		if (r < 0 || c < 0)
			return r < 0 ? CMD_USAGE : getopt_status(c);
	}
	r = cmd_no_operands(argc, argv);
	if (r != CMD_OK)
		return r;
	if (metric && figures) {
		log_error("--figures chooses among the headline figures: --metric shows one metric instead");
		return CMD_USAGE;
	}
	if (metric)
		return compare_metric(ctx, metric, by, filter_param(filter),
				      since, method);
	if (figures && !strcmp(figures, "cost")) {
		/* what the runs cost their hosts (issue 36) */
		static const char *const cost_said[] = { "method", NULL };
		const char *params[] = { by, filter_param(filter), since,
					 method };

		if (by_tags(by)) {
			log_error("--figures cost groups by the keys of the runs, not by tags");
			return CMD_USAGE;
		}
		return print_groups(ctx,
				    "SELECT * FROM fleet_cost_by("
				    "string_to_array($1, ','), $2::jsonb, "
				    "$3::timestamptz, $4)",
				    4, params, by, cost_said, false, NULL);
	}
	{
		static const char *const said[] = { "method", NULL };
		const char *params[] = { by, filter_param(filter), since,
					 method };
		const struct cmd_why why = { .what = "compare",
					     .filter = filter_param(filter),
					     .since = since, .method = method };

		ctx->why = &why;
		return print_groups(ctx,
				    "SELECT * FROM fleet_compare_by("
				    "string_to_array($1, ','), $2::jsonb, "
				    "$3::timestamptz, $4)",
				    4, params, by, said, true, figures);
	}
}

/* ---- rank ---- */

static const char rank_usage[] =
	"usage: fleetbench rank --metric NAME [--per vcpu]\n"
	"                       [--require CAP[,CAP...]] [--min-runs N]\n"
	"                       [--by tag.KEY[,tag.KEY...]]\n"
	"                       [--where KEY=VALUE]... [--since DATE] [common options]\n"
	"\n"
	"Instance types ordered by one figure, best first: the median over their\n"
	"runs with its 95% interval. rank is 1 + the number of instance types\n"
	"better beyond noise (their interval wholly on the better side), so types\n"
	"whose intervals overlap share a rank, and tie says so; with\n"
	"--all-methods, each method is ranked on its own, and with --by tag.KEY\n"
	"each value of the tags (tags column). psql: the view fleet_rank, or\n"
	"fleet_rank_by(metric, per, require, min_runs, filter, since,\n"
	"method_key, by).\n"
	"\n"
	"options:\n"
	"      --metric NAME        a headline figure; higher is better:\n"
	"{higher:27}\n"
	"                           lower is better:\n"
	"{lower:27}\n"
	"      --per vcpu           divide each run's figure by its vCPUs, for\n"
	"{per_vcpu:27}\n"
	"      --require CAPS       only instance types that had these in every run:\n"
	"                           sqpoll, io_uring, hugepages-1g (comma-separated)\n"
	"      --min-runs N         only instance types with N runs that measured\n"
	"                           the figure (default 6, the fewest with a 95%\n"
	"                           interval)\n"
	"      --per-price          each absolute figure (or --metric's) per unit\n"
	"                           of price per hour, per region:\n"
	"{price:27},\n"
	"                           chase_accesses_per_s; fleetbench prices\n"
	"                           import; psql: fleet_rank_per_price()\n"
	"      --currency CODE      with --per-price: the prices' currency\n"
	"                           (default: their one currency)\n"
	TAG_BY_USAGE
	"                           (instance types ranked within each; not\n"
	"                           with --per-price)\n"
	FILTER_USAGE CMD_METHOD_USAGE
	"\n" KEYS_USAGE "\n";

int cmd_rank(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option options[] = {
		{ "metric", required_argument, NULL, OPT_METRIC },
		{ "per", required_argument, NULL, OPT_PER },
		{ "require", required_argument, NULL, OPT_REQUIRE },
		{ "min-runs", required_argument, NULL, OPT_MIN_RUNS },
		{ "per-price", no_argument, NULL, OPT_PER_PRICE },
		{ "currency", required_argument, NULL, OPT_CURRENCY },
		{ "by", required_argument, NULL, OPT_BY },
		WHERE_OPTION,
		SINCE_OPTION,
		CMD_METHOD_OPTIONS,
		{ 0 },
	};
	_cleanup_json_ struct json_object *filter = NULL;
	const char *metric = NULL, *per = NULL, *require = NULL;
	const char *min_runs = NULL, *since = NULL, *method = NULL;
	const char *currency = NULL, *by = NULL;
	bool per_price = false;
	const char *hide[3] = { NULL };
	PGresult *res = NULL;
	int c, r;

	while ((c = cmd_getopt(ctx, argc, argv, NULL, options,
			       families_usage(rank_usage))) !=
	       -1) {
		switch (c) {
		case OPT_METRIC:
			metric = optarg;
			continue;
		case OPT_PER:
			per = optarg;
			continue;
		case OPT_REQUIRE:
			require = optarg;
			continue;
		case OPT_PER_PRICE:
			per_price = true;
			continue;
		case OPT_CURRENCY:
			currency = optarg;
			continue;
		case OPT_BY:
			by = optarg;
			continue;
		case OPT_MIN_RUNS: {
			char *end;
			long n;

			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 1 ||
			    n > INT_MAX) {
				log_error("--min-runs '%s': not a whole number from 1 to %d",
					  optarg, INT_MAX);
				return CMD_USAGE;
			}
			min_runs = optarg;
			continue;
		}
		}
		r = cmd_method_option(c, &method);
		if (r < 0)
			return CMD_USAGE;
		if (r > 0)
			continue;
		r = filter_option(c, &filter, &since);
		if (r < 0 || c < 0)
			return r < 0 ? CMD_USAGE : getopt_status(c);
	}
	r = cmd_no_operands(argc, argv);
	if (r != CMD_OK)
		return r;
	if (per_price || currency) {
		struct prices_rank_args a = { metric, currency, require,
					      min_runs, filter_param(filter),
					      since, method };

		if (!per_price || per) {
			log_error(per ? "--per-price and --per vcpu: give one" :
					"--currency goes with --per-price");
			return CMD_USAGE;
		}
		if (by) {
			log_error("--per-price ranks instance types per region, not split by tags: --by '%s' does not go with it (--where tag.KEY=VALUE selects the runs)",
				  by);
			return CMD_USAGE;
		}
		return prices_rank(ctx, &a);
	}
	if (!metric) {
		log_error("rank needs --metric NAME (see --help)");
		return CMD_USAGE;
	}
	{
		const char *params[] = { metric, per, require, min_runs,
					 filter_param(filter), since, method,
					 by };

		r = cmd_query(ctx,
			      "SELECT * FROM fleet_rank_by($1, $2, "
			      "string_to_array($3, ','), $4::integer, $5::jsonb, "
			      "$6::timestamptz, $7, string_to_array($8, ','))",
			      8, params, &res);
	}
	if (r != CMD_OK)
		return r;
	/* the tags column labels --by's groups: empty without */
	if (!by)
		hide[0] = "tags";
	{
		const struct cmd_why why = { .what = "rank",
					     .filter = filter_param(filter),
					     .since = since, .method = method,
					     .metric = metric,
					     .min_runs = min_runs,
					     .require = require };

		ctx->why = &why;
		return output_by_method(ctx, res, hide, ARRAY_SIZE(hide));
	}
}

/* --provider P, --instance-type T (kernels, advise): handles c when it is
 * one of them. Returns 1 handled, else 0. */
static int type_option(int c, const char **provider, const char **type)
{
	if (c == OPT_PROVIDER)
		*provider = optarg;
	else if (c == OPT_INSTANCE_TYPE)
		*type = optarg;
	else
		return 0;
	return 1;
}

/* After the options of kernels and advise (cmd): no operand is left and
 * both --provider and --instance-type were given. Returns the exit
 * status. */
static int type_given(int argc, char **argv, const char *cmd,
		      const char *provider, const char *type)
{
	int r = cmd_no_operands(argc, argv);

	if (r == CMD_OK && (!provider || !type)) {
		log_error("%s needs --provider and --instance-type (see --help)",
			  cmd);
		r = CMD_USAGE;
	}
	return r;
}

/* One instance type's runs as a filter, for fleetbench_why_empty(): in
 * *filter (made when NULL), provider, instance_type and, when given,
 * kernel. */
static void type_filter(struct json_object **filter, const char *provider,
			const char *type, const char *kernel)
{
	if (!*filter)
		*filter = json_object_new_object();
	if (!*filter)
		return;
	json_object_object_add(*filter, "provider",
			       json_object_new_string(provider));
	json_object_object_add(*filter, "instance_type",
			       json_object_new_string(type));
	if (kernel)
		json_object_object_add(*filter, "kernel",
				       json_object_new_string(kernel));
}

/* ---- kernels ---- */

static const char kernels_usage[] =
	"usage: fleetbench kernels --provider P --instance-type T [--since DATE]\n"
	"                          [--by tag.KEY[,tag.KEY...]]\n"
	"                          [--where KEY=VALUE]... [common options]\n"
	"\n"
	"The figures of fleetbench compare for one instance type, one row per\n"
	"kernel release from oldest to newest (by first run), and in changes what\n"
	"changed from the kernel before: figures whose 95% intervals moved apart\n"
	"(or, with too few runs for intervals, medians that moved 20% or more),\n"
	"capability shares and the THP mode (changes names every figure, whatever\n"
	"--figures shows). By default each kernel shows its\n"
	"standard method, else its method most run; a kernel whose method\n"
	"differs from the one before says \"method OLD -> NEW\" in changes and\n"
	"compares no figures. With --by tag.KEY, a sequence of kernels per\n"
	"value of the tags (tags column). psql: the view fleet_kernels, or\n"
	"fleet_kernels_by(filter, since, method_key, by).\n"
	"\n"
	"A table (without --wide) reads like benchstat: each kernel against the\n"
	"one before, what changed besides the figures in words, then a line per\n"
	"figure: old, new, the change with its 95% interval or ~ when it is not\n"
	"significant (q < 0.05: Mann-Whitney over the runs, Benjamini-Hochberg\n"
	"over the pair's figures), q and the runs (old+new). psql:\n"
	"fleet_kernels_delta(filter, since, method_key).\n"
	"\n"
	"options:\n"
	"      --provider P         the provider, as the agents label it\n"
	"      --instance-type T    the instance type\n"
	"      --where KEY=VALUE    only runs whose KEY is VALUE (repeat it), e.g.\n"
	"                           tag.env=prod\n"
	"      --since DATE         only runs started at or after DATE\n" TAG_BY_USAGE
	FAMILIES_USAGE CMD_METHOD_USAGE "\n";

int cmd_kernels(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option options[] = {
		{ "provider", required_argument, NULL, OPT_PROVIDER },
		{ "instance-type", required_argument, NULL, OPT_INSTANCE_TYPE },
		{ "figures", required_argument, NULL, OPT_FIGURES },
		{ "by", required_argument, NULL, OPT_BY },
		SINCE_OPTION,
		WHERE_OPTION,
		CMD_METHOD_OPTIONS,
		{ 0 },
	};
	_cleanup_json_ struct json_object *filter = NULL;
	const char *provider = NULL, *type = NULL, *since = NULL;
	const char *method = NULL, *figures = NULL,
		   *hide[3 * FIGURES_N + 1] = { NULL };
	const char *by = NULL;
	PGresult *res = NULL;
	int c, r;

	while ((c = cmd_getopt(ctx, argc, argv, NULL, options,
			       families_usage(kernels_usage))) != -1) {
		switch (c) {
		case OPT_BY:
			by = optarg;
			break;
		case OPT_PROVIDER:
		case OPT_INSTANCE_TYPE:
			type_option(c, &provider, &type);
			break;
		case OPT_SINCE:
			since = optarg;
			break;
		case OPT_FIGURES:
			figures = optarg;
			break;
		case OPT_WHERE:
			if (cmd_where(&filter, optarg) < 0)
				return CMD_USAGE;
			break;
		case CMD_OPT_METHOD:
		case CMD_OPT_PROFILE:
		case CMD_OPT_ALL_METHODS:
			if (cmd_method_option(c, &method) < 0)
				return CMD_USAGE;
			break;
		default:
			return getopt_status(c);
		}
	}
	r = type_given(argc, argv, "kernels", provider, type);
	if (r != CMD_OK)
		return r;
	/* the tags column labels --by's groups: empty without */
	if (!by)
		hide[0] = "tags";
	/* room for output_by_method()'s column */
	if (families_hide(figures, ctx->format, ctx->wide, hide, ARRAY_SIZE(hide) - 1) < 0)
		return CMD_USAGE;
	{
		const char *params[] = { provider, type, since, method,
					 filter_param(filter), by };

		/* --provider and --instance-type win over --where's */
		r = cmd_query(ctx,
			      "SELECT * FROM fleet_kernels_by("
			      "coalesce($5::jsonb, '{}') || "
			      "jsonb_build_object('provider', $1::text, "
			      "'instance_type', $2::text), $3::timestamptz, "
			      "$4::text, string_to_array($6, ','))",
			      6, params, &res);
	}
	if (r != CMD_OK)
		return r;
	/* a table that fits: what changed on lines of its own */
	ctx->detail = "changes";
	{
		struct cmd_why why = { .what = "kernels", .since = since,
				       .method = method };
		bool none = false;

		/* the selection as fleet_kernels_by() saw it */
		type_filter(&filter, provider, type, NULL);
		why.filter = filter_param(filter);
		ctx->why = &why;
		/* a table that fits: each kernel against the one before,
		 * as benchstat prints; one kernel alone or tags: the rows */
		if (ctx->format == OUT_TABLE && !ctx->wide && !by &&
		    PQntuples(res) > 1) {
			r = kernels_benchstat(ctx, why.filter, since, method,
					      &none);
			if (r != CMD_OK || !none) {
				PQclear(res);
				return r;
			}
		}
		return output_by_method(ctx, res, hide, ARRAY_SIZE(hide));
	}
}

/* ---- advise ---- */

static const char advise_usage[] =
	"usage: fleetbench advise --provider P --instance-type T [--kernel K]\n"
	"                         [common options]\n"
	"\n"
	"What to set on an instance type and kernel (by default its newest, by\n"
	"first run), from the stored figures of each kernel's default method as\n"
	"kernels selects them: the THP mode (from the database's p99 under\n"
	"always and never where measured, whether THP was granted, the pointer\n"
	"chase's gain), the I/O engine (io_uring only where it is usable and its\n"
	"gain's interval excludes 1), SQPOLL (refused, or worth it only beyond\n"
	"noise), registered buffers and a hugetlb reservation: each point with\n"
	"its evidence and how sure it is (measured beyond noise, within noise,\n"
	"too few runs, not measured). --format json for automation. psql:\n"
	"fleet_advise(provider, instance_type, kernel_release, method_key).\n"
	"\n"
	"options:\n"
	"      --provider P         the provider, as the agents label it\n"
	"      --instance-type T    the instance type\n"
	"      --kernel K           this kernel release (default: the newest)\n"
	CMD_METHOD_USAGE "\n";

int cmd_advise(struct cmd_ctx *ctx, int argc, char **argv)
{
	static const struct option options[] = {
		{ "provider", required_argument, NULL, OPT_PROVIDER },
		{ "instance-type", required_argument, NULL, OPT_INSTANCE_TYPE },
		{ "kernel", required_argument, NULL, OPT_KERNEL },
		CMD_METHOD_OPTIONS,
		{ 0 },
	};
	static const char *const said[] = { "kernel", "method", NULL };
	_cleanup_json_ struct json_object *filter = NULL;
	const char *provider = NULL, *type = NULL, *kernel = NULL;
	const char *method = NULL, *hide[4] = { NULL };
	struct cmd_why why = { .what = "advise" };
	PGresult *res = NULL;
	int c, r;

	while ((c = cmd_getopt(ctx, argc, argv, NULL, options, advise_usage)) !=
	       -1) {
		if (type_option(c, &provider, &type))
			continue;
		if (c == OPT_KERNEL) {
			kernel = optarg;
			continue;
		}
		r = cmd_method_option(c, &method);
		if (r < 0)
			return CMD_USAGE;
		if (r == 0)
			return getopt_status(c);
	}
	if (method && !strcmp(method, "*")) {
		log_error("advise reads one method: --method or --profile, not --all-methods");
		return CMD_USAGE;
	}
	r = type_given(argc, argv, "advise", provider, type);
	if (r != CMD_OK)
		return r;
	{
		const char *params[] = { provider, type, kernel, method };

		r = cmd_query(ctx, "SELECT * FROM fleet_advise($1, $2, $3, $4)",
			      4, params, &res);
	}
	if (r != CMD_OK)
		return r;
	/* an empty answer says why, as kernels' does */
	type_filter(&filter, provider, type, kernel);
	why.filter = filter_param(filter);
	why.method = method;
	ctx->why = &why;
	/* a table that fits: the advice and its evidence on lines of their
	 * own */
	ctx->detail = "advice,evidence";
	return output_said_once(ctx, res, hide, ARRAY_SIZE(hide), said);
}
