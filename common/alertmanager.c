/* SPDX-License-Identifier: MIT */
/* Fleet alerts to Alertmanager's API v2: read them, POST them (libcurl). */
#include "alertmanager.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

#define API_PATH "/api/v2/alerts"
/* how much of an error answer is kept for err */
#define ANSWER_MAX 200

int am_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -ENOMEM;
}

void am_cleanup(void)
{
	curl_global_cleanup();
}

/* Whether part of h is there; *ret_value is curl_free()d by the caller. */
static bool url_has(CURLU *h, CURLUPart part, char **ret_value)
{
	*ret_value = NULL;
	return curl_url_get(h, part, ret_value, 0) == CURLUE_OK;
}

int am_url_check(const char *url, char err[AM_ERR_LEN])
{
	CURLU *h = curl_url();
	char *v = NULL;
	int r = -EINVAL;
	CURLUcode c;

	if (!h) {
		snprintf(err, AM_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	/* only absolute URLs: no scheme guessed, none defaulted */
	c = curl_url_set(h, CURLUPART_URL, url, 0);
	if (c == CURLUE_UNSUPPORTED_SCHEME || c == CURLUE_BAD_SCHEME) {
		snprintf(err, AM_ERR_LEN,
			 "'%s' is not an http:// or https:// URL", url);
		goto out;
	}
	if (c != CURLUE_OK) {
		snprintf(err, AM_ERR_LEN, "'%s' is not a URL: %s", url,
			 curl_url_strerror(c));
		goto out;
	}
	if (!url_has(h, CURLUPART_SCHEME, &v) ||
	    (strcmp(v, "http") && strcmp(v, "https"))) {
		snprintf(err, AM_ERR_LEN,
			 "'%s' is not an http:// or https:// URL", url);
		goto out;
	}
	curl_free(v);
	if (!url_has(h, CURLUPART_HOST, &v) || !*v) {
		snprintf(err, AM_ERR_LEN, "'%s' names no host", url);
		goto out;
	}
	curl_free(v);
	if (url_has(h, CURLUPART_QUERY, &v) ||
	    url_has(h, CURLUPART_FRAGMENT, &v)) {
		snprintf(err, AM_ERR_LEN,
			 "'%s' has a query or a fragment: give Alertmanager's base URL, such as http://127.0.0.1:9093",
			 url);
		goto out;
	}
	r = 0;
out:
	curl_free(v);
	curl_url_cleanup(h);
	return r;
}

/* ---- the alerts ---- */

int am_alerts_read(struct pg *pg, int64_t valid_ms, int64_t resolved_ms,
		   struct am_alerts *ret, char err[AM_ERR_LEN])
{
	char valid[32], resolved[32];
	const char *params[] = { valid, resolved };
	_cleanup_pqclear_ PGresult *res = NULL;
	struct json_object *array = NULL;
	struct am_alerts a = { 0 };
	const char *text;
	int r;

	snprintf(valid, sizeof(valid), "%" PRId64, valid_ms);
	snprintf(resolved, sizeof(resolved), "%" PRId64, resolved_ms);
	/* PG_ERR_LEN <= AM_ERR_LEN: pg_query's message fits */
	r = pg_query(pg,
		     "SELECT open, alert "
		     "FROM fleetbench_alertmanager_alerts($1::bigint, "
		     "     now() - $2::bigint * interval '1 ms')",
		     2, params, &res, err);
	if (r < 0)
		return r;
	array = json_object_new_array();
	if (!array)
		goto nomem;
	for (int i = 0; i < PQntuples(res); i++) {
		struct json_object *o = json_tokener_parse(PQgetvalue(res, i, 1));

		if (!o || !json_object_is_type(o, json_type_object)) {
			json_object_put(o);
			json_object_put(array);
			snprintf(err, AM_ERR_LEN,
				 "fleetbench_alertmanager_alerts() gave a row that is not a JSON object");
			return -EBADMSG;
		}
		if (json_object_array_add(array, o) < 0) {
			json_object_put(o);
			goto nomem;
		}
		if (!strcmp(PQgetvalue(res, i, 0), "t"))
			a.firing++;
		else
			a.resolved++;
	}
	text = json_object_to_json_string_ext(
		array, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	a.body = text ? strdup(text) : NULL;
	json_object_put(array);
	if (!a.body)
		goto nomem;
	*ret = a;
	return 0;
nomem:
	json_object_put(array);
	snprintf(err, AM_ERR_LEN, "out of memory");
	return -ENOMEM;
}

void am_alerts_release(struct am_alerts *a)
{
	free(a->body);
	a->body = NULL;
}

/* ---- the POST ---- */

/* The start of the answer, for err; the rest is read and dropped. */
struct answer {
	char text[ANSWER_MAX + 1];
	size_t len;
};

static size_t answer_write(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n, keep = ANSWER_MAX - a->len;

	if (keep > len)
		keep = len;
	memcpy(a->text + a->len, p, keep);
	a->len += keep;
	a->text[a->len] = '\0';
	return len;
}

static int curl_errno(CURLcode c)
{
	switch (c) {
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* url without its trailing slashes, then API_PATH: a new string */
static char *endpoint(const char *url)
{
	size_t len = strlen(url);
	char *e;

	while (len && url[len - 1] == '/')
		len--;
	if (asprintf(&e, "%.*s" API_PATH, (int)len, url) < 0)
		return NULL;
	return e;
}

int am_post(const char *url, const char *body, int timeout_ms,
	    char err[AM_ERR_LEN])
{
	char curl_err[CURL_ERROR_SIZE] = "";
	_cleanup_free_ char *to = endpoint(url);
	struct curl_slist *headers = NULL;
	struct answer answer = { .len = 0 };
	long status = 0;
	CURLcode c;
	CURL *h;
	int r = 0;

	if (!to) {
		snprintf(err, AM_ERR_LEN, "out of memory");
		return -ENOMEM;
	}
	h = curl_easy_init();
	headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (!h || !headers) {
		r = -ENOMEM;
		snprintf(err, AM_ERR_LEN, "out of memory");
		goto out;
	}
	/* CURLOPT_NOSIGNAL: the collector's thread must not get SIGALRM;
	 * CURLOPT_PROTOCOLS_STR: no redirect or scheme leaves HTTP(S) */
	c = curl_easy_setopt(h, CURLOPT_URL, to);
	if (c == CURLE_OK)
		c = curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (c == CURLE_OK)
		c = curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	if (c == CURLE_OK)
		c = curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	if (c == CURLE_OK)
		c = curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	if (c == CURLE_OK)
		c = curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	if (c == CURLE_OK)
		c = curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, answer_write);
	if (c == CURLE_OK)
		c = curl_easy_setopt(h, CURLOPT_WRITEDATA, &answer);
	if (c == CURLE_OK)
		c = curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
	if (c == CURLE_OK)
		c = curl_easy_perform(h);
	if (c != CURLE_OK) {
		r = curl_errno(c);
		snprintf(err, AM_ERR_LEN, "POST %s: %s", to,
			 *curl_err ? curl_err : curl_easy_strerror(c));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299) {
		r = -EPROTO;
		/* one line: the answer ends with a newline */
		answer.text[strcspn(answer.text, "\r\n")] = '\0';
		snprintf(err, AM_ERR_LEN, "POST %s: HTTP status %ld%s%s", to,
			 status, answer.len ? ": " : "", answer.text);
	}
out:
	curl_slist_free_all(headers);
	curl_easy_cleanup(h);
	return r;
}
