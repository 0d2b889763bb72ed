/* lock.c - a MySQL or MariaDB lock (the lock part of src/engine.h):
 * GET_LOCK() on a connection of the lock's own.
 *
 * The lock is the connection's: the server frees it when the connection
 * ends (RELEASE_LOCK, a KILL, a restart, or wait_timeout, which dlock sets
 * to the TTL so that a silent holder's lock goes after about the TTL, not
 * the default 8 hours). So one connection per lock, never reconnected
 * behind our back; the lease is that connection kept alive and proved so:
 * a probe every TTL/3 (IS_USED_LOCK(name) = CONNECTION_ID()) moves the
 * loss clock, and the idle connection's socket is watched (readable: the
 * server closed it or is about to). The fence is a counter row written
 * while holding (LAST_INSERT_ID(GREATEST(fence + 1, the server's clock in
 * us))): no server value increases across holders and restarts by itself,
 * and the clock covers a commit a crash or a failover lost.
 *
 * Acquiring is one round trip after the handshake: the session's settings,
 * the checks (the handshake's connection id is CONNECTION_ID(): no pooler
 * moves the session; not read-only; not Galera), GET_LOCK(name, 0), the
 * fence row and the history event go as one batch, and the job starts
 * once the fence row is committed (the event's answer is read later). A
 * refusal asks who holds the lock, then starts a blocking GET_LOCK with
 * the -w time left (never a negative timeout: MariaDB answers NULL at
 * once; "for ever" is a minute at a time), whose socket wakes the core's
 * wait (wait_fds). At the deadline or on a signal the call is cancelled
 * (KILL QUERY from a second connection) and its answer read: a grant that
 * came just before is given back. With dlock_wait=poll a refused try
 * closes its connection instead, and the core paces the tries
 * (lock.waits_polling). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <sys/socket.h>
#include <mysqld_error.h>
#include <openssl/evp.h>
#include "clock.h"
#include "mysql.h"
#include "waitline.h"

/* The longest one blocking GET_LOCK waits when -w allows more ("for
 * ever"): then another. A dlock killed while it waits leaves a waiter in
 * the server until then (a grant to it is freed at once: the answer
 * cannot be sent). */
#define WAIT_CHUNK_S 60
/* At the -w deadline the server gives the wait up by itself: its answer
 * is awaited that long before a KILL QUERY. */
#define WAIT_GRACE_MS 50

/* ---- names (inspect.c uses my_names() too) ------------------------------- */

/* The SHA-256 my_lock_name() wants: libcrypto's. */
static int my_sha256(const void *a, size_t alen, const void *b, size_t blen,
		     unsigned char *md)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned len = 0;
	int r = -1;

	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(ctx, a, alen) == 1 &&
	    EVP_DigestUpdate(ctx, b, blen) == 1 &&
	    EVP_DigestFinal_ex(ctx, md, &len) == 1 && len == 32)
		r = 0;
	EVP_MD_CTX_free(ctx);
	return r;
}

int my_names(struct my_names *n, const struct my_url *u, const char *prefix,
	     const char *key, struct error *err)
{
	if (my_names_make(n, prefix, key, my_sha256) < 0) {
		error_set(err, EX_SOFTWARE, "%s: cannot compute the SHA-256 that names a long or non-ASCII key (libcrypto failed)",
			  u->text);
		return -1;
	}
	return 0;
}

/* ---- the lock ------------------------------------------------------------ */

int my_open(struct lock *lk, struct error *err)
{
	struct mylock *m = engine_open_state(lk, sizeof *m, err);

	if (!m)
		return -1;
	m->lk = lk;
	m->u = lk->p->servers;
	m->fence = -1;
	lk->waits_polling = m->u->poll_wait;
	my_init(&m->c, m->u, lk->p->password, lk->p->tls);
	if (my_names(&m->names, m->u, lk->p->prefix, lk->p->name, err) < 0) {
		free(m);
		lk->e = NULL;
		return -1;
	}
	lk->key = m->names.name;
	return 0;
}

