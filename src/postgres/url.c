/* url.c - PostgreSQL: the postgres:// URLs, checked with libpq's own
 * parser (libpq takes them as they are: sslmode, host=/socket/dir,
 * .pgpass and PGPASSWORD work), dlock's own parameters (dlock_pooling,
 * dlock_wait) taken out, their text for messages with any password
 * masked. Pure: no I/O. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "engine.h"
#include "url.h"
#include "urlpart.h"

/* The URI for messages, its passwords masked (urlpart.h). */
static char *masked(const char *uri)
{
	size_t len = url_mask(uri, NULL, 0);
	char *text = malloc(len + 1);

	if (text)
		url_mask(uri, text, len + 1);
	return text;
}

/* libpq takes any port= and fails at connect (69 for a setting to fix):
 * each of the list's ports is 1..65535, or empty (the default). */
static bool bad_port(const PQconninfoOption *opts, char *why, size_t len)
{
	for (; opts->keyword; opts++) {
		const char *p;

		if (strcmp(opts->keyword, "port") != 0 || !opts->val)
			continue;
		for (p = opts->val; *p; p += *p == ',') {
			size_t n = strcspn(p, ",");
			long port = n <= 5 && strspn(p, "0123456789") >= n ? strtol(p, NULL, 10) : -1;

			if (n > 0 && (port < 1 || port > 65535)) {
				snprintf(why, len, "bad port '%.*s' (1 to 65535)", (int)(n > 16 ? 16 : n), p);
				return true;
			}
			p += n;
		}
	}
	return false;
}

/* dlock's own parameters of a URI (dlock_...), which libpq would refuse
 * as unknown: read into u, and the URI without them in *rest (its '?'
 * gone too when nothing is left). 0, or -1 with why (a setting to fix). */
static int own_params(const char *uri, struct pg_url *u, char **rest, char *why,
		      size_t len)
{
	const char *q = strchr(uri, '?');
	bool seen_wait = false;
	size_t o;

	*rest = malloc(strlen(uri) + 1);
	if (!*rest) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	o = q ? (size_t)(q - uri) : strlen(uri);
	memcpy(*rest, uri, o);
	for (const char *p = q ? q + 1 : NULL; p && *p; p += *p == '&') {
		size_t n = strcspn(p, "&"), k = strcspn(p, "=&");
		const char *v = p + k + (k < n);
		size_t vlen = n - k - (k < n);
		char key[64], value[64];

		/* a key that does not decode (a bad or NUL escape, too long)
		 * is libpq's to refuse */
		if (url_decode(p, k, key, sizeof key) < 0 || strncmp(key, "dlock_", 6) != 0) {
			char sep = o == (size_t)(q - uri) ? '?' : '&';

			(*rest)[o++] = sep;
			memcpy(*rest + o, p, n);
			o += n;
		} else if (strcmp(key, "dlock_wait") == 0) {
			/* url_decode(): "poll%00x" is no poll */
			if (url_decode(v, vlen, value, sizeof value) < 0 ||
			    (strcmp(value, "poll") != 0 && strcmp(value, "server") != 0)) {
				snprintf(why, len, "dlock_wait=%.*s: want server (the default: a waiter waits in the server's queue, holding a backend) or poll (it holds no connection between its tries)",
					 (int)(vlen < 40 ? vlen : 40), v);
				goto bad;
			}
			/* the last one would win, whichever the reader saw */
			if (seen_wait) {
				snprintf(why, len, "dlock_wait= given twice");
				goto bad;
			}
			seen_wait = true;
			u->poll_wait = strcmp(value, "poll") == 0;
		} else if (strcmp(key, "dlock_pooling") != 0) {
			snprintf(why, len, "unknown parameter '%.40s' (dlock's own: dlock_pooling=session, dlock_wait=poll)",
				 key);
			goto bad;
		} else {
			if (url_decode(v, vlen, value, sizeof value) < 0 ||
			    strcmp(value, "session") != 0) {
				snprintf(why, len, "dlock_pooling=%.*s: an advisory lock belongs to a session, so only a pooler that gives each client one backend for its whole connection can carry it (dlock_pooling=session)",
					 (int)(vlen < 40 ? vlen : 40), v);
				goto bad;
			}
			u->session_pooling = true;
		}
		p += n;
	}
	(*rest)[o] = '\0';
	return 0;
bad:
	free(*rest);
	*rest = NULL;
	return -1;
}

/* The url's own parameters taken out, then libpq's parser over the rest;
 * what the rest is kept for (its text, its password, database, TLS and
 * options). A failure leaves what it got for pg_url_free(). */
int pg_url_parse(const char *s, void *url, char *why, size_t whylen)
{
	struct pg_url *u = url;
	char *libpq_why = NULL, *uri;
	PQconninfoOption *opts;

	if (own_params(s, u, &uri, why, whylen) < 0)
		return -1;
	u->uri = uri;
	opts = PQconninfoParse(uri, &libpq_why);
	if (!opts) {
		snprintf(why, whylen, "%s", libpq_why ? libpq_why : "out of memory");
		why[strcspn(why, "\n")] = '\0';
		PQfreemem(libpq_why);
		return -1;
	}
	if (bad_port(opts, why, whylen)) {
		PQconninfoFree(opts);
		return -1;
	}
	u->text = masked(s);
	for (PQconninfoOption *o = opts; o->keyword; o++) {
		if (!o->val)
			continue;
		if (strcmp(o->keyword, "password") == 0)
			u->has_password = true;
		else if (strcmp(o->keyword, "dbname") == 0)
			u->has_dbname = o->val[0] != '\0';
		else if (strcmp(o->keyword, "sslmode") == 0)
			u->tls = strcmp(o->val, "require") == 0 ||
				 strcmp(o->val, "verify-ca") == 0 ||
				 strcmp(o->val, "verify-full") == 0;
		else if (strcmp(o->keyword, "options") == 0)
			u->options = strdup(o->val);
	}
	PQconninfoFree(opts);
	if (!u->uri || !u->text) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	return 0;
}

void pg_url_free(void *url)
{
	struct pg_url *u = url;

	free(u->uri);
	free(u->text);
	free(u->options);
}

const char *pg_url_text(const void *url)
{
	return ((const struct pg_url *)url)->text;
}

bool pg_url_tls(const void *url)
{
	return ((const struct pg_url *)url)->tls;
}

bool pg_startup_options(const struct pg_url *url)
{
	return !url->session_pooling;
}
