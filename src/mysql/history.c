/* history.c - a MySQL lock's history: rows of dlock_history (mysql.h),
 * its events written as the lock is taken (the batch's tail, after the
 * fence row, its answers read later), given back, lost, or its holder
 * killed (lock.c), broken (inspect.c); trimmed to --history now and then.
 * The history is a record for people: its failures are warnings, never
 * the lock's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mysqld_error.h>
#include "clock.h"
#include "mysql.h"

/* How many runs' events (two each) the history may grow past --history n
 * before a release trims it back to n: a delete per run would cost the
 * server about as much as the two events; between trims a lock keeps up
 * to a quarter more (as on etcd; Redis trims with MAXLEN ~). Counted,
 * not drawn from the fence, which follows the server's clock. */
static long trim_every(long history)
{
	long every = history / 8;

	return every < 1 ? 1 : every > 64 ? 64 : every;
}

int my_acquired_sql(FILE *f, struct lock *lk, const char *tok,
		    const char *info, struct my_batch *b, int n)
{
	const struct my_names *names = &M(lk)->names;

	/* the lock's events, for the release to know whether to trim: an
	 * index range read forwards of at most a quarter more than
	 * --history (finding the --history'th newest by a read backwards,
	 * "ORDER BY id DESC LIMIT 1 OFFSET n", costs MyISAM and Aria ten
	 * times as much); the job does not wait for it */
	fprintf(f, "SELECT IF(IS_USED_LOCK(%s) = CONNECTION_ID(), "
		"(SELECT COUNT(*) FROM dlock_history WHERE name = %s), NULL);",
		names->lit, names->rowkey);
	b->count = n++;
	fprintf(f, "INSERT INTO dlock_history (name, at_ms, event, token, holder, fence) "
		"SELECT %s, " MY_NOW_MS ", 'acquired', %s, %s, LAST_INSERT_ID() "
		"FROM DUAL WHERE IS_USED_LOCK(%s) = CONNECTION_ID();",
		names->rowkey, tok, info, names->lit);
	b->history = n++;
	return n;
}

/* The tail failed: the history table missing (dropped since: dlock_locks
 * is there) is made again and the event written; any other failure of
 * the history's is no failure of the lock, which is held, its fence
 * written: a warning, and no more events this run. */
static void tail_failed(struct lock *lk, int64_t deadline_ms)
{
	struct mylock *m = M(lk);
	struct my_conn *c = &m->c;
	char why[640], tok[MY_TOKEN_LIT], *info, *sql = NULL;
	struct error err = { 0 };

	snprintf(why, sizeof why, "writing %s.dlock_history: %s", m->u->database, c->err_msg);
	if (c->err_no == ER_NO_SUCH_TABLE) {
		my_token_sql(lk->token, tok);
		info = my_info_sql(lk->info);
		if (!info || asprintf(&sql, "INSERT INTO dlock_history (name, at_ms, event, token, holder, fence) "
				      "VALUES (%s, " MY_NOW_MS ", 'acquired', %s, %s, %lld)",
				      m->names.rowkey, tok, info, m->fence) < 0)
			sql = NULL;
		free(info);
		if (sql && my_create_tables(lk, deadline_ms, &err) == 0 &&
		    my_query(c, sql, deadline_ms, &err) == 0 && !c->err_no) {
			m->event_id = c->results[0].insert_id;
			m->history_rows = 1;
			free(sql);
			return;
		}
		free(sql);
		if (c->err_no)
			snprintf(why, sizeof why, "writing %s.dlock_history: %s", m->u->database, c->err_msg);
		else if (err.exit)
			snprintf(why, sizeof why, "%s", err.msg);
		if (!c->m || c->broken)
			return;		/* the lock is lost: the next probe says so */
	}
	m->no_history = true;
	log_line(lk->p->name, "warning: %s: no history of this run: %s", m->u->text, why);
}

/* The answers to the tail of the batch that took the lock (or that did
 * not: then only read), before anything else is asked on the connection,
 * until deadline_ms: the event's id, and the count for a trim. Returns 0
 * when done (the connection may have died: c->broken), 1 when answers are
 * still to come at deadline_ms. */
int my_finish_tail(struct lock *lk, int64_t deadline_ms)
{
	struct mylock *m = M(lk);
	struct my_conn *c = &m->c;
	const struct my_batch *b = &m->tail;

	if (!m->tail_pending || !c->m)
		return 0;
	c->stop_at = 0;
	if (my_run(c, deadline_ms) == 1)
		return 1;
	m->tail_pending = false;
	if (m->tail_ours && !c->broken && !my_gone(c->err_no)) {
		m->history_rows = -1;
		if (c->err_no && c->err_at <= (size_t)b->history) {
			/* a round trip or two, whatever deadline_ms: the
			 * lock's connection is never cut short by it */
			tail_failed(lk, clock_now_ms() + lk->node_timeout_ms);
		} else {
			if ((size_t)b->history < c->n_results)
				m->event_id = c->results[b->history].insert_id;
			/* ours too, which came after the count */
			if (my_int(c, (size_t)b->count, 0, &m->history_rows))
				m->history_rows++;
		}
	}
	m->tail_ours = false;
	if (!c->broken)
		my_done(c);
	return 0;
}

/* The job's exit status as SQL: NULL when unknown. */
static void exit_sql(const struct release_how *how, char *out)
{
	if (how->exit_status < 0)
		strcpy(out, "NULL");
	else
		sprintf(out, "%d", how->exit_status & 0xffff);
}

