/* url.h - PostgreSQL: the postgres:// URLs (url.c). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* A server URL: the libpq connection URI as given, without dlock's own
 * parameters (passed to libpq as it is: sslmode, host=/socket/dir,
 * .pgpass and PGPASSWORD work), and its text for messages with any
 * password masked. */
struct pg_url {
	char *uri;		/* for libpq: dlock_... taken out */
	char *text;
	char *options;		/* the URI's own options= (NULL: none) */
	bool session_pooling;	/* dlock_pooling=session: a pooler that
				 * keeps one backend per client connection
				 * and resets it after is declared in the
				 * path (else a pooler is refused) */
	bool poll_wait;		/* dlock_wait=poll: a waiter holds no
				 * connection between its tries (else it
				 * waits in the server's queue, holding a
				 * backend) */
	bool has_dbname;	/* it names the database (else libpq's
				 * default: PGDATABASE, or the user's name) */
	bool has_password;
	bool tls;		/* sslmode=require, verify-ca or verify-full */
};

/* The engine's settings over one URL (parse_url, free_url, url_text,
 * url_tls): s checked with libpq's own parser into url, a struct pg_url
 * (0, or -1 with why); what it holds freed; its text; whether it asks
 * for TLS. */
int pg_url_parse(const char *s, void *url, char *why, size_t whylen);
void pg_url_free(void *url);
const char *pg_url_text(const void *url);
bool pg_url_tls(const void *url);

/* Whether a connection to url carries dlock's settings as startup
 * options: not through a declared pooler (PgBouncer refuses them, or
 * drops them with ignore_startup_parameters): the first statement makes
 * them there. */
bool pg_startup_options(const struct pg_url *url);
