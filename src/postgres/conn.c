/* conn.c - PostgreSQL: libpq connections driven with deadlines. libpq's
 * own calls block without one (PQexec, PQconnectdb), so every connection
 * is non-blocking and every wait a poll() bounded by the caller's
 * deadline: a server that stops answering costs a --node-timeout, never
 * the lease. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "conn.h"
#include "net.h"

/* ---- errors ---------------------------------------------------------------- */

/* libpq's words without "FATAL:  " (and what libpq says before it: the
 * server, which the URL names already) and the newlines, first letter
 * low. */
static void cause(const char *msg, char *out, size_t len)
{
	static const char *const levels[] = { "FATAL:  ", "ERROR:  ", "PANIC:  ", NULL };

	for (const char *const *l = levels; *l; l++) {
		const char *at = strstr(msg, *l);

		if (at && !memchr(msg, '\n', (size_t)(at - msg)))
			msg = at + strlen(*l);
	}
	snprintf(out, len, "%s", msg);
	out[strcspn(out, "\n")] = '\0';
	if (!out[0])
		snprintf(out, len, "connection lost");
	log_lower_first(out);
}

static bool has(const char *s, const char *part)
{
	return s && strstr(s, part) != NULL;
}

void pg_error(const PGconn *c, const PGresult *r, const struct pg_url *url,
	      struct error *err)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = r ? PQresultErrorMessage(r) : c ? PQerrorMessage(c) : "";
	char why[400];
	int code = EX_UNAVAILABLE;

	cause(msg && *msg ? msg : c ? PQerrorMessage(c) : "", why, sizeof why);
	if (state) {
		if (strncmp(state, "28", 2) == 0 || strcmp(state, "42501") == 0)
			code = EX_NOPERM;
		else if (strcmp(state, "22021") == 0 || strcmp(state, "22P05") == 0)
			code = EX_USAGE;	/* a name the database's encoding cannot hold */
		else if (strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0 ||
			 strncmp(state, "53", 2) == 0)
			code = EX_UNAVAILABLE;
		else
			code = EX_SOFTWARE;
	} else if (has(msg, "invalid") && has(msg, "value")) {
		code = EX_USAGE;	/* a setting of the URL: sslmode=bogus */
	} else if (has(msg, "database \"") && has(msg, "does not exist")) {
		code = EX_USAGE;	/* the URL's database: a setting to fix */
	} else if (has(msg, "password authentication failed") ||
		   has(msg, "no password supplied") || has(msg, "pg_hba.conf") ||
		   has(msg, "does not exist") || has(msg, "authentication failed") ||
		   has(msg, "permission denied")) {
		/* at connect, libpq gives the server's words but no SQLSTATE */
		code = EX_NOPERM;
	}
	error_set(err, code, "%s: %s", url->text, why);
}

/* ---- connecting ------------------------------------------------------------ */

/* The server's notices (a FATAL that ends the session between two
 * statements among them) are not for dlock's stderr: what matters comes
 * back as a failed statement, and dlock says it once, its way. */
static void no_notices(void *arg, const char *message)
{
}

/* The options the session starts with: the user's (the URI's options=,
 * else PGOPTIONS, as libpq would take them; a service file's are not
 * read), then dlock's, which win: what must hold from the first
 * statement on (a role's or the user's statement_timeout or lock_timeout
 * would cut it; another isolation level would fail a fence written by
 * two shared holders at once), and what ends a silent holder's session
 * within about the TTL. NULL: out of memory. */
static char *startup_options(const struct pg_url *url, const struct pg_session *s)
{
	const char *user = url->options ? url->options : getenv("PGOPTIONS");
	long long ttl_s = s->ttl_ms / 1000 > 0 ? s->ttl_ms / 1000 : 1;
	char *options;

	if (asprintf(&options, "%s%s-c statement_timeout=0 -c lock_timeout=0 "
		     "-c idle_in_transaction_session_timeout=0 "
		     "-c default_transaction_isolation=read\\ committed "
		     "-c idle_session_timeout=%lld -c tcp_keepalives_idle=%lld "
		     "-c tcp_keepalives_interval=%lld -c tcp_keepalives_count=3 "
		     "-c tcp_user_timeout=%lld -c client_connection_check_interval=1000",
		     user ? user : "", user && *user ? " " : "", (long long)s->ttl_ms,
		     ttl_s / 3 > 0 ? ttl_s / 3 : 1, ttl_s / 9 > 0 ? ttl_s / 9 : 1,
		     (long long)s->ttl_ms) < 0)
		return NULL;
	return options;
}

