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
#include "net.h"
#include "postgres.h"

#define PG_APPLICATION_NAME "dlock"

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

/* libpq's own words for this host out of a resource (net.h's
 * net_local_failure()): its "out of memory", or a call that failed so
 * ("could not create socket: Too many open files"), which libpq says
 * through strerror() in our locale. Not a server's words (FATAL: out
 * of memory is the server's, 69). */
static bool local_failure(const char *msg)
{
	if (!msg || has(msg, "FATAL:") || has(msg, "ERROR:") || has(msg, "PANIC:"))
		return false;
	return has(msg, "out of memory") || net_local_failure_said(msg);
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
	} else if (local_failure(msg)) {
		code = EX_OSERR;
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

/* What fills a server up, in its words (SQLSTATE 53300, which libpq
 * does not give at connect): its max_connections, less the slots kept
 * for superusers or pg_use_reserved_connections; a role's or a
 * database's CONNECTION LIMIT. NULL when msg is none of them (a server
 * that speaks another language: its words, 69 all the same). */
static const char *full_because(const char *msg)
{
	if (has(msg, "too many clients already"))
		return "max_connections";
	if (has(msg, "remaining connection slots are reserved"))
		return "max_connections, less the reserved slots";
	if (has(msg, "too many connections for role"))
		return "the role's CONNECTION LIMIT";
	if (has(msg, "too many connections for database"))
		return "the database's CONNECTION LIMIT";
	return NULL;
}

/* err for a connection the server or a pooler refused: the words of
 * some say what to do. *why: PG_FULL, the server is there with no
 * connection to give (a fleet's minute): tried again within
 * --connect-budget; PG_TO_FIX, a pooler that refuses dlock's settings. */
static void connect_failed(PGconn *c, const struct pg_url *url, bool sent_options,
			   enum pg_refusal *why, struct error *err)
{
	const char *msg = PQerrorMessage(c), *limit = full_because(msg);
	char said[sizeof err->msg], words[400];

	pg_error(c, NULL, url, err);
	snprintf(said, sizeof said, "%s", err->msg);
	cause(msg, words, sizeof words);
	if (limit) {
		*why = PG_FULL;
		error_set(err, EX_UNAVAILABLE, "%s (the server is full: %s)", said, limit);
	} else if (sent_options && has(msg, "unsupported startup parameter")) {
		/* PgBouncer: an option it does not pass on */
		*why = PG_TO_FIX;
		error_set(err, EX_UNAVAILABLE, "%s: a pooler is in the path (it refuses the settings dlock starts its session with: %s): %s",
			  url->text, words, PG_POOLER_ADVICE);
	} else if (has(msg, "configuration parameter") || has(msg, "must be called before any query") ||
		   has(msg, "cannot be changed")) {
		/* a -c of PGOPTIONS or of the URI's options= that no session
		 * can start with (transaction_isolation: psql fails alike) */
		error_set(err, EX_USAGE, "%s (a setting the session starts with: PGOPTIONS or the URL's options=)",
			  said);
	}
}

PGconn *pg_connect(const struct pg_url *url, const struct lock_params *p,
		   const struct pg_session *s, int64_t deadline_ms,
		   enum pg_refusal *why, struct error *err)
{
	char idle[24], interval[24], *options = NULL;
	const char *keys[16], *values[16];
	bool sent_options;
	int64_t start_ms = clock_now_ms();
	int n = 0;
	PGconn *c;

	*why = PG_DOWN;
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
			connect_failed(c, url, sent_options, why, err);
			PQfinish(c);
			return NULL;
		}
		if (st == PGRES_POLLING_OK)
			break;
		ready = net_wait(PQsocket(c), st == PGRES_POLLING_READING ? POLLIN : POLLOUT,
				 deadline_ms);
		if (ready <= 0) {
			/* the deadline given, to the hundredth: --node-timeout,
			 * or longer after failed tries (wait.c's slower_tries()) */
			error_set(err, EX_UNAVAILABLE, "%s: no answer within %.3g s", url->text,
				  (double)((deadline_ms - start_ms + 5) / 10) / 100);
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

		*why = PG_TO_FIX;
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

/* ---- a lock's session ------------------------------------------------------ */

void pg_disconnect(struct pg *pg)
{
	if (pg->c)
		PQfinish(pg->c);	/* the session's locks go with it */
	pg->c = NULL;
	pg->waiting = pg->beat_pending = pg->held = pg->stolen = false;
}

/* Advisory locks live in one database: where the URL names none, which
 * one libpq chose (PGDATABASE, or the user's name) is said, once. */
void pg_say_database(struct lock *lk)
{
	struct pg *pg = P(lk);

	if (pg->url->has_dbname || pg->told_db || !pg->c)
		return;
	pg->told_db = true;
	log_line(lk->p->name, "%s: the URL names no database: the lock lives in database \"%s\"",
		 pg->url->text, PQdb(pg->c));
}

/* A connection: the backend it reports (a pooler's own number through
 * one) until the check says which one our statements run on, and a new
 * mark for the session. for_lock: a lock's session, with dlock's
 * settings (else status and --force: any pooler passes them). */
int pg_connect_once(struct lock *lk, bool for_lock, struct error *err)
{
	struct pg *pg = P(lk);
	struct pg_session s = { lk->ttl_ms, PG_APPLICATION_NAME, for_lock };
	enum pg_refusal why;

	if (pg->c)
		return 0;
	pg->c = pg_connect(pg->url, lk->p, &s, clock_now_ms() + lk->node_timeout_ms,
			   &why, err);
	if (!pg->c) {
		lk->busy = why == PG_FULL;
		lk->full_at_a_cost = why == PG_FULL;
		lk->misconfigured |= why == PG_TO_FIX;
		return -1;
	}
	pg->checked = false;
	snprintf(pg->pid, sizeof pg->pid, "%d", PQbackendPID(pg->c));
	engine_random_hex(pg->mark, 8);
	pg->vxid[0] = '\0';
	return 0;
}

/* The session's settings, made by the statement that passed the check
 * (no round trip of their own; its SELECT reads s, as an unused WITH
 * query is never run). dlock.session ($3) marks the session as this
 * connection's: every later statement checks it. The fence's commit is
 * flushed before the reply (synchronous_commit at least local: a role's
 * "off" would let a crash lose it; read at the commit, so it holds for
 * this statement already). The rest came with the session's startup
 * options (pg_startup_options(): pg_connect() says why each), except
 * through a declared pooler, which refuses them: made here then, for
 * every statement after this one: the server ends a session that has
 * been idle about the TTL (idle_session_timeout: a stopped or cut-off
 * holder), or whose peer stopped answering (keepalives,
 * tcp_user_timeout; TCP only); a role's lock_timeout or
 * statement_timeout would cut the blocking wait short of -w; read
 * committed, so that shared holders write the fence row at once. */
void pg_settings_sql(const struct lock *lk, char *out, size_t len)
{
	long long ttl_s = lk->ttl_ms / 1000 > 0 ? lk->ttl_ms / 1000 : 1;
	int n;

	n = snprintf(out, len,
		     "s AS MATERIALIZED (SELECT "
		     "set_config('dlock.session', $3, false), "
		     "set_config('synchronous_commit', CASE current_setting('synchronous_commit') "
		     "WHEN 'off' THEN 'on' ELSE current_setting('synchronous_commit') END, false)");
	if (!pg_startup_options(P(lk)->url) && n > 0 && (size_t)n < len)
		n += snprintf(out + n, len - (size_t)n, ", "
			      "set_config('idle_session_timeout', '%lld', false), "
			      "set_config('tcp_keepalives_idle', '%lld', false), "
			      "set_config('tcp_keepalives_interval', '%lld', false), "
			      "set_config('tcp_keepalives_count', '3', false), "
			      "set_config('tcp_user_timeout', '%lld', false), "
			      "set_config('client_connection_check_interval', '1000', false), "
			      "set_config('lock_timeout', '0', false), "
			      "set_config('statement_timeout', '0', false), "
			      "set_config('idle_in_transaction_session_timeout', '0', false), "
			      "set_config('default_transaction_isolation', 'read committed', false)",
			      (long long)lk->ttl_ms, ttl_s / 3 > 0 ? ttl_s / 3 : 1,
			      ttl_s / 9 > 0 ? ttl_s / 9 : 1, (long long)lk->ttl_ms);
	if (n > 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, " FROM c WHERE c.ok), ");
}

/* The check, as SQL ($2 the backend's pid, $3 the mark, $4 the virtual
 * transaction ID), and how many parameters its statement takes. */
const char *pg_guard_sql(enum pg_guard g, int *n_params)
{
	*n_params = g == GUARD_POOLED ? 4 : 3;
	switch (g) {
	case GUARD_DIRECT:
		return "pg_backend_pid() = $2::int";
	case GUARD_POOLED:
		return "pg_backend_pid() = $2::int AND (SELECT virtualxid FROM pg_locks "
		       "WHERE locktype = 'virtualxid' AND pid = pg_backend_pid()) = $4 "
		       "AND NOT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
		       "AND pid = pg_backend_pid())";
	case GUARD_OURS:
		break;
	}
	return "pg_backend_pid() = $2::int AND current_setting('dlock.session', true) = $3";
}

enum pg_guard pg_guard_of(const struct pg *pg)
{
	return pg->checked ? GUARD_OURS : pg->vxid[0] ? GUARD_POOLED : GUARD_DIRECT;
}

void pg_pooler_error(struct lock *lk, struct error *err)
{
	const struct pg *pg = P(lk);

	lk->misconfigured = true;	/* -n: no busy server to try again */
	error_set(err, EX_UNAVAILABLE,
		  "%s: a pooler that shares backends between clients (PgBouncer in transaction or statement mode) is in the path: a session-level advisory lock would land on another client's session; connect to PostgreSQL directly, or through session pooling",
		  pg->url->text);
}

/* A pooler or a proxy in the path (the backend our statement ran on is
 * not the one the connection reported) that the URL does not declare:
 * what it does with sessions cannot be told from outside for sure (with
 * no traffic, a transaction pooler hands a client its own backend every
 * time; two PgBouncers on one port pass any two-client check now and
 * then), so it is refused unless declared. */
void pg_undeclared_pooler(struct lock *lk, const char *backend, struct error *err)
{
	const struct pg *pg = P(lk);

	lk->misconfigured = true;
	error_set(err, EX_UNAVAILABLE,
		  "%s: a pooler or proxy is in the path (the statement ran on backend %s, not on the connection's %d): %s",
		  pg->url->text, backend, PQbackendPID(pg->c), PG_POOLER_ADVICE);
}

/* "B/L" -> "B/(L+1)": the virtual transaction ID of the backend's next
 * transaction (L counts the backend's transactions). 0, or -1 when vxid
 * is not one. */
int pg_vxid_next(const char *vxid, char *out, size_t len)
{
	unsigned long backend, local;
	int n = 0;

	if (sscanf(vxid, "%lu/%lu%n", &backend, &local, &n) != 2 || vxid[n] != '\0')
		return -1;
	snprintf(out, len, "%lu/%lu", backend, local + 1);
	return 0;
}

/* One statement on our connection that must run on our backend (pg->pid)
 * as its very next transaction (pg->vxid; "": any): nobody else's ran on
 * it since our last. Then pg->vxid is the next one's. *left: the session
 * holds an advisory lock, or dlock's mark (what an earlier client left on
 * a backend that the pooler does not reset). 1 yes, 0 no, -1 err. */
int pg_next_is_ours(struct lock *lk, bool *left, struct error *err)
{
	struct pg *pg = P(lk);
	const char *params[] = { pg->pid, pg->vxid };
	PGresult *r;
	bool dead;
	int ours;

	r = pg_query(pg->c, pg->url,
		     "SELECT pg_backend_pid() = $1::int AND ($2 = '' OR v.virtualxid = $2), "
		     "v.virtualxid, EXISTS (SELECT 1 FROM pg_locks a WHERE a.locktype = 'advisory' "
		     "AND a.pid = pg_backend_pid()) OR "
		     "coalesce(current_setting('dlock.session', true), '') <> '' FROM pg_locks v "
		     "WHERE v.locktype = 'virtualxid' AND v.pid = pg_backend_pid()",
		     params, 2, clock_now_ms() + lk->node_timeout_ms, &dead, err);
	if (!r)
		return -1;
	ours = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0 &&
	       pg_vxid_next(PQgetvalue(r, 0, 1), pg->vxid, sizeof pg->vxid) == 0;
	*left = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 2), "t") == 0;
	PQclear(r);
	return ours;
}

