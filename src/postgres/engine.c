/* engine.c - PostgreSQL: session-level advisory locks.
 *
 * The lock is pg_advisory_lock(hashtextextended(PREFIX || NAME, 0)), the
 * key computed by the server, so that psql takes the same lock with the
 * same words. It belongs to the session that took it: one connection per
 * lock, kept for the whole job; the lease is that connection. dlock
 * proves it alive every TTL/3 (a heartbeat), and the session is set up
 * so that the server ends it, and frees the lock, when dlock falls silent
 * for about the TTL (idle_session_timeout, TCP keepalives,
 * tcp_user_timeout). A waiter waits inside the server, in its lock queue
 * (arrival order), woken by the reply; at its deadline the call is
 * cancelled and the connection closed, which gives back a lock granted
 * just before the cancel arrived.
 *
 * Every statement a holder runs carries a comment, "dlock mode=M
 * token=T fence=F slot=S key=K holder=INFO", which pg_stat_activity
 * shows to other sessions: status reads holders from it, a nested dlock
 * its caller's token, fence and mode, and a shared holder the mode the
 * others hold in (the try statement says its mode too: "dlock try
 * mode=M"). The short fields come first, as pg_stat_activity cuts a
 * statement at track_activity_query_size.
 *
 * Modes: -x is pg_advisory_lock(K), -s pg_advisory_lock_shared(K), and
 * --limit N takes K shared too (so -x excludes it) and one of the slots
 * K:1..K:N. Shared holders and --limit holders, or --limit N and M, are
 * told apart by their comments: a holder that finds others in another
 * mode gives its lock back and says so (64), as Redis does. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <sys/random.h>
#include "clock.h"
#include "conn.h"
#include "engine.h"
#include "show.h"

#define APPLICATION_NAME "dlock"
#define PG_LIMIT_MAX 1000
/* The statement's key: its text, hashed by the server. */
#define KEY_OF "hashtextextended($1, 0)"
/* pg_locks names an advisory lock on one bigint by its halves. */
#define LOCKS_OF_KEY \
	"FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid " \
	"WHERE l.locktype = 'advisory' AND l.objsubid = 1 " \
	"AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) " \
	"AND l.classid = ((" KEY_OF " >> 32) & 4294967295)::oid " \
	"AND l.objid = (" KEY_OF " & 4294967295)::oid "

struct pg {
	const struct pg_url *url;
	PGconn *c;
	char *key;		/* the text hashed: PREFIX NAME[:slot] */
	char *comment;		/* what the holder's statements carry */
	bool fresh;		/* the session's settings are not made yet */
	bool waiting;		/* a blocking pg_advisory_lock runs */
	bool beat_pending;	/* a statement's result is still to be read */
	bool held;
	long slot;		/* --limit: the slot held, 1..N */
	int backend_pid;
};

static struct pg *P(const struct lock *lk)
{
	return lk->e;
}

static const char *shared(const struct lock *lk)
{
	return lk->p->limit == LOCK_SHARED ? "_shared" : "";
}

/* The mode word the comments carry: "x", "s" or N (--limit N). */
static void mode_word(const struct lock *lk, char *out, size_t len)
{
	if (lk->p->limit > 0)
		snprintf(out, len, "%ld", lk->p->limit);
	else
		snprintf(out, len, "%s", lk->p->limit == LOCK_SHARED ? "s" : "x");
}

/* How a mode reads in a message: "shared", "with --limit N". */
static void mode_words(const char *mode, char *out, size_t len)
{
	if (strcmp(mode, "s") == 0)
		snprintf(out, len, "shared");
	else
		snprintf(out, len, "with --limit %s", mode);
}

/* ---- settings ------------------------------------------------------------ */

static int parse(const char *const *urls, size_t n, void **servers, char *err,
		 size_t errlen)
{
	return pg_parse_urls(urls, n, (struct pg_url **)servers, err, errlen);
}

static void free_servers(void *servers, size_t n)
{
	pg_free_urls(servers, n);
}

static const char *server_text(const void *servers, size_t i)
{
	return ((const struct pg_url *)servers)[i].text;
}

static bool uses_tls(const void *servers, size_t n)
{
	return n > 0 && ((const struct pg_url *)servers)[0].tls;
}

static const struct engine_cannot cannot[] = {
	{ CAP_SEVERAL, "one server keeps the lock (a standby never sees it): name its hosts in one URL, libpq's host list" },
	{ CAP_STEPS, "an advisory lock belongs to the session that took it and ends with it: acquire, extend and release cannot be separate processes" },
	{ CAP_HISTORY, "advisory locks leave no trace to read back" },
	{ CAP_WAIT_REPLICAS, "a standby never sees advisory locks" },
	{ CAP_LIST, "advisory lock keys are hashes: name the locks (dlock status KEY...)" },
	{ 0, NULL }
};

/* ---- the holder's comment --------------------------------------------- */

/* s with '%', '*', '/', blanks, controls and non-ASCII as %XX: safe in a
 * comment, one word. */