/* err for a connection the server or a pooler refused: the words of
 * some say what to do. */
static void connect_failed(PGconn *c, const struct pg_url *url, bool sent_options,
			   struct error *err)
{
	const char *msg = PQerrorMessage(c);
	char said[sizeof err->msg], why[400];

	pg_error(c, NULL, url, err);
	snprintf(said, sizeof said, "%s", err->msg);
	cause(msg, why, sizeof why);
	if (sent_options && has(msg, "unsupported startup parameter"))
		/* PgBouncer: an option it does not pass on */
		error_set(err, EX_UNAVAILABLE, "%s: a pooler is in the path (it refuses the settings dlock starts its session with: %s): %s",
			  url->text, why, PG_POOLER_ADVICE);
	else if (has(msg, "configuration parameter") || has(msg, "must be called before any query") ||
		 has(msg, "cannot be changed"))
		/* a -c of PGOPTIONS or of the URI's options= that no session
		 * can start with (transaction_isolation: psql fails alike) */
		error_set(err, EX_USAGE, "%s (a setting the session starts with: PGOPTIONS or the URL's options=)",
			  said);
}

PGconn *pg_connect(const struct pg_url *url, const struct lock_params *p,
		   const struct pg_session *s, int64_t deadline_ms,
		   struct error *err)
{
	char idle[24], interval[24], *options = NULL;
	const char *keys[16], *values[16];
	bool sent_options;
	int n = 0;
	PGconn *c;

	/* The client's keepalives find a dead server within about the TTL. */
	snprintf(idle, sizeof idle, "%lld", (long long)(s->ttl_ms / 3000 > 0 ? s->ttl_ms / 3000 : 1));
	snprintf(interval, sizeof interval, "%lld",
		 (long long)(s->ttl_ms / 9000 > 0 ? s->ttl_ms / 9000 : 1));
	if (s->lock && pg_startup_options(url) && !(options = startup_options(url, s))) {
		error_set(err, EX_OSERR, "%s: out of memory", url->text);
		return NULL;
	}
	keys[n] = "dbname", values[n++] = url->uri;
	/* after the URI's, so that they override it */
	if (options)
		keys[n] = "options", values[n++] = options;
	/* the name is UTF-8 (checked): sent as such whatever PGCLIENTENCODING,
	 * the URI or the role says, so that the server hashes the same text */
	keys[n] = "client_encoding", values[n++] = "UTF8";
	keys[n] = "fallback_application_name", values[n++] = s->application_name;
	keys[n] = "keepalives", values[n++] = "1";
	keys[n] = "keepalives_idle", values[n++] = idle;
	keys[n] = "keepalives_interval", values[n++] = interval;
	keys[n] = "keepalives_count", values[n++] = "3";
	if (!url->has_password && p->password)
		keys[n] = "password", values[n++] = p->password;
	if (p->tls && p->tls->ca)
		keys[n] = "sslrootcert", values[n++] = p->tls->ca;
	if (p->tls && p->tls->cert)
		keys[n] = "sslcert", values[n++] = p->tls->cert;
	if (p->tls && p->tls->key)
		keys[n] = "sslkey", values[n++] = p->tls->key;
	if (p->tls && p->tls->insecure && url->tls)
		keys[n] = "sslmode", values[n++] = "require";
	keys[n] = values[n] = NULL;
	c = PQconnectStartParams(keys, values, 1);	/* copies them */
	sent_options = options != NULL;
	free(options);
	if (!c) {
		error_set(err, EX_OSERR, "%s: out of memory", url->text);
		return NULL;
	}
	for (PostgresPollingStatusType st = PGRES_POLLING_WRITING;;) {
		int ready;

		if (PQstatus(c) == CONNECTION_BAD || st == PGRES_POLLING_FAILED) {
			connect_failed(c, url, sent_options, err);
			PQfinish(c);
			return NULL;
		}
		if (st == PGRES_POLLING_OK)
			break;
		ready = net_wait(PQsocket(c), st == PGRES_POLLING_READING ? POLLIN : POLLOUT,
				 deadline_ms);
		if (ready <= 0) {
			error_set(err, EX_UNAVAILABLE, "%s: no answer within %.3g s", url->text,
				  (double)p->node_timeout_ms / 1000);
			PQfinish(c);
			return NULL;
		}
		st = PQconnectPoll(c);
	}
	/* What dlock's statements use came in 14 (idle_session_timeout,
	 * client_connection_check_interval, pg_locks.waitstart): older
	 * servers are refused by the version the session starts with, before
	 * any statement (0: a server or pooler that says none) */
	if (PQserverVersion(c) > 0 && PQserverVersion(c) < PG_MIN_VERSION) {
		const char *v = PQparameterStatus(c, "server_version");

		error_set(err, EX_UNAVAILABLE, "%s: PostgreSQL %s is older than 14, the oldest dlock takes",
			  url->text, v ? v : "?");
		PQfinish(c);
		return NULL;
	}
	PQsetNoticeProcessor(c, no_notices, NULL);
	if (PQsetnonblocking(c, 1) < 0) {
		pg_error(c, NULL, url, err);
		PQfinish(c);
		return NULL;
	}
	return c;
}