void my_close(struct lock *lk)
{
	struct mylock *m = M(lk);

	my_conn_close(&m->c);
	engine_close_state(lk);
}

/* The lease's bound from a round that began at start_ms: the server frees
 * the lock no sooner than wait_timeout (ceil(TTL)) after our last
 * statement ended, which was after it began. Drift as Redis allows. */
static int64_t valid_from(const struct lock *lk, int64_t start_ms)
{
	return start_ms + lk->ttl_ms - (lk->ttl_ms / 100 + 2);
}

int my_begin(struct lock *lk, struct error *err)
{
	struct mylock *m = M(lk);
	const struct lock_params *p = lk->p;

	/* before anything is contacted: a setting to fix */
	if (!p->no_fence && !m->u->database[0]) {
		error_set(err, EX_USAGE, "%s: no database in the URL, where the fencing counter's table is: name one (%s://HOST/DATABASE), or --no-fence",
			  m->u->text, m->u->scheme);
		return -1;
	}
	if (p->token) {
		for (const char *t = p->token; *t; t++)
			if (*t < 0x21 || *t > 0x7e) {
				error_set(err, EX_SOFTWARE, "bad token for MySQL");
				return -1;
			}
		snprintf(lk->token, sizeof lk->token, "%s", p->token);
	} else {
		engine_random_hex(lk->token, 16);
	}
	lk->fence[0] = '\0';
	m->fence = -1;
	m->event_id = 0;
	m->no_history = false;
	m->history_rows = -1;
	return 0;
}

/* Closes the lock's connection: what it held goes with it. */
static void drop(struct mylock *m)
{
	my_conn_close(&m->c);
	m->session_set = false;
	m->held = false;
	m->waiting = false;
	m->probing = false;
	m->tail_pending = false;
	m->tail_ours = false;
}

static int connect_lock(struct lock *lk, int64_t deadline_ms, struct error *err)
{
	struct mylock *m = M(lk);

	if (m->c.m)
		return 0;
	m->session_set = false;
	if (my_connect(&m->c, deadline_ms, err) < 0)
		return -1;
	my_names_rowkey(&m->names, m->c.mariadb);
	return 0;
}

/* One probe on the held lock: is it still this connection's? */
static enum extend_result probe(struct lock *lk, int64_t deadline_ms,
				struct error *err)
{
	struct mylock *m = M(lk);
	struct my_conn *c = &m->c;
	char sql[300];
	long long ours = 0, id = -1;
	size_t len;
	const char *v;

	if (!c->m) {
		error_set(err, EX_TEMPFAIL, "%s: the lock's connection is gone", m->u->text);
		return EXTEND_LOST;
	}
	if (my_finish_tail(lk, deadline_ms) == 1) {
		error_set(err, EX_UNAVAILABLE, "%s: no answer in time", m->u->text);
		return EXTEND_FAILED;
	}
	if (!m->probing) {
		snprintf(sql, sizeof sql, "SELECT IS_USED_LOCK(%s) = CONNECTION_ID(), CONNECTION_ID()",
			 m->names.lit);
		m->probe_ms = clock_now_ms();
		if (my_send(c, sql, err) < 0)
			return EXTEND_FAILED;
		m->probing = true;
	}
	if (my_run(c, deadline_ms) == 1) {
		error_set(err, EX_UNAVAILABLE, "%s: no answer in time", m->u->text);
		return EXTEND_FAILED;
	}
	m->probing = false;
	if (c->broken || my_gone(c->err_no)) {
		error_set(err, EX_TEMPFAIL, "%s: the server ended the lock's connection (%s): killed, restarted, or idle past wait_timeout",
			  m->u->text, c->err_no ? c->err_msg : "connection lost");
		return EXTEND_LOST;
	}
	if (c->err_no) {
		my_error(c, "probing the lock", err);
		return EXTEND_FAILED;
	}
	if ((v = my_field(c, 0, 1, &len)))
		id = strtoll(v, NULL, 10);
	if (id != (long long)c->thread_id) {
		error_set(err, EX_TEMPFAIL, "%s: the session moved (a pooler between dlock and the server?): the lock is not this connection's",
			  m->u->text);
		return EXTEND_LOST;
	}
	if (!my_int(c, 0, 0, &ours) || ours != 1) {
		error_set(err, EX_TEMPFAIL, "%s: the lock is no longer this connection's (released with RELEASE_LOCK?)",
			  m->u->text);
		return EXTEND_LOST;
	}
	lk->valid_until_ms = valid_from(lk, m->probe_ms);
	return EXTEND_OK;
}

