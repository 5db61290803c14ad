/* SPDX-License-Identifier: MIT */
/*
 * fleetbench prices import FILE, prices list, and rank --per-price. The
 * import streams the file as it is through COPY ... (FORMAT csv, HEADER
 * match) into a temporary table of text columns, so the CSV is
 * PostgreSQL's to parse; the lines are then checked set-based
 * (fleetbench_prices_problems()) and stored (fleetbench_prices_upsert()),
 * all in one transaction: a file with a bad line changes nothing.
 */
#include "prices.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "log.h"

static const char usage[] =
	"usage: fleetbench prices import FILE.csv\n"
	"       fleetbench prices list [common options]\n"
	"\n"
	"import stores the instance prices of a CSV file: a header line\n"
	"provider,instance_type,region,currency,price_per_hour,valid_from, then one\n"
	"line per price (currency an ISO 4217 code such as USD, price_per_hour a\n"
	"decimal above 0, valid_from a date YYYY-MM-DD: the first day it\n"
	"applies). Every line is checked first: each bad one is named as\n"
	"FILE:LINE: what is wrong, and then nothing is stored (exit 1). A price\n"
	"already stored for the same provider, instance type, region, currency\n"
	"and valid_from is replaced: importing a file again changes nothing.\n"
	"list prints every stored price with its status: current (in effect\n"
	"today), superseded or future. psql: the table instance_prices, the\n"
	"views fleet_prices and instance_prices_current.\n"
	"\n";

/* The staging table of one import: dropped at the end of its transaction. */
static const char staging_sql[] =
	"CREATE TEMPORARY TABLE fleetbench_price_staging ("
	"line bigint GENERATED ALWAYS AS IDENTITY, provider text, "
	"instance_type text, region text, currency text, "
	"price_per_hour text, valid_from text) ON COMMIT DROP";

/* HEADER match: a header that is not the six names is refused, line 1. */
static const char copy_sql[] =
	"COPY fleetbench_price_staging (provider, instance_type, region, "
	"currency, price_per_hour, valid_from) FROM STDIN "
	"(FORMAT csv, HEADER match)";

/* Runs a statement of no result rows; logs and returns the exit status. */
static int exec_simple(struct cmd_ctx *ctx, const char *sql)
{
	PGresult *res = NULL;
	int r = cmd_query(ctx, sql, 0, NULL, &res);

	PQclear(res);
	return r;
}

/*
 * Prints COPY's error as FILE:LINE: message when its context names the
 * line ("COPY fleetbench_price_staging, line 3[, column x]: ..."), else
 * FILE: message.
 */
static void copy_error(const char *path, const PGresult *res, PGconn *conn)
{
	const char *msg =
		res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
	const char *context =
		res ? PQresultErrorField(res, PG_DIAG_CONTEXT) : NULL;
	unsigned long line;

	if (!msg) {
		fprintf(stderr, "%s: %s", path, PQerrorMessage(conn));
		return;
	}
	if (context && sscanf(context, "COPY fleetbench_price_staging, line %lu",
			      &line) == 1)
		fprintf(stderr, "%s:%lu: %s\n", path, line, msg);
	else
		fprintf(stderr, "%s: %s\n", path, msg);
}

/*
 * What COPY must not be sent, watched as the file streams by, chunk by
 * chunk: a line that is \. alone (COPY's end of data, even in CSV: every
 * line after it would be dropped without a word) and a NUL byte (no CSV
 * holds one; /dev/zero would stream forever, as the server answers only
 * at the end).
 */
struct scan {
	unsigned long line; /* 1-based, of the byte at hand */
	enum { LINE_START, SAW_BACKSLASH, SAW_END, SAW_END_CR, MID } at;
};

/* 0, or the 1-based line of the first bad one in buf with *what set. */
static unsigned long scan_chunk(struct scan *sc, const char *buf, size_t n,
				const char **what)
{
	for (size_t i = 0; i < n; i++) {
		char c = buf[i];

		if (c == '\0') {
			*what = "holds a NUL byte, which no CSV line does";
			return sc->line;
		}
		if (c == '\n') {
			if (sc->at == SAW_END || sc->at == SAW_END_CR)
				goto end_marker;
			sc->line++;
			sc->at = LINE_START;
			continue;
		}
		switch (sc->at) {
		case LINE_START:
			sc->at = c == '\\' ? SAW_BACKSLASH : MID;
			break;
		case SAW_BACKSLASH:
			sc->at = c == '.' ? SAW_END : MID;
			break;
		case SAW_END:
			sc->at = c == '\r' ? SAW_END_CR : MID;
			break;
		default:
			sc->at = MID;
			break;
		}
	}
	return 0;
end_marker:
	*what = "is \\. alone, which COPY takes for the end of the data "
		"(every line after it would be dropped): quote it, \"\\.\", "
		"if it is a value";
	return sc->line;
}

/*
 * Streams the file f into the staging table with COPY. Returns 0, or
 * CMD_FAILED with the problem printed (a line COPY refused, such as one of
 * the wrong number of fields, a line of scan_chunk()'s, or a read error).
 */