static void pct(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 4 < len; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch <= ' ' || ch >= 0x7f || ch == '%' || ch == '*' || ch == '/')
			o += (size_t)snprintf(out + o, len - o, "%%%02X", ch);
		else
			out[o++] = (char)ch;
	}
	out[o] = '\0';
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 :
	       c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The word of field "name=" in a comment, decoded; "" when absent. */
static void field(const char *comment, const char *name, char *out, size_t len)
{
	char want[32];
	const char *p;
	size_t o = 0;

	out[0] = '\0';
	snprintf(want, sizeof want, " %s=", name);
	if (!comment || !(p = strstr(comment, want)))
		return;
	for (p += strlen(want); *p && *p != ' ' && o + 1 < len; p++) {
		if (*p == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
			out[o++] = (char)(hexval(p[1]) * 16 + hexval(p[2]));
			p += 2;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
}

/* A statement's text in pg_stat_activity: dlock's comment, or NULL. */
static const char *comment_in(const char *query)
{
	return query ? strstr(query, "/* dlock mode=") : NULL;
}

/* The mode a dlock session's statement says it holds in (its comment,
 * or its try statement's); "" for another client's. */
static void mode_in(const char *query, char *out, size_t len)
{
	const char *c = query ? strstr(query, "/* dlock ") : NULL;

	field(c, "mode", out, len);
}

static int make_comment(struct lock *lk, struct error *err)
{
	struct pg *pg = P(lk);
	char key[3 * 1024 + 1], info[3 * LOCK_INFO_MAX], mode[24], slot[32] = "";

	pct(pg->key, key, sizeof key);
	pct(lk->info, info, sizeof info);
	mode_word(lk, mode, sizeof mode);
	if (pg->slot > 0)
		snprintf(slot, sizeof slot, " slot=%ld", pg->slot);
	free(pg->comment);
	if (asprintf(&pg->comment, "/* dlock mode=%s token=%s%s%s%s key=%s holder=%s */",
		     mode, lk->token, lk->fence[0] ? " fence=" : "", lk->fence, slot,
		     key, info) < 0) {
		pg->comment = NULL;
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	return 0;
}

/* ---- the connection -------------------------------------------------------- */

static void disconnect(struct pg *pg)
{
	if (pg->c)
		PQfinish(pg->c);	/* the session's locks go with it */
	pg->c = NULL;
	pg->waiting = pg->beat_pending = pg->held = false;
}

static int connect_once(struct lock *lk, struct error *err)
{
	struct pg *pg = P(lk);
	struct pg_session s = { lk->ttl_ms, APPLICATION_NAME };

	if (pg->c)
		return 0;
	pg->c = pg_connect(pg->url, lk->p, &s, clock_now_ms() + lk->node_timeout_ms, err);
	if (!pg->c)
		return -1;
	pg->fresh = true;
	return 0;
}

/* The session's settings, made in the first statement (no round trip of
 * their own; its FROM names s, as an unused WITH query is never run):
 * the server ends a session that has been idle about the TTL
 * (idle_session_timeout: a stopped or cut-off holder), or whose peer
 * stopped answering (keepalives, tcp_user_timeout; TCP only). */
static void settings(const struct lock *lk, char *out, size_t len)
{
	long long ttl_s = lk->ttl_ms / 1000 > 0 ? lk->ttl_ms / 1000 : 1;

	snprintf(out, len,
		 "s AS MATERIALIZED (SELECT "
		 "set_config('idle_session_timeout', '%lld', false), "
		 "set_config('tcp_keepalives_idle', '%lld', false), "
		 "set_config('tcp_keepalives_interval', '%lld', false), "
		 "set_config('tcp_keepalives_count', '3', false), "
		 "set_config('tcp_user_timeout', '%lld', false), "
		 "set_config('client_connection_check_interval', '1000', false)), ",
		 (long long)lk->ttl_ms, ttl_s / 3 > 0 ? ttl_s / 3 : 1,
		 ttl_s / 9 > 0 ? ttl_s / 9 : 1, (long long)lk->ttl_ms);
}

/* Through a pooler, the backend a statement runs on is the pooler's to
 * choose: PQbackendPID() is then the pooler's own number, not
 * pg_backend_pid(). Session pooling keeps one backend for the session,
 * which is all a lock needs; transaction pooling hands the backend (and
 * the lock on it) to whoever comes next. Told apart by a second client:
 * in transaction pooling it gets the backend we used a moment ago. */
static int pooled(struct lock *lk, int our_backend, struct error *err)
{
	struct pg *pg = P(lk);
	struct pg_session s = { lk->ttl_ms, APPLICATION_NAME };
	PGconn *other = pg_connect(pg->url, lk->p, &s,
				   clock_now_ms() + lk->node_timeout_ms, err);
	PGresult *r;
	bool dead;
	int pid = -1;

	if (!other)
		return -1;
	r = pg_query(other, pg->url, "SELECT pg_backend_pid()", NULL, 0,
		     clock_now_ms() + lk->node_timeout_ms, &dead, err);
	if (r && PQntuples(r) == 1)
		pid = atoi(PQgetvalue(r, 0, 0));
	PQclear(r);
	PQfinish(other);
	if (pid < 0)
		return -1;
	if (pid != our_backend)
		return 0;
	error_set(err, EX_UNAVAILABLE,
		  "%s: a pooler that shares backends between clients (PgBouncer in transaction or statement mode) is in the path: a session-level advisory lock would land on another client's session; connect to PostgreSQL directly, or through session pooling",
		  pg->url->text);
	return -1;
}

/* ---- acquiring ------------------------------------------------------------- */

static void new_token(struct lock *lk)
{
	unsigned char raw[16];

	if (lk->p->token) {
		snprintf(lk->token, sizeof lk->token, "%s", lk->p->token);
		return;
	}
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		arc4random_buf(raw, sizeof raw);
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(lk->token + 2 * i, 3, "%02x", raw[i]);
}

static int begin(struct lock *lk, struct error *err)
{
	new_token(lk);
	lk->fence[0] = '\0';
	return 0;
}

/* The lock is ours: the fence, the loss clock, and the comment every
 * later statement carries, sent at once (its reply is read by the next
 * statement: nothing waits for it here). */
static enum lock_result granted(struct lock *lk, const char *fence,
				int64_t start_ms, struct error *err)
{
	struct pg *pg = P(lk);
	char *sql;

	pg->held = true;
	lk->acquired_ms = start_ms;
	lk->valid_until_ms = start_ms + lk->ttl_ms - (lk->ttl_ms / 100 + 2);
	snprintf(lk->fence, sizeof lk->fence, "%s", lk->p->no_fence ? "" : fence);
	if (make_comment(lk, err) < 0)
		return LOCK_FAILED;
	if (asprintf(&sql, "SELECT 1 %s", pg->comment) < 0) {
		error_set(err, EX_OSERR, "out of memory");
		return LOCK_FAILED;
	}
	if (pg_send(pg->c, pg->url, sql, NULL, 0, err) == 0)
		pg->beat_pending = true;
	free(sql);
	return LOCK_ACQUIRED;
}

/* A nested dlock re-enters a lock its caller holds exclusively, or in
 * its own mode. Not an exclusive request in a shared one (it would not
 * exclude the other holders, and waiting for them would wait for the
 * caller itself: no upgrade), nor -s in --limit or --limit N in M. */
static bool mode_reenters(struct lock *lk, const char *query, struct error *err)
{
	char held[24], ours[24], words[48];

	mode_in(query, held, sizeof held);
	mode_word(lk, ours, sizeof ours);
	if (!held[0] || strcmp(held, "x") == 0 || strcmp(held, ours) == 0)
		return true;
	mode_words(held, words, sizeof words);
	if (strcmp(ours, "x") == 0)
		error_set(err, EX_USAGE, "the outer dlock holds the lock %s: a nested exclusive request cannot re-enter it",
			  words);
	else
		error_set(err, EX_USAGE, "the lock is held %s", words);
	return false;
}

/* A nested dlock: the lock is held by a session whose statements carry
 * DLOCK_TOKEN. Its fence is the one it announced (right after its grant:
 * asked again for a moment if not yet there). */
static int reentered(struct lock *lk, struct error *err)
{
	struct pg *pg = P(lk);
	char like[2 * LOCK_TOKEN_MAX + 16];
	const char *params[] = { pg->key, like };
	int64_t until_ms = clock_now_ms() + lk->node_timeout_ms;
	size_t n = 0;

	/* DLOCK_TOKEN comes from the environment: its % and _ are matched
	 * as themselves, not as LIKE's wildcards (a token of "%" would
	 * re-enter anybody's lock) */
	n += (size_t)snprintf(like, sizeof like, "%% token=");
	for (const char *t = lk->reentry_token; *t && n + 4 < sizeof like; t++) {
		if (*t == '%' || *t == '_' || *t == '\\')
			like[n++] = '\\';
		like[n++] = *t;
	}
	snprintf(like + n, sizeof like - n, " %%");
	for (;;) {
		bool dead;
		PGresult *r = pg_query(pg->c, pg->url,
				       "SELECT a.query " LOCKS_OF_KEY
				       "AND l.granted AND a.query LIKE $2 LIMIT 1",
				       params, 2, clock_now_ms() + lk->node_timeout_ms,
				       &dead, err);
		char fence[24];

		if (!r) {
			disconnect(pg);
			return -1;
		}
		if (PQntuples(r) == 0) {
			PQclear(r);
			return 0;
		}
		field(comment_in(PQgetvalue(r, 0, 0)), "fence", fence, sizeof fence);
		if (!mode_reenters(lk, PQgetvalue(r, 0, 0), err)) {
			PQclear(r);
			return -1;
		}
		PQclear(r);
		if (fence[0] || lk->p->no_fence || clock_now_ms() >= until_ms) {
			snprintf(lk->token, sizeof lk->token, "%s", lk->reentry_token);
			snprintf(lk->fence, sizeof lk->fence, "%s", fence);
			return 1;
		}
		poll(NULL, 0, 5);
	}
}

/* The holder's info, for the wait line, from its statement's comment. */
static void held_by(struct lock *lk, const char *query)
{
	char info[LOCK_INFO_MAX];

	field(comment_in(query), "holder", info, sizeof info);
	snprintf(lk->held_by, sizeof lk->held_by, "%s", info);
}

/* A try: on a new session its settings too; the lock if free, and then
 * the fence, taken after the grant (the WITH queries run first); the
 * backend, and whether it is a standby. --limit N: the first free slot,
 * in one statement (CASE stops at the first WHEN that is true). Nothing
 * here reads pg_locks or pg_stat_activity: a new backend takes longer to
 * load their catalogs than the rest of the statement. */
static char *try_sql(struct lock *lk)
{
	char with[512] = "", what[128], mode[24], *sql, *cases = NULL;
	int r;

	if (P(lk)->fresh)
		settings(lk, with, sizeof with);
	mode_word(lk, mode, sizeof mode);
	if (lk->p->limit > 0) {
		/* K shared, then the first free slot; no slot: K given back
		 * (the last WHEN, reached only then) */
		size_t cap = (size_t)lk->p->limit * 96 + 256, len = 0;

		if (!(cases = malloc(cap)))
			return NULL;
		len += (size_t)snprintf(cases, cap,
					"CASE WHEN pg_try_advisory_lock_shared(" KEY_OF ") THEN CASE");
		for (long i = 1; i <= lk->p->limit; i++)
			len += (size_t)snprintf(cases + len, cap - len,
						" WHEN pg_try_advisory_lock(hashtextextended($1 || ':%ld', 0)) THEN %ld",
						i, i);
		snprintf(cases + len, cap - len,
			 " WHEN pg_advisory_unlock_shared(" KEY_OF ") THEN 0 ELSE 0 END ELSE 0 END");
	} else {
		snprintf(what, sizeof what, "CASE WHEN pg_try_advisory_lock%s(" KEY_OF ") THEN 1 ELSE 0 END",
			 shared(lk));
	}
	/* --no-fence: no transaction ID, whose commit waits for the WAL */
	r = asprintf(&sql,
		     "/* dlock try mode=%s */ WITH %sl AS MATERIALIZED (SELECT %s AS slot) "
		     "SELECT l.slot > 0, CASE WHEN l.slot > 0 AND NOT pg_is_in_recovery() "
		     "THEN %s END, pg_backend_pid(), "
		     "pg_is_in_recovery(), l.slot FROM l%s",
		     mode, with, cases ? cases : what,
		     lk->p->no_fence ? "''" : "pg_current_xact_id()::text",
		     with[0] ? ", s" : "");
	free(cases);
	return r < 0 ? NULL : sql;
}

/* The other holders, from their statements' comments: who holds it, for
 * the wait line and --verbose, and, for a shared or --limit request,
 * whether they hold in another mode (64: -s and --limit N, or --limit N
 * and M, never hold together). 0, or -1 with err set (the connection
 * closed if it broke). */
static int look_at_holders(struct lock *lk, struct error *err)
{
	struct pg *pg = P(lk);
	const char *params[] = { pg->key };
	char ours[24], held[24], words[48], *sql;
	bool dead;
	PGresult *r;

	mode_word(lk, ours, sizeof ours);
	/* This statement says our mode too: a holder in another mode that
	 * looks at the same moment sees it (and both give back, 64) */
	if (asprintf(&sql, "/* dlock try mode=%s */ SELECT a.query, l.mode " LOCKS_OF_KEY
		     "AND l.granted AND l.pid <> pg_backend_pid()", ours) < 0) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	r = pg_query(pg->c, pg->url, sql, params, 1, clock_now_ms() + lk->node_timeout_ms,
		     &dead, err);
	free(sql);
	if (!r) {
		if (dead)
			disconnect(pg);
		return -1;
	}
	for (int i = 0; i < PQntuples(r); i++) {
		const char *query = PQgetvalue(r, i, 0);

		if (i == 0)
			held_by(lk, query);
		mode_in(query, held, sizeof held);
		/* not dlock's (psql, an application): the lock's own mode */
		if (!held[0])
			snprintf(held, sizeof held, "%s",
				 strcmp(PQgetvalue(r, i, 1), "ShareLock") == 0 ? "s" : "x");
		if (strcmp(ours, "x") == 0 || !held[0] || strcmp(held, "x") == 0 ||
		    strcmp(held, ours) == 0)
			continue;
		mode_words(held, words, sizeof words);
		error_set(err, EX_USAGE, "the lock is held %s", words);
		PQclear(r);
		return -1;
	}
	PQclear(r);
	return 0;
}

/* The blocking call: the fence once it returns, the lock granted. */
static int send_wait(struct lock *lk, struct error *err)
{
	struct pg *pg = P(lk);
	const char *params[] = { pg->key };
	char *sql, mode[24];
	int r;

	mode_word(lk, mode, sizeof mode);
	if (asprintf(&sql, "/* dlock try mode=%s */ WITH l AS MATERIALIZED (SELECT pg_advisory_lock%s(" KEY_OF ")) "
		     "SELECT %s FROM l", mode, shared(lk),
		     lk->p->no_fence ? "''" : "pg_current_xact_id()::text") < 0) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	r = pg_send(pg->c, pg->url, sql, params, 1, err);
	free(sql);
	if (r == 0)
		pg->waiting = true;
	return r;
}

/* The blocking call's reply has come (or the connection broke). */
static enum lock_result wait_over(struct lock *lk, struct error *err)
{
	struct pg *pg = P(lk);
	int64_t now_ms = clock_now_ms();
	bool dead;
	PGresult *r = pg_result(pg->c, pg->url, now_ms + lk->node_timeout_ms, &dead, err);
	enum lock_result res = LOCK_FAILED;

	pg->waiting = false;
	if (r && PQntuples(r) == 1 && look_at_holders(lk, err) == 0)
		res = granted(lk, PQgetvalue(r, 0, 0), now_ms, err);
	else if (r && PQntuples(r) != 1)
		error_set(err, EX_SOFTWARE, "%s: unexpected reply to pg_advisory_lock",
			  pg->url->text);
	PQclear(r);
	if (res != LOCK_ACQUIRED)
		disconnect(pg);
	return res;
}

static enum lock_result try(struct lock *lk, int64_t *retry_ms,
			    struct error *err)
{
	struct pg *pg = P(lk);
	const char *params[] = { pg->key };
	int64_t start_ms;
	PGresult *r;
	char *sql;
	bool dead, got;
	enum lock_result res;

	if (pg->waiting) {
		if (PQconsumeInput(pg->c) && PQisBusy(pg->c)) {
			*retry_ms = 60000;	/* the reply wakes us */
			return LOCK_HELD;
		}
		return wait_over(lk, err);
	}
	if (connect_once(lk, err) < 0)
		return LOCK_FAILED;
	if (lk->reentry_token) {
		int in = reentered(lk, err);

		if (in != 0)
			return in > 0 ? LOCK_REENTERED : LOCK_FAILED;
	}
	if (!(sql = try_sql(lk))) {
		error_set(err, EX_OSERR, "out of memory");
		return LOCK_FAILED;
	}
	start_ms = clock_now_ms();
	r = pg_query(pg->c, pg->url, sql, params, 1, start_ms + lk->node_timeout_ms,
		     &dead, err);
	free(sql);
	if (!r || PQntuples(r) != 1 || PQnfields(r) != 5) {
		if (r)
			error_set(err, EX_SOFTWARE, "%s: unexpected reply to the lock statement",
				  pg->url->text);
		PQclear(r);
		disconnect(pg);
		return LOCK_FAILED;
	}
	pg->fresh = false;
	pg->backend_pid = atoi(PQgetvalue(r, 0, 2));
	got = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	if (strcmp(PQgetvalue(r, 0, 3), "t") == 0) {
		error_set(err, EX_UNAVAILABLE, "%s: a standby (in recovery): its advisory locks are not the primary's; connect to the primary",
			  pg->url->text);
		PQclear(r);
		disconnect(pg);
		return LOCK_FAILED;
	}
	if (pg->backend_pid != PQbackendPID(pg->c) &&
	    pooled(lk, pg->backend_pid, err) < 0) {
		PQclear(r);
		disconnect(pg);
		return LOCK_FAILED;
	}
	if (got) {
		pg->slot = lk->p->limit > 0 ? atol(PQgetvalue(r, 0, 4)) : 0;
		/* shared: the others may hold in another mode (then the
		 * session, and what it took, goes) */
		res = lk->p->limit != 0 && look_at_holders(lk, err) < 0 ? LOCK_FAILED :
		      granted(lk, PQgetvalue(r, 0, 1), start_ms, err);
		PQclear(r);
		if (res != LOCK_ACQUIRED)
			disconnect(pg);
		return res;
	}
	lk->refused = true;
	PQclear(r);
	if (lk->p->limit != 0 || lk->p->verbose || lk->p->waits) {
		struct error e = { 0 };

		if (look_at_holders(lk, &e) < 0 && (!pg->c || e.exit == EX_USAGE)) {
			*err = e;
			return LOCK_FAILED;
		}
	}
	if (!pg->c)
		return LOCK_FAILED;
	/* A wait inside the server, in its queue; --limit has no "any of
	 * these" to wait on, and asks again at the waiter's pace. */
	if (lk->p->waits && lk->p->limit <= 0) {
		if (send_wait(lk, err) < 0) {
			disconnect(pg);
			return LOCK_FAILED;
		}
		*retry_ms = 60000;
	}
	return LOCK_HELD;
}

static size_t wait_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct pg *pg = P(lk);

	if (!pg->waiting || max == 0)
		return 0;
	pfd[0] = (struct pollfd){ PQsocket(pg->c), POLLIN, 0 };
	return 1;
}

static bool wait_events(struct lock *lk, const struct pollfd *pfd, size_t n)
{
	struct pg *pg = P(lk);

	if (!pg->waiting || !(pfd[0].revents))
		return false;
	/* a reply, or a connection that broke: try() tells which */
	return !PQconsumeInput(pg->c) || !PQisBusy(pg->c);
}

/* A wait given up: the connection is closed, which ends the blocking
 * call with the session and gives back a lock the server granted just
 * before (DistributedLock#147): never kept by mistake. Not PQcancel(),
 * which opens a connection of its own and waits for it without a
 * deadline (a stopped server hung the waiter past -w and SIGTERM). The
 * server notices a client gone while it waits within
 * client_connection_check_interval (the session's settings). */
static void end_wait(struct lock *lk, enum lock_result r)
{
	struct pg *pg = P(lk);

	if (r == LOCK_ACQUIRED || r == LOCK_REENTERED)
		return;
	disconnect(pg);
}

/* ---- holding --------------------------------------------------------------- */

/* The reply to what was sent before (the comment after the grant, a
 * heartbeat that timed out), read before the next statement. */
static int drain(struct lock *lk, int64_t deadline_ms, struct error *err)
{
	struct pg *pg = P(lk);
	bool dead;
	PGresult *r;

	if (!pg->beat_pending)
		return 0;
	r = pg_result(pg->c, pg->url, deadline_ms, &dead, err);
	if (!r && !dead)
		return -1;	/* not yet: still pending */
	pg->beat_pending = false;
	PQclear(r);
	return r ? 0 : -2;
}

/* The heartbeat: the session answers, so its locks are still ours (only
 * the session itself can release them). */
static enum extend_result extend(struct lock *lk, int64_t timeout_ms,
				 struct error *err)
{
	struct pg *pg = P(lk);
	int64_t start_ms = clock_now_ms(), deadline_ms = start_ms + timeout_ms;
	char *sql;
	bool dead;
	PGresult *r;
	int d;

	if (!pg->c || !pg->held) {
		error_set(err, EX_TEMPFAIL, "%s: the session holding the lock is gone",
			  pg->url->text);
		return EXTEND_LOST;
	}
	if ((d = drain(lk, deadline_ms, err)) == -1)
		return EXTEND_FAILED;
	if (d == -2)
		goto lost;
	if (asprintf(&sql, "SELECT 1 %s", pg->comment) < 0) {
		error_set(err, EX_OSERR, "out of memory");
		return EXTEND_FAILED;
	}
	r = pg_query(pg->c, pg->url, sql, NULL, 0, deadline_ms, &dead, err);
	free(sql);
	if (r) {
		PQclear(r);
		lk->valid_until_ms = start_ms + lk->ttl_ms - (lk->ttl_ms / 100 + 2);
		return EXTEND_OK;
	}
	if (!dead) {
		pg->beat_pending = true;	/* read at the next round */
		return EXTEND_FAILED;
	}
lost:
	/* The session ended (terminated, the server restarted, the network
	 * cut it): the server freed its locks with it. */
	pg->held = false;
	error_set(err, EX_TEMPFAIL, "the session holding the lock ended (%s)", err->msg);
	return EXTEND_LOST;
}

/* The idle lock connection: readable when the server says something
 * unasked (it ended the session: pg_terminate_backend, a shutdown) or
 * the reply to the comment arrives. */
static size_t watch_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct pg *pg = P(lk);

	if (!pg->c || !pg->held || max == 0)
		return 0;
	pfd[0] = (struct pollfd){ PQsocket(pg->c), POLLIN, 0 };
	return 1;
}

static bool watch_events(struct lock *lk, const struct pollfd *pfd, size_t n,
			 char *note, size_t notelen)
{
	struct pg *pg = P(lk);

	if (!pfd[0].revents)
		return false;
	if (PQconsumeInput(pg->c) && PQstatus(pg->c) == CONNECTION_OK) {
		/* the comment's reply, or a notice: read, and nothing more */
		while (pg->beat_pending && !PQisBusy(pg->c)) {
			PGresult *r = PQgetResult(pg->c);

			if (!r)
				pg->beat_pending = false;
			PQclear(r);
		}
		if (!(pfd[0].revents & (POLLHUP | POLLERR)))
			return false;
	}
	snprintf(note, notelen, "%s: the server ended the session holding the lock",
		 pg->url->text);
	return true;
}

static size_t fds(const struct lock *lk, int *out, size_t max)
{
	const struct pg *pg = P(lk);

	if (!pg->c || max == 0 || PQsocket(pg->c) < 0)
		return 0;
	out[0] = PQsocket(pg->c);
	return 1;
}

/* pg_advisory_unlock says whether the lock was still ours; then the
 * connection goes, and anything else the session held with it. */
static int release(struct lock *lk, const struct release_how *how,
		   struct error *err)
{
	struct pg *pg = P(lk);
	int64_t deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	char *key = NULL, *sql = NULL;
	bool dead = true, held = pg->held, answered = false;
	PGresult *r = NULL;
	int d = -2;

	lk->lost_at_release = false;
	if (pg->slot > 0 ? asprintf(&key, "%s:%ld", pg->key, pg->slot) < 0 :
	    !(key = strdup(pg->key)))
		key = NULL;
	/* a reply still to read (the comment sent after the grant): a
	 * session that ended meanwhile is found there (-2) */
	/* --limit: the slot, and K shared */
	if (pg->c && key && (d = drain(lk, deadline_ms, err)) == 0 &&
	    asprintf(&sql, pg->slot > 0 ?
		     "SELECT pg_advisory_unlock(" KEY_OF ") AND pg_advisory_unlock_shared(hashtextextended($2, 0)) %s" :
		     "SELECT pg_advisory_unlock%s(" KEY_OF ") %s",
		     pg->slot > 0 ? (pg->comment ? pg->comment : "") : shared(lk),
		     pg->comment ? pg->comment : "") >= 0) {
		const char *params[] = { key, pg->key };

		r = pg_query(pg->c, pg->url, sql, params, pg->slot > 0 ? 2 : 1, deadline_ms,
			     &dead, err);
		answered = r || dead;
		free(sql);
	}
	answered |= d == -2;
	free(key);
	disconnect(pg);
	if (r && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0) {
		PQclear(r);
		return 0;
	}
	PQclear(r);
	if (held && !answered) {
		/* no answer: closing the connection ends the session anyway,
		 * once the server notices */
		error_set(err, EX_UNAVAILABLE, "%s: no answer to the unlock; the connection is closed, and the server frees the lock with the session",
			  pg->url->text);
		return -1;
	}
	/* The session had ended, or the lock was not in it: it was not ours
	 * for the whole job. */
	lk->lost_at_release = held && how->job;
	return 0;
}

/* ---- the lock's life ------------------------------------------------------ */

static int open_lock(struct lock *lk, struct error *err)
{
	struct pg *pg = calloc(1, sizeof *pg);

	if (!pg) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	lk->e = pg;
	pg->url = lk->p->servers;
	/* one statement tries every slot: its size grows with N */
	if (lk->p->limit > PG_LIMIT_MAX) {
		error_set(err, EX_USAGE, "PostgreSQL takes --limit up to %d", PG_LIMIT_MAX);
		return -1;
	}
	/* idle_session_timeout and tcp_user_timeout, set to the TTL, are
	 * ints of milliseconds */
	if (lk->ttl_ms > INT_MAX) {
		error_set(err, EX_USAGE, "PostgreSQL takes -t up to %d s (its session timeouts are milliseconds in an int)",
			  INT_MAX / 1000);
		return -1;
	}
	if (asprintf(&pg->key, "%s%s", lk->p->prefix, lk->p->name) < 0) {
		pg->key = NULL;
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	lk->key = pg->key;
	return 0;
}

static void close_lock(struct lock *lk)
{
	struct pg *pg = P(lk);

	disconnect(pg);
	free(pg->key);
	free(pg->comment);
	free(pg);
	lk->key = NULL;
}

/* ---- status and force ----------------------------------------------------- */

static char *dup_text(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* A holder or waiter from its pg_locks and pg_stat_activity row. */
static int person(const PGresult *r, int row, char **token, size_t *token_len,
		  char **info, size_t *info_len, long long *fence)
{
	const char *query = PQgetisnull(r, row, 6) ? NULL : PQgetvalue(r, row, 6);
	const char *c = comment_in(query);
	char buf[LOCK_INFO_MAX], tok[LOCK_TOKEN_MAX + 1], f[24];

	*fence = -1;
	if (c) {
		field(c, "holder", buf, sizeof buf);
		field(c, "token", tok, sizeof tok);
		field(c, "fence", f, sizeof f);
		*info = dup_text(buf);
		*token = dup_text(tok);
		if (f[0])
			*fence = strtoll(f, NULL, 10);
	} else {
		/* another client; what pg_stat_activity lets us see of it */
		char who[400];

		snprintf(who, sizeof who, "backend pid %s, %s@%s", PQgetvalue(r, row, 0),
			 PQgetisnull(r, row, 3) ? "?" : PQgetvalue(r, row, 3),
			 PQgetisnull(r, row, 4) ? "local" : PQgetvalue(r, row, 4));
		*info = NULL;
		*token = dup_text(who);
	}
	if (!*token || (c && !*info))
		return -1;
	*token_len = strlen(*token);
	*info_len = *info ? strlen(*info) : 0;
	return 0;
}

/* A shared holder: -s, or --limit N (its comment says which, and its
 * slot); psql's pg_advisory_lock_shared counts as -s. */
static void status_mode(const PGresult *r, int row, struct status_lock *s,
			struct status_holder *h)
{
	const char *query = PQgetisnull(r, row, 6) ? NULL : PQgetvalue(r, row, 6);
	char mode[24], slot[24];

	mode_in(query, mode, sizeof mode);
	field(comment_in(query), "slot", slot, sizeof slot);
	if (slot[0])
		h->slot = atol(slot);
	if (!s->mode[0] || strcmp(s->mode, "s") == 0)
		snprintf(s->mode, sizeof s->mode, "%s", mode[0] && strcmp(mode, "x") ? mode : "s");
}

static int one_status(struct lock *lk, struct status_lock *s, struct error *err)
{
	struct pg *pg = P(lk);
	const char *params[1];
	bool dead;
	PGresult *r;
	int n;

	if (asprintf(&s->key, "%s%s", lk->p->prefix, s->name) < 0) {
		s->key = NULL;
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	params[0] = s->key;
	s->fence = -1;
	s->ttl_ms = -2;
	s->n_agree = 1;
	r = pg_query(pg->c, pg->url,
		     "SELECT l.pid, l.mode, l.granted, a.usename, host(a.client_addr), "
		     "a.application_name, a.query, "
		     "(extract(epoch FROM a.backend_start) * 1000)::bigint "
		     LOCKS_OF_KEY "ORDER BY l.granted DESC, l.waitstart NULLS LAST, l.pid",
		     params, 1, clock_now_ms() + lk->node_timeout_ms, &dead, err);
	if (!r) {
		s->state = ST_UNKNOWN;
		s->err = *err;
		disconnect(pg);
		return 0;
	}
	n = PQntuples(r);
	s->holders = calloc(n ? (size_t)n : 1, sizeof *s->holders);
	s->waiters = calloc(n ? (size_t)n : 1, sizeof *s->waiters);
	if (!s->key || !s->holders || !s->waiters)
		goto oom;
	s->state = ST_FREE;
	for (int i = 0; i < n; i++) {
		long long fence;

		if (strcmp(PQgetvalue(r, i, 2), "t") == 0) {
			struct status_holder *h = &s->holders[s->n_holders++];

			*h = (struct status_holder){ .left_ms = -2, .slot = -1, .n_servers = 1 };
			if (person(r, i, &h->token, &h->token_len, &h->info, &h->info_len,
				   &fence) < 0)
				goto oom;
			h->fence = fence;
			if (fence > s->fence)
				s->fence = fence;
			s->state = ST_HELD;
			if (strcmp(PQgetvalue(r, i, 1), "ShareLock") == 0)
				status_mode(r, i, s, h);
		} else {
			struct status_waiter *w = &s->waiters[s->n_waiters++];

			w->ticket = -1;
			if (person(r, i, &w->token, &w->token_len, &w->info, &w->info_len,
				   &fence) < 0)
				goto oom;
			s->n_waiting++;
		}
	}
	PQclear(r);
	return 0;
oom:
	PQclear(r);
	error_set(err, EX_OSERR, "out of memory");
	return -1;
}

static int status(struct lock *lk, struct status_lock *locks, size_t n,
		  struct error *err)
{
	if (connect_once(lk, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (one_status(lk, &locks[i], err) < 0)
			return -1;
	return 0;
}

/* release --force: the holders' sessions terminated, which frees their
 * locks; each holder's dlock sees its session end and stops its job. */
static int force(struct lock *lk, struct broken_holder **out, size_t *n_out,
		 struct error *err)
{
	struct pg *pg = P(lk);
	struct status_lock s = { .name = strdup(lk->p->name) };
	const char *params[] = { pg->key };
	struct broken_holder *b;
	bool dead;
	PGresult *r;

	*out = NULL;
	*n_out = 0;
	if (!s.name || connect_once(lk, err) < 0 || one_status(lk, &s, err) < 0 ||
	    (s.state == ST_UNKNOWN && (*err = s.err, true))) {
		status_lock_free(&s);
		return err->exit ? err->exit : EX_OSERR;
	}
	if (s.n_holders == 0) {
		status_lock_free(&s);
		return 1;
	}
	r = pg_query(pg->c, pg->url,
		     "SELECT count(*) FILTER (WHERE pg_terminate_backend(l.pid)) "
		     LOCKS_OF_KEY "AND l.granted AND l.pid <> pg_backend_pid()",
		     params, 1, clock_now_ms() + lk->node_timeout_ms, &dead, err);
	if (!r) {
		if (err->exit == EX_NOPERM)
			error_set(err, EX_NOPERM, "%s (ending another role's session takes the pg_signal_backend role, or a superuser)",
				  err->msg);
		status_lock_free(&s);
		return err->exit;
	}
	PQclear(r);
	b = calloc(s.n_holders, sizeof *b);
	if (!b) {
		status_lock_free(&s);
		error_set(err, EX_OSERR, "out of memory");
		return EX_OSERR;
	}
	for (size_t i = 0; i < s.n_holders; i++) {
		struct status_holder *h = &s.holders[i];

		b[i] = (struct broken_holder){
			.token = h->token, .token_len = h->token_len,
			.info = h->info, .info_len = h->info_len,
			.left_ms = -2, .n_servers = 1,
		};
		h->token = h->info = NULL;
	}
	*out = b;
	*n_out = s.n_holders;
	status_lock_free(&s);
	return EX_OK;
}

ENGINE_MODULE_ABI;

const struct engine postgres_engine = {
	.settings = {
		.name = "PostgreSQL",
		.flags = CAP_SHARED | CAP_LIMIT | CAP_FAIR | CAP_NO_FORK |
			 CAP_UNAVAILABLE_RUN | CAP_HELD_BY_CONNECTION,
		.cannot = cannot,
		.min_ttl_ms = 1000,
		.parse = parse,
		.free_servers = free_servers,
		.server_text = server_text,
		.uses_tls = uses_tls,
	},
	.lock = {
		.open = open_lock,
		.close = close_lock,
		.begin = begin,
		.try = try,
		.wait_fds = wait_fds,
		.wait_events = wait_events,
		.end_wait = end_wait,
		.extend = extend,
		.watch_fds = watch_fds,
		.watch_events = watch_events,
		.fds = fds,
		.release = release,
	},
	.inspect = {
		.status = status,
		.force = force,
	},
};
