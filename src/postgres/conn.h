/* conn.h - PostgreSQL: one libpq connection driven with deadlines, its
 * errors sorted into dlock's exit codes. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <libpq-fe.h>
#include "engine.h"
#include "log.h"
#include "url.h"

/* The session settings every lock connection starts with, as startup
 * options (no round trip; pg_startup_options()): the server ends the
 * session, and with it the lock, when dlock stops talking for about the
 * TTL (idle_session_timeout, TCP keepalives, tcp_user_timeout). */
struct pg_session {
	int64_t ttl_ms;
	const char *application_name;
	bool lock;		/* a lock's session (else status, --force:
				 * no settings but the encoding, so that
				 * they pass any pooler) */
};

/* The oldest server dlock takes (PQserverVersion()'s form). */
#define PG_MIN_VERSION 140000

/* What to do about a pooler in the path, for messages. */
#define PG_POOLER_ADVICE \
	"an advisory lock needs a session of its own: connect to PostgreSQL directly, " \
	"or, through session pooling that resets each session after its client " \
	"(PgBouncer's pool_mode = session with server_reset_query = DISCARD ALL), " \
	"add dlock_pooling=session to the URL"

/* Why a 69 came: a server down or slow (tried again within
 * --connect-budget), one with no connection to give (too many clients: a
 * passing state, named), or one to fix (older than PG_MIN_VERSION, a
 * pooler dlock cannot use: -n says so at once, as for a certificate). */
enum pg_refusal { PG_DOWN, PG_FULL, PG_TO_FIX };

/* Connects within deadline_ms (monotonic), client_encoding UTF8 (the
 * server hashes the name's text as the database holds it). NULL with
 * err: 69 unreachable, older than PG_MIN_VERSION or an undeclared pooler
 * that refuses startup options (*why says which), 77 credentials, 64 a
 * setting libpq or the server's startup refuses. */
PGconn *pg_connect(const struct pg_url *url, const struct lock_params *p,
		   const struct pg_session *s, int64_t deadline_ms,
		   enum pg_refusal *why, struct error *err);
/* What a failed statement's SQLSTATE was ("" when none came: the
 * connection broke, a deadline passed). */
struct pg_failure {
	char state[6];
};

/* Sends sql (one statement, $1... = params) and waits for its result
 * within deadline_ms. Returns the last result (PGRES_TUPLES_OK or
 * PGRES_COMMAND_OK), or NULL with err, and *dead when the connection broke
 * or a statement failed (the caller closes it: what a failed statement
 * did to the session's locks is not known). A deadline that passes leaves
 * the statement running, *dead false: pg_result() again to wait on.
 * why, when not NULL, gets the failed statement's SQLSTATE. */
PGresult *pg_query(PGconn *c, const struct pg_url *url, const char *sql,
		   const char *const *params, int n_params, int64_t deadline_ms,
		   bool *dead, struct error *err);
PGresult *pg_query_why(PGconn *c, const struct pg_url *url, const char *sql,
		       const char *const *params, int n_params, int64_t deadline_ms,
		       bool *dead, struct pg_failure *why, struct error *err);
/* Sends sql without waiting for its result; 0 or -1 with err. */
int pg_send(PGconn *c, const struct pg_url *url, const char *sql,
	    const char *const *params, int n_params, struct error *err);
/* Waits within deadline_ms for the result of what was sent already. */
PGresult *pg_result(PGconn *c, const struct pg_url *url, int64_t deadline_ms,
		    bool *dead, struct error *err);
PGresult *pg_result_why(PGconn *c, const struct pg_url *url, int64_t deadline_ms,
			bool *dead, struct pg_failure *why, struct error *err);
/* err from a failed result or connection: 77 for privileges and
 * credentials, 64 for a setting to fix (a database that does not exist,
 * a value libpq refuses, a name the database's encoding cannot hold), 69
 * for a server that goes away or is not ready, 70 else. dlock(1) lists
 * them. */
void pg_error(const PGconn *c, const PGresult *r, const struct pg_url *url,
	      struct error *err);
