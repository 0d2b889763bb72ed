/* acquire.c - the batch that asks a MySQL or MariaDB server for the lock
 * (for lock.c's try and wait), and what its answers say.
 *
 * One round trip after the handshake: the session's settings and checks
 * (the handshake's connection id is CONNECTION_ID(): no pooler moves the
 * session; not read-only; not Galera) ride in GET_LOCK's statement, then
 * the fence row and the history event, written only if the lock is ours.
 * The job starts once the fence row is committed: the history's
 * statements (the tail) are read later (history.c). The tables are
 * created on first use. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <mysqld_error.h>
#include "mysql.h"

static long wait_timeout_s(const struct lock *lk)
{
	return (long)((lk->ttl_ms + 999) / 1000);
}

/* The statements that take the lock, as one batch: the session set up and
 * checked (first time), GET_LOCK with secs, the fence row and the history
 * event when granted. Each statement costs the server a packet, and the
 * client a wake-up: the checks ride in GET_LOCK's statement, and who
 * holds the lock is asked only when it was refused (held_by() in lock.c). */
char *my_acquire_sql(struct lock *lk, double secs, int with,
		     struct my_batch *b)
{
	struct mylock *m = M(lk);
	const struct lock_params *p = lk->p;
	char *info = my_info_sql(lk->info), *sql = NULL;
	char tok[MY_TOKEN_LIT], *s = NULL;
	size_t len = 0;
	FILE *f;
	int n = 0;

	*b = (struct my_batch){ -1, -1, -1, -1, -1, -1 };
	if (!info || !(f = open_memstream(&s, &len))) {
		free(info);
		return NULL;
	}
	my_token_sql(lk->token, tok);
	if (!(with & WITH_GET)) {
		/* the lock is held: the fence row and event only */
	} else if (!m->session_set) {
		/* autocommit: a server whose default is off would keep the
		 * fence row's lock in an open transaction */
		fprintf(f, "SET SESSION wait_timeout = %ld, interactive_timeout = %ld, autocommit = 1;",
			wait_timeout_s(lk), wait_timeout_s(lk));
		b->set = n++;
		/* checked(): columns 1 to 3 */
		fprintf(f, "SELECT IF(CONNECTION_ID() = %lu AND @@read_only = 0%s, GET_LOCK(%s, %.3f), -1), "
			"CONNECTION_ID(), @@read_only, %s, VERSION();",
			m->c.thread_id, m->no_wsrep ? "" : " AND @@wsrep_on = 0",
			m->names.lit, secs, m->no_wsrep ? "0" : "@@wsrep_on");
		b->get = b->check = n++;
	} else {
		fprintf(f, "SELECT GET_LOCK(%s, %.3f);", m->names.lit, secs);
		b->get = n++;
	}
	/* the fence row, committed (the redo log flushed) before its
	 * answer comes: the job starts on that answer. The counter alone
	 * repeats after a crash that lost its commit (a server with
	 * innodb_flush_log_at_trx_commit=0) or a failover to a replica that
	 * lagged: the server's clock in us is its floor, as on Redis and
	 * PostgreSQL, so the next fence is larger all the same */
	if (!p->no_fence) {
		fprintf(f, "INSERT INTO dlock_locks (name, fence, conn, token, holder, ttl_ms, lock_name) "
			"SELECT %s, LAST_INSERT_ID(" MY_NOW_US "), CONNECTION_ID(), %s, %s, %" PRId64 ", %s "
			"FROM DUAL WHERE IS_USED_LOCK(%s) = CONNECTION_ID() "
			"ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(GREATEST(fence + 1, " MY_NOW_US ")), "
			"conn = VALUES(conn), token = VALUES(token), holder = VALUES(holder), "
			"ttl_ms = VALUES(ttl_ms), lock_name = VALUES(lock_name);",
			m->names.rowkey, tok, info, lk->ttl_ms, m->names.full_hex, m->names.lit);
		b->fence = n++;
	}
	/* The tail, which the job does not wait for (my_query_head()): the
	 * history's statements, after the fence row, run by the server while
	 * the job starts, read by my_finish_tail(). No later statement of ours
	 * comes before them, nor any acquisition after ours. */
	if (!p->no_fence && p->history > 0)
		n = my_acquired_sql(f, lk, tok, info, b, n);
	if (fclose(f) == 0)
		sql = s;
	else
		free(s);
	free(info);
	return sql;
}

/* Sends a batch that asks for the lock and waits for its answers up to
 * the fence row's: the tail's (the history's statements) are the server's
 * to run meanwhile, read by my_finish_tail(). Returns 0, or -1 with err (the
 * connection closed). */