/* ---- statements ------------------------------------------------------------ */

PGresult *pg_result_why(PGconn *c, const struct pg_url *url, int64_t deadline_ms,
			bool *dead, struct pg_failure *why, struct error *err)
{
	PGresult *last = NULL;
	bool failed = false;

	*dead = false;
	if (why)
		why->state[0] = '\0';
	for (;;) {
		int flushed = PQflush(c);

		if (flushed < 0)
			break;
		while (flushed == 0 && PQconsumeInput(c) && !PQisBusy(c)) {
			PGresult *r = PQgetResult(c);
			ExecStatusType st;

			if (!r) {
				if (failed || !last)
					goto fail;
				return last;
			}
			st = PQresultStatus(r);
			if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK && !failed) {
				const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

				pg_error(c, r, url, err);
				if (why && state)
					snprintf(why->state, sizeof why->state, "%s", state);
				failed = true;
			}
			PQclear(last);
			last = r;
		}
		if (flushed == 0 && PQstatus(c) == CONNECTION_BAD)
			break;
		switch (net_wait(PQsocket(c), flushed ? POLLIN | POLLOUT : POLLIN,
				 deadline_ms)) {
		case 1:
			continue;
		case 0:
			PQclear(last);
			error_set(err, EX_UNAVAILABLE, "%s: no answer in time", url->text);
			return NULL;
		default:
			goto broken;
		}
	}
broken:
	if (!failed)
		pg_error(c, NULL, url, err);
fail:
	PQclear(last);
	*dead = true;
	return NULL;
}

int pg_send(PGconn *c, const struct pg_url *url, const char *sql,
	    const char *const *params, int n_params, struct error *err)
{
	if (PQsendQueryParams(c, sql, n_params, NULL, params, NULL, NULL, 0))
		return 0;
	pg_error(c, NULL, url, err);
	return -1;
}

PGresult *pg_result(PGconn *c, const struct pg_url *url, int64_t deadline_ms,
		    bool *dead, struct error *err)
{
	return pg_result_why(c, url, deadline_ms, dead, NULL, err);
}

PGresult *pg_query_why(PGconn *c, const struct pg_url *url, const char *sql,
		       const char *const *params, int n_params, int64_t deadline_ms,
		       bool *dead, struct pg_failure *why, struct error *err)
{
	*dead = false;
	if (why)
		why->state[0] = '\0';
	if (pg_send(c, url, sql, params, n_params, err) < 0) {
		*dead = true;
		return NULL;
	}
	return pg_result_why(c, url, deadline_ms, dead, why, err);
}

PGresult *pg_query(PGconn *c, const struct pg_url *url, const char *sql,
		   const char *const *params, int n_params, int64_t deadline_ms,
		   bool *dead, struct error *err)
{
	return pg_query_why(c, url, sql, params, n_params, deadline_ms, dead, NULL, err);
}