/* Starts a blocking GET_LOCK with the time -w leaves, at most a chunk.
 * Returns 0 (started, or no time left), -1 with err. */
static int start_wait(struct lock *lk, struct error *err)
{
	struct mylock *m = M(lk);
	int64_t now_ms = clock_now_ms(), left_ms;
	char *sql;

	left_ms = lk->wait_deadline_ms < 0 ? WAIT_CHUNK_S * 1000 :
		  lk->wait_deadline_ms - now_ms;
	if (!lk->p->waits || left_ms <= 0)
		return 0;
	if (left_ms > WAIT_CHUNK_S * 1000)
		left_ms = WAIT_CHUNK_S * 1000;
	/* MySQL waits whole seconds (it rounds a fraction, 0.4 to none at
	 * all): the second begun, and KILL QUERY at the deadline */
	if (!m->c.mariadb)
		left_ms = (left_ms + 999) / 1000 * 1000;
	if (my_finish_tail(lk, now_ms + lk->node_timeout_ms) == 1 || m->c.broken) {
		error_set(err, EX_UNAVAILABLE, "%s: no answer in time", m->u->text);
		return -1;
	}
	if (!(sql = my_acquire_sql(lk, (double)left_ms / 1000, WITH_GET,
				&m->wait_batch))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	if (my_send_part(&m->c, sql, m->wait_batch.history >= 0 ?
			 (size_t)m->wait_batch.fence + 1 : 0, err) < 0) {
		free(sql);
		return -1;
	}
	free(sql);
	m->tail = m->wait_batch;
	m->tail_pending = m->wait_batch.history >= 0;
	m->tail_ours = false;
	m->waiting = true;
	m->wait_ends_ms = now_ms + left_ms;
	return 0;
}

/* A nested dlock in the job of the dlock that holds the lock: the row
 * says which token holds it (no row with --no-fence: no re-entry). */
static int reentered(struct lock *lk, int64_t deadline_ms, struct error *err)
{
	struct mylock *m = M(lk);
	char tok[MY_TOKEN_LIT], sql[800];
	long long yes = 0;
	size_t len;
	const char *f;

	if (strlen(lk->reentry_token) > LOCK_TOKEN_MAX || lk->p->no_fence)
		return 0;
	for (const char *t = lk->reentry_token; *t; t++)
		if (*t < 0x21 || *t > 0x7e)
			return 0;
	my_token_sql(lk->reentry_token, tok);
	snprintf(sql, sizeof sql, "SELECT IS_USED_LOCK(%s) = conn AND token = %s, fence, holder FROM dlock_locks WHERE name = %s",
		 m->names.lit, tok, m->names.rowkey);
	if (my_query(&m->c, sql, deadline_ms, err) < 0)
		return -1;
	if (m->c.err_no || !my_int(&m->c, 0, 0, &yes) || yes != 1)
		return 0;
	/* its job over, --min-hold keeps it: the token's re-entry was the
	 * job's */
	if ((f = my_field(&m->c, 0, 2, &len)) && engine_info_finished(f, len))
		return 0;
	snprintf(lk->token, sizeof lk->token, "%s", lk->reentry_token);
	f = my_field(&m->c, 0, 1, &len);
	snprintf(lk->fence, sizeof lk->fence, "%s", f ? f : "");
	return 1;
}

static enum lock_result take_up_wait(struct lock *lk, struct error *err);

/* Who holds the lock that was refused, when a dlock does (its row names
 * the holder's connection): lk->held_by, empty when not known. Asked
 * after the refusal, not in the batch: an uncontended run does not pay
 * for it. A failure here is no failure of the lock. */
static void held_by(struct lock *lk, int64_t deadline_ms)
{
	struct mylock *m = M(lk);
	char sql[3 * sizeof m->names.lit + 160];
	struct error ignored;
	const char *v, *f;
	size_t len;

	lk->held_by[0] = '\0';
	if (lk->p->no_fence || my_finish_tail(lk, deadline_ms) == 1 || m->c.broken)
		return;
	snprintf(sql, sizeof sql, "SELECT holder, fence FROM dlock_locks WHERE name = %s "
		 "AND conn = IS_USED_LOCK(%s) AND IS_USED_LOCK(%s) <> CONNECTION_ID()",
		 m->names.rowkey, m->names.lit, m->names.lit);
	if (my_query(&m->c, sql, deadline_ms, &ignored) < 0 || m->c.err_no)
		return;
	if ((v = my_field(&m->c, 0, 0, &len)) && len > 0) {
		f = my_field(&m->c, 0, 1, &len);
		if (my_info_whole(v, strlen(v)))
			f = NULL;
		snprintf(lk->held_by, sizeof lk->held_by, "%.*s%s%s",
			 (int)strnlen(v, sizeof lk->held_by - 24), v, f ? "\t" : "",
			 f ? f : "");
	}
	my_done(&m->c);
}

enum lock_result my_try(struct lock *lk, int64_t *retry_ms,
			struct error *err)
{
	struct mylock *m = M(lk);
	int64_t start_ms = clock_now_ms(), deadline_ms = start_ms + lk->node_timeout_ms;
	struct my_batch b;
	enum lock_result r;
	char *sql;

	lk->refused = false;
	lk->busy = false;
	if (m->waiting)
		return take_up_wait(lk, err);
	if (connect_lock(lk, deadline_ms, err) < 0) {
		lk->misconfigured |= m->c.tls_failed;
		/* a fleet's minute: tried again, with the others, in a while */
		lk->busy = m->c.full;
		return LOCK_FAILED;
	}
	if (lk->reentry_token && !m->reentry_asked) {
		int in = reentered(lk, deadline_ms, err);

		m->reentry_asked = true;
		if (in != 0) {
			drop(m);
			return in > 0 ? LOCK_REENTERED : LOCK_FAILED;
		}
	}
	for (int round = 0;; round++) {
		if (!(sql = my_acquire_sql(lk, 0, WITH_GET, &b))) {
			error_set(err, EX_OSERR, "out of memory");
			drop(m);
			return LOCK_FAILED;
		}
		if (my_query_head(m, sql, &b, deadline_ms, err) < 0) {
			free(sql);
			drop(m);
			return LOCK_FAILED;
		}
		free(sql);
		/* MySQL has no @@wsrep_on (Percona XtraDB Cluster has) */
		if (round == 0 && m->c.err_no == ER_UNKNOWN_SYSTEM_VARIABLE &&
		    (int)m->c.err_at == b.check && !m->no_wsrep) {
			m->no_wsrep = true;
			continue;
		}
		break;
	}
	r = my_answer(lk, &b, start_ms, deadline_ms, err);
	if (r == LOCK_ACQUIRED) {
		lk->valid_until_ms = valid_from(lk, start_ms);
		if (!m->tail_pending)
			my_done(&m->c);
		return r;
	}
	/* who holds it, only for somebody who reads it: a statement more
	 * for each of a fleet's refused tries (and dlock_wait=poll's) */
	if (r == LOCK_HELD && waitline_holder_shown(lk->p->verbose))
		held_by(lk, deadline_ms);
	/* dlock_wait=poll: no connection kept between tries; the next
	 * comes at the core's growing pace (lk->waits_polling) */
	if (r == LOCK_HELD && m->u->poll_wait) {
		drop(m);
		return r;
	}
	if (r == LOCK_HELD && start_wait(lk, err) == 0) {
		*retry_ms = -1;
		return r;
	}
	drop(m);
	return r == LOCK_HELD ? LOCK_FAILED : r;
}

/* The blocking GET_LOCK under way: its answer, if it came. */
static enum lock_result take_up_wait(struct lock *lk, struct error *err)
{
	struct mylock *m = M(lk);
	int64_t start_ms = clock_now_ms();
	enum lock_result r;

	if (my_run(&m->c, start_ms) == 1) {
		/* The server ends its own wait at wait_ends_ms: no word a node
		 * timeout after that, and it is not answering (stopped, hung),
		 * as a round of Redis would find (69). */
		if (start_ms > m->wait_ends_ms + WAIT_GRACE_MS + lk->node_timeout_ms) {
			error_set(err, EX_UNAVAILABLE, "%s: no answer in time (GET_LOCK's wait ended %.1f s ago)",
				  m->u->text, (double)(start_ms - m->wait_ends_ms) / 1000);
			drop(m);
			return LOCK_FAILED;
		}
		lk->refused = true;
		return LOCK_HELD;
	}
	m->waiting = false;
	r = my_answer(lk, &m->wait_batch, start_ms, start_ms + lk->node_timeout_ms, err);
	if (r == LOCK_ACQUIRED) {
		/* granted at some time since the call went: the lease is
		 * counted from a probe's start, not the call's */
		if (probe(lk, clock_now_ms() + lk->node_timeout_ms, err) != EXTEND_OK) {
			drop(m);
			if (err->exit == EX_TEMPFAIL)
				err->exit = EX_UNAVAILABLE;
			return LOCK_FAILED;
		}
		lk->acquired_ms = m->probe_ms;
		my_done(&m->c);
		return r;
	}
	if (r == LOCK_HELD) {
		/* the server's wait is over: the next, if time is left */
		if (start_wait(lk, err) == 0)
			return r;
	}
	drop(m);
	return r == LOCK_HELD ? LOCK_FAILED : r;
}

size_t my_wait_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct mylock *m = M(lk);

	if (!m->waiting || max == 0 || my_fd(&m->c) < 0)
		return 0;
	pfd[0] = (struct pollfd){ my_fd(&m->c), my_events(&m->c), 0 };
	return 1;
}