int my_query_head(struct mylock *m, const char *sql,
		  const struct my_batch *b, int64_t deadline_ms, struct error *err)
{
	size_t stop_at = b->history >= 0 ? (size_t)b->fence + 1 : 0;

	if (my_send_part(&m->c, sql, stop_at, err) < 0)
		return -1;
	if (my_run(&m->c, deadline_ms) == 1) {
		my_conn_close(&m->c);
		error_set(err, EX_UNAVAILABLE, "%s: no answer in time", m->u->text);
		return -1;
	}
	if (m->c.broken) {
		my_error(&m->c, NULL, err);
		my_conn_close(&m->c);
		return -1;
	}
	m->tail = *b;
	m->tail_pending = stop_at > 0;
	m->tail_ours = false;
	return 0;
}

/* The session's checks: the handshake's connection is the statements'
 * (no pooler moves or shares the session: the lock is the connection's),
 * the server takes writes (a replica never sees the primary's locks), it
 * is no Galera node (GET_LOCK is unsupported there, MDEV-30473). */
static int checked(struct lock *lk, const struct my_batch *b, struct error *err)
{
	struct my_conn *c = &M(lk)->c;
	long long id = -1, ro = 0, wsrep = 0;
	size_t len;
	const char *v;

	if (b->check < 0)
		return 0;
	if ((v = my_field(c, (size_t)b->check, 1, &len)))
		id = strtoll(v, NULL, 10);
	if ((v = my_field(c, (size_t)b->check, 2, &len)))
		ro = strtoll(v, NULL, 10);
	if ((v = my_field(c, (size_t)b->check, 3, &len)))
		wsrep = strtoll(v, NULL, 10);
	if (id != (long long)c->thread_id) {
		error_set(err, EX_UNAVAILABLE, "%s: the session moved (CONNECTION_ID() %lld, the handshake's %lu): a pooler (ProxySQL, MaxScale...) between dlock and the server, where GET_LOCK, which belongs to the connection, is not safe; name the server itself",
			  c->u->text, id, c->thread_id);
		return -1;
	}
	if (ro) {
		error_set(err, EX_UNAVAILABLE, "%s: the server is read-only (@@read_only = 1): a replica? GET_LOCK takes locks on the primary only",
			  c->u->text);
		return -1;
	}
	if (wsrep) {
		error_set(err, EX_UNAVAILABLE, "%s: a Galera cluster node (@@wsrep_on = 1), where GET_LOCK is not supported (MDEV-30473)",
			  c->u->text);
		return -1;
	}
	M(lk)->session_set = true;
	return 0;
}

/* A statement on the fence row failed: what to tell the user. */
void my_fence_error(struct lock *lk, struct error *err)
{
	struct mylock *m = M(lk);
	char what[300];

	snprintf(what, sizeof what, "writing the fencing counter in %s.dlock_locks (needs SELECT, INSERT and UPDATE on it, SELECT, INSERT and DELETE on dlock_history; or --no-fence)",
		 m->u->database);
	my_error(&m->c, what, err);
}

/* Creates the tables on first use: dlock_history with an engine whose
 * writes flush nothing (mysql.h), InnoDB where the server will not have
 * that one. */
int my_create_tables(struct lock *lk, int64_t deadline_ms,
		     struct error *err)
{
	struct mylock *m = M(lk);
	struct my_conn *c = &m->c;
	const char *fast = MY_HISTORY_MARIADB;
	char what[240], sql[sizeof MY_DDL_HISTORY + 40];

	snprintf(what, sizeof what, "creating %s.dlock_locks and dlock_history (needs CREATE, or an administrator to create them as dlock(1) shows; or --no-fence)",
		 m->u->database);
	if (my_query(c, c->mariadb ? MY_DDL_LOCKS :
		     MY_DDL_LOCKS ";SELECT @@enforce_gtid_consistency", deadline_ms, err) < 0)
		return -1;
	if (c->err_no && c->err_at == 0) {
		my_error(c, what, err);
		return -1;
	}
	if (!c->mariadb) {
		/* MySQL refuses MyISAM in a transaction with InnoDB where it
		 * enforces GTID consistency (no such variable: no GTIDs) */
		size_t len;
		const char *v = c->err_no ? "OFF" : my_field(c, 1, 0, &len);

		fast = v && strcasecmp(v, "OFF") == 0 ? MY_HISTORY_MYSQL : NULL;
	}
	if (fast) {
		snprintf(sql, sizeof sql, "%s%s", MY_DDL_HISTORY, fast);
		if (my_query(c, sql, deadline_ms, err) < 0)
			return -1;
		if (!c->err_no)
			return 0;
		if (my_exit_of(c->err_no) == EX_NOPERM) {
			my_error(c, what, err);
			return -1;
		}
		/* refused (enforce_storage_engine, disabled_storage_engines,
		 * no such engine): the durable one does too */
	}
	snprintf(sql, sizeof sql, "%s%s", MY_DDL_HISTORY, MY_HISTORY_DURABLE);
	if (my_query(c, sql, deadline_ms, err) < 0)
		return -1;
	if (c->err_no) {
		my_error(c, what, err);
		return -1;
	}
	return 0;
}

