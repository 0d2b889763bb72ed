/* url.c - MySQL/MariaDB server URLs. Pure: no I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "url.h"
#include "urlpart.h"

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

/* seen: the parameters given so far (SEEN_*): each once, as the last
 * would win whichever the reader saw */
#define SEEN_TLS 1u
#define SEEN_WAIT 2u

static int param(const char *s, size_t len, struct my_url *u, unsigned *seen,
		 char *err, size_t errlen)
{
	const char *eq = memchr(s, '=', len);
	size_t klen = eq ? (size_t)(eq - s) : len;
	const char *v = eq ? eq + 1 : s + len;
	size_t vlen = (size_t)(s + len - v);
	char value[128];

	if (!eq)
		FAIL("parameter without '=' (want socket=PATH, tls=MODE or dlock_wait=poll)");
	if (klen == 6 && memcmp(s, "socket", 6) == 0) {
		if (u->socket[0])
			FAIL("socket= given twice");
		if (url_decode(v, vlen, u->socket, sizeof u->socket) < 0 ||
		    u->socket[0] != '/')
			FAIL("socket= takes an absolute path (at most %zu bytes)",
			     sizeof u->socket - 1);
		return 0;
	}
	if (klen == 3 && memcmp(s, "tls", 3) == 0) {
		if (*seen & SEEN_TLS)
			FAIL("tls= given twice");
		*seen |= SEEN_TLS;
		if (url_decode(v, vlen, value, sizeof value) < 0)
			FAIL("bad tls= (want required, verify-ca or verify-full)");
		if (strcmp(value, "required") == 0)
			u->tls = MY_TLS_REQUIRED;
		else if (strcmp(value, "verify-ca") == 0)
			u->tls = MY_TLS_VERIFY_CA;
		else if (strcmp(value, "verify-full") == 0)
			u->tls = MY_TLS_VERIFY_FULL;
		else
			FAIL("bad tls= (want required, verify-ca or verify-full)");
		return 0;
	}
	if (klen == 10 && memcmp(s, "dlock_wait", 10) == 0) {
		if (*seen & SEEN_WAIT)
			FAIL("dlock_wait= given twice");
		*seen |= SEEN_WAIT;
		if (url_decode(v, vlen, value, sizeof value) < 0 ||
		    (strcmp(value, "poll") != 0 && strcmp(value, "server") != 0))
			FAIL("bad dlock_wait= (want server, the default: a waiter waits in GET_LOCK, holding a connection; or poll: it holds none between its tries)");
		u->poll_wait = strcmp(value, "poll") == 0;
		return 0;
	}
	FAIL("unknown parameter (want socket=PATH, tls=MODE or dlock_wait=poll)");
}

int my_url_parse(const char *s, void *url, char *err, size_t errlen)
{
	struct my_url *u = url;
	const char *p, *end, *at, *slash, *query;
	unsigned seen = 0;

	memset(u, 0, sizeof *u);
	if (strncmp(s, "mysql://", 8) == 0) {
		strcpy(u->scheme, "mysql");
		p = s + 8;
	} else if (strncmp(s, "mariadb://", 10) == 0) {
		strcpy(u->scheme, "mariadb");
		p = s + 10;
	} else {
		FAIL("not a mysql:// or mariadb:// URL");
	}
	end = p + strlen(p);
	query = strchr(p, '?');
	if (!query)
		query = end;
	/* the authority ends at the first '/' after the last '@' */
	at = NULL;
	for (const char *q = p; q < query; q++)
		if (*q == '@')
			at = q;
	slash = memchr(at ? at : p, '/', (size_t)(query - (at ? at : p)));
	if (!slash)
		slash = query;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		size_t ulen = colon ? (size_t)(colon - p) : (size_t)(at - p);

		if (url_decode(p, ulen, u->user, sizeof u->user) < 0)
			FAIL("bad user (percent-encoding, or longer than %zu bytes)",
			     sizeof u->user - 1);
		if (colon) {
			if (url_decode(colon + 1, (size_t)(at - colon - 1), u->password,
				   sizeof u->password) < 0)
				FAIL("bad password (percent-encoding, or longer than %zu bytes)",
				     sizeof u->password - 1);
			u->has_password = true;
		}
		p = at + 1;
	}
	/* no host: the socket's (?socket=PATH) */
	if (slash > p && url_hostport(p, (size_t)(slash - p), u->host, sizeof u->host,
				      &u->port, 0, err, errlen) < 0)
		return -1;
	if (slash < query) {
		if (url_decode(slash + 1, (size_t)(query - slash - 1), u->database,
			   sizeof u->database) < 0)
			FAIL("bad database name (percent-encoding, or longer than 64 bytes)");
		for (const char *c = u->database; *c; c++)
			if (*c == '/' || *c == '\\' || *c == '`' ||
			    (unsigned char)*c < 0x20)
				FAIL("bad character in the database name");
	}
	for (const char *q = query < end ? query + 1 : end; q < end;) {
		const char *amp = strchr(q, '&');
		size_t len = amp ? (size_t)(amp - q) : (size_t)(end - q);

		if (param(q, len, u, &seen, err, errlen) < 0)
			return -1;
		q += len + (amp ? 1 : 0);
		if (amp && q == end)
			FAIL("empty parameter");
	}
	if (!u->host[0] && !u->socket[0])
		FAIL("missing host (or ?socket=PATH)");
	if (u->socket[0] && u->port)
		FAIL("a port and a socket: give one");
	if (u->socket[0] && u->tls != MY_TLS_OFF)
		FAIL("tls= over a unix socket: the socket is local already");
	if (u->socket[0])
		snprintf(u->text, sizeof u->text, "%s://%s?socket=%s", u->scheme,
			 u->host[0] ? u->host : "localhost", u->socket);
	else if (strcmp(u->host, "localhost") == 0 && !u->port)
		/* Connector/C's default unix socket, as the mysql client's */
		snprintf(u->text, sizeof u->text, "%s://localhost", u->scheme);
	else if (strchr(u->host, ':'))
		snprintf(u->text, sizeof u->text, "%s://[%s]:%d", u->scheme, u->host,
			 u->port ? u->port : 3306);
	else
		snprintf(u->text, sizeof u->text, "%s://%s:%d", u->scheme, u->host,
			 u->port ? u->port : 3306);
	return 0;
}

void my_url_free(void *url)
{
	struct my_url *u = url;

	explicit_bzero(u->password, sizeof u->password);
}

const char *my_url_text(const void *url)
{
	return ((const struct my_url *)url)->text;
}

bool my_url_tls(const void *url)
{
	return ((const struct my_url *)url)->tls != MY_TLS_OFF;
}