bool my_wait_events(struct lock *lk, const struct pollfd *pfd, size_t n)
{
	return n > 0 && pfd[0].revents != 0;
}

/* KILL QUERY on the lock's connection, from a connection of its own. */
static void kill_query(struct lock *lk, int64_t deadline_ms)
{
	struct mylock *m = M(lk);
	struct my_conn k;
	struct error ignored;
	char sql[64];

	my_init(&k, m->u, lk->p->password, lk->p->tls);
	if (my_connect(&k, deadline_ms, &ignored) == 0) {
		snprintf(sql, sizeof sql, "KILL QUERY %lu", m->c.thread_id);
		my_query(&k, sql, deadline_ms, &ignored);
	}
	my_conn_close(&k);
}

void my_end_wait(struct lock *lk, enum lock_result r)
{
	struct mylock *m = M(lk);
	long long got = 0;

	if (r == LOCK_ACQUIRED)
		return;
	if (m->waiting) {
		/* one node timeout for all of it: a stopped server must not
		 * hold the waiter thrice that past its -w deadline */
		int64_t now_ms = clock_now_ms(), end_ms = now_ms + lk->node_timeout_ms;

		/* the server gives up at the -w deadline by itself */
		if (r == LOCK_HELD && m->wait_ends_ms <= now_ms + WAIT_GRACE_MS)
			my_run(&m->c, end_ms);
		if (my_pending(&m->c) && !my_paused(&m->c)) {
			kill_query(lk, end_ms);
			my_run(&m->c, end_ms);
		}
		/* the rest of a batch that came (its event) */
		m->c.stop_at = 0;
		my_run(&m->c, end_ms);
		/* granted just before: closing gives it back; its history
		 * event goes too (the fence stays used: still increasing) */
		if (!my_pending(&m->c) && !m->c.broken &&
		    my_int(&m->c, (size_t)m->wait_batch.get, 0, &got) && got == 1 &&
		    m->wait_batch.history >= 0 &&
		    (size_t)m->wait_batch.history < m->c.n_results) {
			unsigned long long id = m->c.results[m->wait_batch.history].insert_id;
			char sql[80];
			struct error ignored;

			snprintf(sql, sizeof sql, "DELETE FROM dlock_history WHERE id = %llu", id);
			if (id)
				my_query(&m->c, sql, clock_now_ms() + lk->node_timeout_ms,
					 &ignored);
		}
	}
	drop(m);
}