/* Through a pooler (the first statement's backend is not the one the
 * connection reported: a pooler's number), the backend a statement runs
 * on is the pooler's to choose. Session pooling keeps one backend for
 * the connection's life, which is all a lock needs; transaction pooling
 * hands it to whoever comes next, between any two of our statements.
 * Told apart before anything is taken or set: our statements must run on
 * one backend, each as its very next transaction (a virtual transaction
 * ID's local part counts them), while a second client asks for a backend
 * again and again, holding the one it gets for a moment: transaction
 * pooling gives it ours, or gives ours to another client meanwhile (the
 * LIFO pool's next request takes the backend released last), or moves
 * our statements. Then the lock's statement takes it only as the next
 * transaction on that backend, with no advisory lock on it (GUARD_POOLED:
 * nobody's left over). 0, or -1 with err.
 *
 * The second client needs a backend of its own while we hold ours. With
 * the pool full (session pooling, its backends held by waiters blocked in
 * pg_advisory_lock), its question queues in the pooler behind everyone
 * else's; waiting for it while holding our backend held up the pool
 * (each newcomer holding one backend and waiting for a second until
 * --node-timeout: issue 30). An unanswered question proves nothing (a
 * transaction pooler's answer may only be late: review6), so a check
 * whose question gets no answer within a short pause gives our backend
 * back (the session closes) and comes back as a busy server, tried again
 * after a jittered pause, as a full server's "too many clients" is. */