/* Whether the batch b failed at the fence row's statement or after it. */
static bool failed_from_fence(const struct my_conn *c, const struct my_batch *b)
{
	return c->err_no && (size_t)b->fence <= c->err_at;
}

/* The fence from a batch that took the lock (its event is the tail's):
 * creates the tables on first use. Returns 0, or -1 with err (the lock
 * then given back). */
static int take_fence(struct lock *lk, const struct my_batch *b,
		      int64_t deadline_ms, struct error *err)
{
	struct mylock *m = M(lk);
	struct my_conn *c = &m->c;
	struct my_batch again;
	const struct my_batch *at = b;
	char *sql = NULL;

	if (b->fence < 0)
		return 0;
	if (failed_from_fence(c, b) && c->err_no == ER_NO_SUCH_TABLE) {
		if (my_create_tables(lk, deadline_ms, err) < 0 ||
		    !(sql = my_acquire_sql(lk, 0, 0, &again))) {
			if (!sql && !err->exit)
				error_set(err, EX_OSERR, "out of memory");
			return -1;
		}
		if (my_query_head(m, sql, &again, deadline_ms, err) < 0) {
			free(sql);
			return -1;
		}
		free(sql);
		at = &again;
	}
	if (failed_from_fence(c, at)) {
		my_fence_error(lk, err);
		return -1;
	}
	if ((size_t)at->fence >= c->n_results ||
	    c->results[at->fence].affected == 0 ||
	    c->results[at->fence].insert_id == 0) {
		error_set(err, EX_SOFTWARE, "%s: the fencing counter's row was not written while the lock was held",
			  m->u->text);
		return -1;
	}
	/* BIGINT UNSIGNED counts past what DLOCK_FENCE's int64 holds (a
	 * row edited by hand): no job without its fence */
	if (c->results[at->fence].insert_id > INT64_MAX) {
		error_set(err, EX_SOFTWARE, "%s: the fencing counter in %s.dlock_locks is past 2^63-1 (%llu): reset the row's fence by hand",
			  m->u->text, m->u->database,
			  (unsigned long long)c->results[at->fence].insert_id);
		return -1;
	}
	m->fence = (long long)c->results[at->fence].insert_id;
	m->tail_ours = m->tail_pending;
	return 0;
}

static void copy_acquired(struct lock *lk, int64_t start_ms)
{
	struct mylock *m = M(lk);

	m->held = true;
	if (m->fence >= 0)
		snprintf(lk->fence, sizeof lk->fence, "%lld", m->fence);
	else
		lk->fence[0] = '\0';
	lk->acquired_ms = start_ms;
}

/* The answer to a batch that asked for the lock (b: where what is). */
enum lock_result my_answer(struct lock *lk, const struct my_batch *b,
			   int64_t start_ms, int64_t deadline_ms,
			   struct error *err)
{
	struct mylock *m = M(lk);
	struct my_conn *c = &m->c;
	long long got;

	if (c->broken || (c->err_no && c->err_at <= (size_t)b->get)) {
		my_error(c, NULL, err);
		return LOCK_FAILED;
	}
	if (checked(lk, b, err) < 0)
		return LOCK_FAILED;
	if (!my_int(c, (size_t)b->get, 0, &got)) {
		error_set(err, EX_UNAVAILABLE, "%s: GET_LOCK answered NULL: the wait was killed (KILL QUERY)?",
			  m->u->text);
		return LOCK_FAILED;
	}
	if (got != 0 && got != 1) {
		error_set(err, EX_SOFTWARE, "%s: GET_LOCK answered %lld", m->u->text, got);
		return LOCK_FAILED;
	}
	if (got == 0) {
		lk->refused = true;
		lk->held_by[0] = '\0';
		return LOCK_HELD;
	}
	m->held = true;
	if (take_fence(lk, b, deadline_ms, err) < 0)
		return LOCK_FAILED;
	copy_acquired(lk, start_ms);
	return LOCK_ACQUIRED;
}