/* ---- holding ----------------------------------------------------------- */

/* -k: the counter row is the name's own, so a job's fence (the largest
 * of its keys') is written back to each key's row while holding it: the
 * next holder of that key counts on from there, never below. */
int my_raise_fence(struct lock *lk, const char *fence, struct error *err)
{
	struct mylock *m = M(lk);
	char sql[sizeof m->names.rowkey + 160];

	if (lk->p->no_fence || !*fence || fence[strspn(fence, "0123456789")]) {
		snprintf(lk->fence, sizeof lk->fence, "%s", fence);
		return 0;
	}
	snprintf(sql, sizeof sql,
		 "UPDATE dlock_locks SET fence = GREATEST(fence, %s) WHERE name = %s AND conn = CONNECTION_ID()",
		 fence, m->names.rowkey);
	if (my_finish_tail(lk, clock_now_ms() + lk->node_timeout_ms) == 1) {
		error_set(err, EX_UNAVAILABLE, "%s: no answer in time", m->u->text);
		return -1;
	}
	if (my_query(&m->c, sql, clock_now_ms() + lk->node_timeout_ms, err) < 0)
		return -1;
	if (m->c.err_no) {
		my_fence_error(lk, err);
		return -1;
	}
	snprintf(lk->fence, sizeof lk->fence, "%s", fence);
	return 0;
}