#define POOLER_ROUNDS 3
/* The pause for the second client's answer: a backend freed in the pool
 * is handed on within a few ms; 0.1 to 0.3 s, drawn (so that waiters
 * that gave up together do not come back together), plus twice our own
 * statement's round trip (a slow link is no full pool). */
#define POOLER_PAUSE_MIN_MS 100
#define POOLER_PAUSE_JITTER_MS 200

static int64_t pooler_pause_ms(int64_t round_trip_ms)
{
	return POOLER_PAUSE_MIN_MS + (int64_t)arc4random_uniform(POOLER_PAUSE_JITTER_MS + 1) +
	       2 * round_trip_ms;
}

/* The second client's question got no answer within pause_ms: busy, our
 * session to be closed by the caller (the pooler hands our backend on). */
static void pool_full(struct lock *lk, int64_t pause_ms, struct error *err)
{
	lk->busy = true;
	lk->full_at_a_cost = true;	/* a backend held for the pause: 0.8 s on */
	error_set(err, EX_UNAVAILABLE, "%s: the pool had no second backend free for dlock's check (none within %.2g s): telling session pooling from transaction pooling takes two backends at once; the pool's others are in use, or its answers are slow (PgBouncer: default_pool_size)",
		  P(lk)->url->text, (double)pause_ms / 1000);
}