int my_released_sql(FILE *f, struct lock *lk, const struct release_how *how)
{
	struct mylock *m = M(lk);
	const struct lock_params *p = lk->p;
	char tok[MY_TOKEN_LIT], *info, status[16];
	int n = 0;

	if (p->no_fence || p->history <= 0 || m->fence < 0 || m->no_history)
		return 0;
	if (!how->job) {
		/* an acquisition no command used: the history forgets it */
		if (!m->event_id)
			return 0;
		fprintf(f, "DELETE FROM dlock_history WHERE id = %llu AND IS_USED_LOCK(%s) = CONNECTION_ID();",
			m->event_id, m->names.lit);
		return 1;
	}
	if (!(info = my_hex_dup(lk->info)))
		return -1;
	exit_sql(how, status);
	my_token_sql(lk->token, tok);
	/* the event and the trim in one transaction: one flush of an InnoDB
	 * table's, none of the others' (INSERT ... VALUES: MariaDB flushes a
	 * MyISAM table's files after INSERT ... SELECT) */
	fprintf(f, "START TRANSACTION;INSERT INTO dlock_history (name, at_ms, event, token, holder, fence, exit_status, held_ms) "
		"VALUES (%s, " MY_NOW_MS ", IF(IS_USED_LOCK(%s) = CONNECTION_ID(), 'released', 'lost'), "
		"%s, %s, %lld, %s, %" PRId64 ");",
		m->names.rowkey, m->names.lit, tok, info, m->fence, status,
		clock_now_ms() - lk->acquired_ms);
	n += 2;
	/* a release that trims: the oldest beyond --history, by the count
	 * taken with our event (another's since, such as a 'lost' from the
	 * holder before us, goes at the next trim) */
	if (m->history_rows >= 0 &&
	    m->history_rows + 1 > p->history + 2 * (trim_every(p->history) - 1)) {
		fprintf(f, "DELETE FROM dlock_history WHERE name = %s ORDER BY id LIMIT %lld;",
			m->names.rowkey, m->history_rows + 1 - p->history);
		n++;
	}
	fprintf(f, "COMMIT;");
	free(info);
	return n + 1;
}

void my_event_trimmed(struct my_conn *c, const struct my_names *names,
		      long keep, const char *insert, int64_t deadline_ms)
{
	struct error ignored;
	char *sql;

	if (asprintf(&sql, "%s;DELETE FROM dlock_history WHERE name = %s AND id <= "
		     "(SELECT id FROM (SELECT id FROM dlock_history WHERE name = %s "
		     "ORDER BY id DESC LIMIT 1 OFFSET %ld) AS t)",
		     insert, names->rowkey, names->rowkey, keep) < 0)
		return;
	my_query(c, sql, deadline_ms, &ignored);
	free(sql);
}

/* Runs sql on a connection of its own, bounded by deadline_ms: the
 * lock's is gone, or not ours to use. Best effort. */
static void on_own_connection(struct lock *lk, const char *sql,
			      int64_t deadline_ms)
{
	struct my_conn c;
	struct error ignored;

	my_init(&c, M(lk)->u, lk->p->password, lk->p->tls);
	if (my_connect(&c, deadline_ms, &ignored) == 0)
		my_query(&c, sql, deadline_ms, &ignored);
	my_conn_close(&c);
}

void my_record_lost(struct lock *lk, const struct release_how *how)
{
	struct mylock *m = M(lk);
	char *info, tok[MY_TOKEN_LIT], *sql = NULL, status[16];

	if (lk->p->no_fence || lk->p->history <= 0 || !how->job || m->fence < 0)
		return;
	if (!(info = my_hex_dup(lk->info)))
		return;
	my_token_sql(lk->token, tok);
	exit_sql(how, status);
	if (asprintf(&sql, "INSERT INTO dlock_history (name, at_ms, event, token, holder, fence, exit_status, held_ms) "
		     "VALUES (%s, " MY_NOW_MS ", 'lost', %s, %s, %lld, %s, %" PRId64 ")",
		     m->names.rowkey, tok, info, m->fence, status,
		     clock_now_ms() - lk->acquired_ms) >= 0) {
		on_own_connection(lk, sql, clock_now_ms() + lk->node_timeout_ms);
		free(sql);
	}
	free(info);
}

/* dlock was killed (kill -9): its watchdog, in a process of its own,
 * writes the 'killed' event from a connection of its own (the lock's is
 * the watchdog's until the job has stopped), and trims the history as a
 * release does. Best effort, bounded by --node-timeout. A holder without
 * a fence (--no-fence) wrote no history. */
void my_note_killed(struct lock *lk, int64_t held_ms)
{
	struct mylock *m = M(lk);
	struct my_conn c;
	struct error ignored;
	char tok[MY_TOKEN_LIT], *info, *sql;
	int64_t deadline_ms = clock_now_ms() + lk->node_timeout_ms;

	if (lk->p->history <= 0 || !m->u->database[0] || !lk->fence[0] ||
	    lk->fence[strspn(lk->fence, "0123456789")])
		return;
	if (!(info = my_hex_dup(lk->info)))
		return;
	my_token_sql(lk->token, tok);
	my_init(&c, m->u, lk->p->password, lk->p->tls);
	if (my_connect(&c, deadline_ms, &ignored) == 0) {
		my_names_rowkey(&m->names, c.mariadb);
		if (asprintf(&sql, "INSERT INTO dlock_history (name, at_ms, event, token, holder, fence, held_ms) "
			     "VALUES (%s, " MY_NOW_MS ", 'killed', %s, %s, %s, %" PRId64 ")",
			     m->names.rowkey, tok, info, lk->fence, held_ms) >= 0) {
			my_event_trimmed(&c, &m->names, lk->p->history, sql, deadline_ms);
			free(sql);
		}
	}
	my_conn_close(&c);
	free(info);
}