/* --min-hold kept by dlock after the job: the row's holder says the
 * command finished: lk->info's fence and finished time after it (the
 * row's since, the server's clock, stays). */
int my_finished(struct lock *lk, struct error *err)
{
	struct mylock *m = M(lk);
	char tok[MY_TOKEN_LIT], *info, *sql = NULL;
	const char *tail = lk->info;
	int64_t deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	int rc = -1;

	for (int tabs = 0; tabs < 5 && tail; tabs++)
		if ((tail = strchr(tail + (tabs > 0), '\t')) == NULL)
			return 0;	/* no such tail: nothing to say */
	if (lk->p->no_fence)
		return 0;	/* no row: no re-entry either */
	if (my_finish_tail(lk, deadline_ms) == 1) {
		error_set(err, EX_UNAVAILABLE, "%s: no answer in time", m->u->text);
		return -1;
	}
	my_token_sql(lk->token, tok);
	if ((info = malloc(2 * strlen(tail) + 4)))
		my_hex_literal(tail, strlen(tail), info);
	if (!info ||
	    asprintf(&sql, "UPDATE dlock_locks SET holder = CONCAT(holder, %s) WHERE name = %s AND conn = CONNECTION_ID() AND token = %s",
		     info, m->names.rowkey, tok) < 0) {
		free(info);
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	free(info);
	if (my_query(&m->c, sql, deadline_ms, err) == 0) {
		if (m->c.err_no)
			error_set(err, EX_UNAVAILABLE, "%s: %s", m->u->text, m->c.err_msg);
		else
			rc = 0;
	}
	my_done(&m->c);
	free(sql);
	return rc;
}

enum extend_result my_extend(struct lock *lk, int64_t timeout_ms,
			     struct error *err)
{
	struct mylock *m = M(lk);
	int64_t deadline_ms = clock_now_ms() + timeout_ms;
	enum extend_result r;

	if (!m->held) {
		error_set(err, EX_TEMPFAIL, "%s: the lock is not held", m->u->text);
		return EXTEND_LOST;
	}
	r = probe(lk, deadline_ms, err);
	/* a late answer proved life at its own start: ask again, fresh */
	if (r == EXTEND_OK && m->probe_ms < deadline_ms - timeout_ms &&
	    clock_now_ms() < deadline_ms)
		r = probe(lk, deadline_ms, err);
	my_done(&m->c);
	return r;
}

size_t my_watch_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct mylock *m = M(lk);

	if (!m->held || max == 0 || my_fd(&m->c) < 0)
		return 0;
	pfd[0] = (struct pollfd){ my_fd(&m->c), POLLIN, 0 };
	return 1;
}