static int copy_file(struct cmd_ctx *ctx, FILE *f, const char *path)
{
	PGconn *conn = pg_conn(ctx->pg);
	PGresult *res;
	char buf[65536];
	struct scan sc = { .line = 1, .at = LINE_START };
	const char *what = NULL;
	unsigned long bad = 0;
	int r = CMD_OK;
	size_t n;

	if (!conn) {
		log_error("lost the connection to PostgreSQL");
		return CMD_FAILED;
	}
	res = PQexec(conn, copy_sql);
	if (PQresultStatus(res) != PGRES_COPY_IN) {
		log_error("cannot start the COPY of '%s': %s", path,
			  PQerrorMessage(conn));
		PQclear(res);
		return CMD_FAILED;
	}
	PQclear(res);
	while (!bad && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
		bad = scan_chunk(&sc, buf, n, &what);
		if (!bad && PQputCopyData(conn, buf, (int)n) != 1)
			break;
	}
	if (!bad && (sc.at == SAW_END || sc.at == SAW_END_CR))
		bad = scan_chunk(&sc, "\n", 1, &what); /* at the end of the file */
	if (bad) {
		fprintf(stderr, "%s:%lu: the line %s\n", path, bad, what);
		PQputCopyEnd(conn, "a line that COPY must not be sent");
		r = CMD_FAILED;
	} else if (ferror(f)) {
		log_error("cannot read '%s': %s", path, strerror(errno));
		PQputCopyEnd(conn, "the file could not be read");
		r = CMD_FAILED;
	} else if (PQputCopyEnd(conn, NULL) != 1) {
		log_error("cannot send '%s': %s", path, PQerrorMessage(conn));
		r = CMD_FAILED;
	}
	while ((res = PQgetResult(conn))) {
		if (r == CMD_OK && PQresultStatus(res) != PGRES_COMMAND_OK) {
			copy_error(path, res, conn);
			r = CMD_FAILED;
		}
		PQclear(res);
	}
	return r;
}

static int import(struct cmd_ctx *ctx, const char *path)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	PGresult *res = NULL;
	int r;

	if (!f) {
		log_error("cannot open '%s': %s", path, strerror(errno));
		return CMD_FAILED;
	}
	r = exec_simple(ctx, "BEGIN");
	if (r != CMD_OK)
		return r;
	r = exec_simple(ctx, staging_sql);
	if (r == CMD_OK)
		r = copy_file(ctx, f, path);
	if (r == CMD_OK)
		r = cmd_query(ctx, "SELECT line, problem FROM fleetbench_prices_problems()",
			      0, NULL, &res);
	if (r == CMD_OK && PQntuples(res) > 0) {
		for (int i = 0; i < PQntuples(res); i++)
			fprintf(stderr, "%s:%s: %s\n", path,
				PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
		log_error("'%s': %d bad line%s: nothing imported", path,
			  PQntuples(res), PQntuples(res) == 1 ? "" : "s");
		r = CMD_FAILED;
	} else if (r != CMD_OK) {
		log_error("'%s': nothing imported", path);
	}
	PQclear(res);
	res = NULL;
	if (r == CMD_OK)
		r = cmd_query(ctx, "SELECT * FROM fleetbench_prices_upsert()", 0,
			      NULL, &res);
	if (r == CMD_OK)
		r = exec_simple(ctx, "COMMIT");
	if (r != CMD_OK) {
		PQclear(res);
		/* nothing stored; a lost connection rolled back already */
		if (pg_conn(ctx->pg))
			PQclear(PQexec(pg_conn(ctx->pg), "ROLLBACK"));
		return r;
	}
	return cmd_output(ctx, res, NULL);
}

int cmd_prices(struct cmd_ctx *ctx, int argc, char **argv)
{
	int c;

	while ((c = cmd_getopt(ctx, argc, argv, "", NULL, usage)) != -1)
		return c == CMD_OPT_HELP ? CMD_OK : CMD_USAGE;
	if (optind < argc && !strcmp(argv[optind], "import")) {
		if (argc - optind != 2) {
			log_error("usage: fleetbench prices import FILE.csv");
			return CMD_USAGE;
		}
		return import(ctx, argv[optind + 1]);
	}
	if (optind < argc && !strcmp(argv[optind], "list")) {
		if (argc - optind != 1) {
			log_error("unexpected argument '%s' (see --help)",
				  argv[optind + 1]);
			return CMD_USAGE;
		}
		static const struct cmd_why why = { .what = "prices" };

		ctx->why = &why;
		return cmd_print(ctx, "SELECT * FROM fleet_prices", 0, NULL,
				 NULL);
	}
	if (optind < argc)
		log_error("unknown prices command '%s': import or list",
			  argv[optind]);
	else
		log_error("prices needs a command: import FILE.csv or list (see --help)");
	return CMD_USAGE;
}

int prices_rank(struct cmd_ctx *ctx, const struct prices_rank_args *a)
{
	/* said once above a table when every row holds one value, as rank
	 * says its method */
	static const char *const said[] = { "metric", "method", "currency",
					    "unit", "per_price_unit" };
	const char *params[] = { a->metric, a->currency, a->require,
				 a->min_runs, a->filter, a->since,
				 a->method };
	const char *hide[ARRAY_SIZE(said) + 1] = { NULL };
	PGresult *res = NULL;
	size_t n = 0;
	int r;

	r = cmd_query(ctx,
		      "SELECT * FROM fleet_rank_per_price($1, $2, "
		      "string_to_array($3, ','), $4::integer, $5::jsonb, "
		      "$6::timestamptz, $7)",
		      7, params, &res);
	if (r != CMD_OK)
		return r;
	for (size_t s = 0; ctx->format == OUT_TABLE && PQntuples(res) > 0 &&
			   s < ARRAY_SIZE(said);
	     s++) {
		int col = PQfnumber(res, said[s]);
		bool one = col >= 0;

		for (int i = 1; one && i < PQntuples(res); i++)
			one = !strcmp(PQgetvalue(res, i, col),
				      PQgetvalue(res, 0, col));
		if (one) {
			printf("%s: %s\n", said[s], PQgetvalue(res, 0, col));
			hide[n++] = said[s];
		}
	}
	return cmd_output(ctx, res, hide);
}