int pg_pooler_check(struct lock *lk, const char *first_pid, struct error *err)
{
	struct pg *pg = P(lk);
	struct pg_session s = { lk->ttl_ms, PG_APPLICATION_NAME, true };
	const char *probe = "SELECT pg_backend_pid() FROM pg_sleep(0.002)";
	PGconn *other = NULL;
	PGresult *r;
	bool dead, shared, left;
	enum pg_refusal why;
	int64_t start_ms = clock_now_ms(), pause_ms;
	int ours;

	snprintf(pg->pid, sizeof pg->pid, "%s", first_pid);
	pg->vxid[0] = '\0';
	if ((ours = pg_next_is_ours(lk, &left, err)) < 0)
		return -1;
	pause_ms = pooler_pause_ms(clock_now_ms() - start_ms);
	if (left) {
		/* a client's lock, or a dlock's killed or released there: the
		 * next client gets what the last one left (dlock's release
		 * leaves its mark on purpose, so that this shows on the next
		 * dlock's first session there) */
		lk->misconfigured = true;
		error_set(err, EX_UNAVAILABLE,
			  "%s: the pooled session holds an advisory lock or dlock's mark, left by an earlier client: the pooler does not reset sessions after a client (PgBouncer: server_reset_query = DISCARD ALL, the default), so a killed holder's lock would stay on its backend; or it shares them (transaction pooling)",
			  pg->url->text);
		return -1;
	}
	/* (PgBouncer answers a login itself, from the parameters of a
	 * backend it keeps: no backend taken yet) */
	if (ours && !(other = pg_connect(pg->url, lk->p, &s,
					 clock_now_ms() + lk->node_timeout_ms, &why, err)))
		return -1;
	for (int i = 0; ours == 1 && i < POOLER_ROUNDS; i++) {
		if (pg_send(other, pg->url, probe, NULL, 0, err) < 0) {
			ours = -1;
			break;
		}
		r = pg_result(other, pg->url, clock_now_ms() + pause_ms, &dead, err);
		if (!r) {
			if (!dead)
				pool_full(lk, pause_ms, err);
			ours = -1;
			break;
		}
		shared = PQntuples(r) != 1 || strcmp(PQgetvalue(r, 0, 0), first_pid) == 0;
		PQclear(r);
		ours = shared ? 0 : pg_next_is_ours(lk, &left, err);
	}
	PQfinish(other);
	if (ours < 0)
		return -1;
	if (ours == 0) {
		pg_pooler_error(lk, err);
		return -1;
	}
	return 0;
}