bool my_watch_events(struct lock *lk, const struct pollfd *pfd, size_t n,
		     char *note, size_t notelen)
{
	char b;

	if (n == 0 || !pfd[0].revents)
		return false;
	/* the tail's answers (what came of them; the rest when it comes) */
	if (M(lk)->tail_pending) {
		my_finish_tail(lk, clock_now_ms());
		if (!M(lk)->c.broken)
			return false;
		snprintf(note, notelen, "%s: the server ended the lock's connection (%s)",
			 M(lk)->u->text, M(lk)->c.err_no ? M(lk)->c.err_msg : "connection lost");
		return true;
	}
	if (recv(pfd[0].fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
		snprintf(note, notelen, "%s: the server closed the lock's connection (KILL, restart or wait_timeout)",
			 M(lk)->u->text);
	else
		snprintf(note, notelen, "%s: the server spoke on the lock's idle connection (KILL?)",
			 M(lk)->u->text);
	return true;
}

size_t my_fds(const struct lock *lk, int *out, size_t max)
{
	int fd = my_fd(&M(lk)->c);

	if (fd < 0 || max == 0)
		return 0;
	out[0] = fd;
	return 1;
}

/* The release as one batch: the history's statements (history.c), then
 * RELEASE_LOCK, whose answer is statement *release_at. NULL: out of
 * memory. */
static char *release_sql(struct lock *lk, const struct release_how *how,
			 int *release_at)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	int n;

	if (!f)
		return NULL;
	n = my_released_sql(f, lk, how);
	fprintf(f, "SELECT RELEASE_LOCK(%s)", M(lk)->names.lit);
	*release_at = n;
	if (fclose(f) != 0 || n < 0) {
		free(s);
		return NULL;
	}
	return s;
}

int my_release(struct lock *lk, const struct release_how *how,
	       struct error *err)
{
	struct mylock *m = M(lk);
	struct my_conn *c = &m->c;
	int64_t deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	int at = 0;
	long long released = 0;
	char *sql;
	bool gone;

	lk->lost_at_release = false;
	if (!m->held || !c->m) {
		drop(m);
		lk->lost_at_release = true;
		my_record_lost(lk, how);
		return 0;
	}
	/* the tail's answers, or a probe's that was late: take them, or
	 * give up on them */
	if (my_finish_tail(lk, deadline_ms) == 1 ||
	    (m->probing && my_run(c, deadline_ms) == 1)) {
		drop(m);
		error_set(err, EX_UNAVAILABLE, "%s: no answer in time; the lock goes when the server sees the connection closed",
			  m->u->text);
		return -1;
	}
	m->probing = false;
	if (!(sql = release_sql(lk, how, &at))) {
		drop(m);
		error_set(err, EX_OSERR, "out of memory; the lock goes with the connection");
		return -1;
	}
	if (my_send(c, sql, err) < 0 || my_run(c, deadline_ms) == 1) {
		free(sql);
		drop(m);
		error_set(err, EX_UNAVAILABLE, "%s: no answer in time; the lock goes when the server sees the connection closed",
			  m->u->text);
		return -1;
	}
	free(sql);
	gone = c->broken || my_gone(c->err_no);
	/* a history statement failed: the release itself did not run */
	if (!gone && c->err_no && c->err_at <= (size_t)at) {
		char plain[200];

		snprintf(plain, sizeof plain, "SELECT RELEASE_LOCK(%s)", m->names.lit);
		at = 0;
		if (my_query(c, plain, deadline_ms, err) < 0) {
			drop(m);
			return -1;
		}
		gone = c->broken || my_gone(c->err_no);
	}
	if (gone || !my_int(c, (size_t)at, 0, &released) || released != 1)
		lk->lost_at_release = true;
	drop(m);
	if (gone)
		my_record_lost(lk, how);
	return 0;
}
