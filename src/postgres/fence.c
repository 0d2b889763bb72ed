/* fence.c - PostgreSQL: the fencing counter's table (names.h,
 * postgres.h's PG_FENCE_CTE), made on first use, what a statement that
 * writes it meets, in words that say what to do, and the -k fence written
 * back to each key's row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "postgres.h"

#define FENCE_DDL \
	"CREATE TABLE IF NOT EXISTS " PG_FENCE_TABLE \
	" (lock_key bigint PRIMARY KEY, fence bigint NOT NULL)"

/* What err says after the URL ("URL: cause" -> "cause"). */
static const char *cause_in(const struct lock *lk, const struct error *err)
{
	const char *text = P(lk)->url->text;
	size_t len = strlen(text);

	if (strncmp(err->msg, text, len) == 0 && strncmp(err->msg + len, ": ", 2) == 0)
		return err->msg + len + 2;
	return err->msg;
}

/* err says what a statement that writes the counter met, in words that
 * say what to do: the rights it takes (77), a standby or a read-only
 * session (69); anything else as it was. */
void pg_fence_failed(struct lock *lk, const struct pg_failure *why,
		     struct error *err)
{
	const char *text = P(lk)->url->text;
	const char *standby = P(lk)->c ? PQparameterStatus(P(lk)->c, "in_hot_standby") : NULL;
	char cause[sizeof err->msg];

	snprintf(cause, sizeof cause, "%s", cause_in(lk, err));
	if (strcmp(why->state, "42501") == 0)
		error_set(err, EX_NOPERM, "%s: writing the fencing counter in " PG_FENCE_TABLE ": %s (it takes SELECT, INSERT and UPDATE on the table; or --no-fence)",
			  text, cause);
	else if (strcmp(why->state, "25006") == 0 && standby && strcmp(standby, "on") == 0)
		error_set(err, EX_UNAVAILABLE, "%s: a standby (in recovery): its advisory locks are not the primary's; connect to the primary",
			  text);
	else if (strcmp(why->state, "25006") == 0)
		error_set(err, EX_UNAVAILABLE, "%s: the session is read-only (%s): the fencing counter cannot be written; connect to the primary, or --no-fence",
			  text, cause);
}

/* The counter's table, made on first use (by a role that may create it
 * in the schema public; else an administrator makes it, as dlock(1)
 * says). Two dlocks making it at once: the loser's error is no error. */
int pg_create_fences(struct lock *lk, struct error *err)
{
	struct pg *pg = P(lk);
	struct pg_failure why;
	char cause[sizeof err->msg];
	bool dead;
	PGresult *r;

	if (pg_connect_once(lk, true, err) < 0)
		return -1;
	r = pg_query_why(pg->c, pg->url, FENCE_DDL, NULL, 0,
			 clock_now_ms() + lk->node_timeout_ms, &dead, &why, err);
	if (r) {
		PQclear(r);
		return 0;
	}
	if (strcmp(why.state, "23505") == 0 || strcmp(why.state, "42P07") == 0) {
		pg_disconnect(pg);
		return 0;
	}
	pg_disconnect(pg);
	if (!why.state[0])
		return -1;
	snprintf(cause, sizeof cause, "%s", cause_in(lk, err));
	error_set(err, strcmp(why.state, "42501") == 0 ? EX_NOPERM : err->exit,
		  "%s: creating the fencing counter's table " PG_FENCE_TABLE ": %s (it takes CREATE on the schema public, or an administrator to create it as dlock(1) shows; or --no-fence)",
		  pg->url->text, cause);
	return -1;
}

/* -k: each key has its own counter row, so a job's fence (the largest of
 * its keys') is written back to each key's row while holding it, and
 * said in the comment: the next holder of that key counts on from there,
 * and a nested dlock hands on the job's fence. */
int pg_raise_fence(struct lock *lk, const char *fence, struct error *err)
{
	struct pg *pg = P(lk);
	const char *params[] = { pg->key, fence };
	struct pg_failure why;
	char *sql;
	bool dead;
	PGresult *r;
	int d;

	if (lk->p->no_fence || !*fence || fence[strspn(fence, "0123456789")] ||
	    strlen(fence) > 18) {
		snprintf(lk->fence, sizeof lk->fence, "%s", fence);
		return 0;
	}
	snprintf(lk->fence, sizeof lk->fence, "%s", fence);
	if (pg_make_comment(lk, err) < 0)
		return -1;
	if ((d = pg_drain_beat(lk, clock_now_ms() + lk->node_timeout_ms, err)) < 0) {
		if (d == -1)
			error_set(err, EX_UNAVAILABLE, "%s: no answer in time", pg->url->text);
		else if (d == -3)
			error_set(err, EX_TEMPFAIL, "%s: the session holding the lock is no longer ours alone",
				  pg->url->text);
		return -1;
	}
	if (asprintf(&sql, "UPDATE " PG_FENCE_TABLE " SET fence = GREATEST(fence, $2::bigint) "
		     "WHERE lock_key = " PG_FENCE_KEY " %s", pg->comment) < 0) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	r = pg_query_why(pg->c, pg->url, sql, params, 2, clock_now_ms() + lk->node_timeout_ms,
			 &dead, &why, err);
	free(sql);
	if (!r) {
		pg_fence_failed(lk, &why, err);
		if (dead)
			pg_disconnect(pg);
		return -1;
	}
	PQclear(r);
	return 0;
}
