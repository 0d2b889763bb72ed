/* holders.c - PostgreSQL: the other sessions that hold a lock, as a
 * try sees them in pg_locks and their statements' comments (comment.h):
 * whether one is our caller (a nested dlock re-enters its lock), who
 * holds it (the wait line), and in which mode (-s and --limit N, or
 * --limit N and M, never hold together: 64). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "postgres.h"

/* A nested dlock re-enters a lock its caller holds exclusively, or in
 * its own mode. Not an exclusive request in a shared one (it would not
 * exclude the other holders, and waiting for them would wait for the
 * caller itself: no upgrade), nor -s in --limit or --limit N in M. */
static bool mode_reenters(struct lock *lk, const char *query, struct error *err)
{
	char held[24], ours[24], words[48];

	pg_mode_in(query, held, sizeof held);
	pg_mode_word(lk->p->limit, ours, sizeof ours);
	if (!held[0] || strcmp(held, "x") == 0 || strcmp(held, ours) == 0)
		return true;
	pg_mode_words(held, words, sizeof words);
	if (strcmp(ours, "x") == 0)
		error_set(err, EX_USAGE, "the outer dlock holds the lock %s: a nested exclusive request cannot re-enter it",
			  words);
	else
		error_set(err, EX_USAGE, "the lock is held %s", words);
	return false;
}

/* Whether the holder's comment says its command finished. */
static bool finished(const char *query)
{
	char info[LOCK_INFO_MAX];

	pg_comment_field(pg_comment_in(query), "holder", info, sizeof info);
	return engine_info_finished(info, strlen(info));
}

/* A nested dlock: the lock is held by a session whose statements carry
 * DLOCK_TOKEN. Its fence is the one it announced (right after its grant:
 * asked again for a moment if not yet there). A holder of another role
 * shows this role no statement (pg_stat_activity: "<insufficient
 * privilege>", unless pg_read_all_stats): whether it is the caller cannot
 * be told, and it is not re-entered (nothing but its statements can say
 * so: its pid, role and application_name are anybody's to see or set);
 * its role is noted, for try() to say why rather than wait on it. */
int pg_reentered(struct lock *lk, struct error *err)
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
	pg->hidden_holder[0] = '\0';
	for (;;) {
		bool dead;
		PGresult *r = pg_query(pg->c, pg->url,
				       "SELECT a.query, a.query LIKE $2, a.usename " PG_LOCKS_OF_KEY
				       "AND l.granted AND (a.query LIKE $2 OR NOT "
				       "(pg_has_role(a.usesysid, 'USAGE') OR "
				       "pg_has_role('pg_read_all_stats', 'USAGE'))) "
				       "ORDER BY 2 DESC NULLS LAST LIMIT 1",
				       params, 2, clock_now_ms() + lk->node_timeout_ms,
				       &dead, err);
		char fence[24];

		if (!r) {
			pg_disconnect(pg);
			return -1;
		}
		if (PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 1), "t") != 0)
			snprintf(pg->hidden_holder, sizeof pg->hidden_holder, "%s",
				 PQgetvalue(r, 0, 2));
		if (PQntuples(r) == 0 || pg->hidden_holder[0]) {
			PQclear(r);
			return 0;
		}
		pg_comment_field(pg_comment_in(PQgetvalue(r, 0, 0)), "fence", fence, sizeof fence);
		/* its job over, --min-hold keeps it: the token's re-entry
		 * was the job's */
		if (finished(PQgetvalue(r, 0, 0))) {
			PQclear(r);
			return 0;
		}
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

	pg_comment_field(pg_comment_in(query), "holder", info, sizeof info);
	snprintf(lk->held_by, sizeof lk->held_by, "%s", info);
}

/* The other holders, from their statements' comments: who holds it, for
 * the wait line and --verbose, and, for a shared or --limit request,
 * whether they hold in another mode (64: -s and --limit N, or --limit N
 * and M, never hold together). 0, or -1 with err set (the connection
 * closed if it broke). */
int pg_look_at_holders(struct lock *lk, struct error *err)
{
	struct pg *pg = P(lk);
	const char *params[] = { pg->key };
	char ours[24], held[24], words[48], *sql;
	bool dead;
	PGresult *r;

	pg_mode_word(lk->p->limit, ours, sizeof ours);
	/* This statement says our mode too: a holder in another mode that
	 * looks at the same moment sees it (and both give back, 64) */
	if (asprintf(&sql, PG_TRY_COMMENT " SELECT " PG_HOLDER_QUERY ", l.mode "
		     PG_HOLDERS_OF_KEY "AND l.pid <> pg_backend_pid()", ours) < 0) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	r = pg_query(pg->c, pg->url, sql, params, 1, clock_now_ms() + lk->node_timeout_ms,
		     &dead, err);
	free(sql);
	if (!r) {
		if (dead)
			pg_disconnect(pg);
		return -1;
	}
	for (int i = 0, seen = 0; i < PQntuples(r); i++) {
		const char *query = PQgetvalue(r, i, 0);

		/* no activity: the backend ended between the two reads of
		 * the statement (pg_lock_status() first, its activity
		 * after): it released as it went, and its lock's own mode
		 * (ShareLock for -s and --limit alike) would name a mode it
		 * never held */
		if (PQgetisnull(r, i, 0))
			continue;
		if (seen++ == 0)
			held_by(lk, query);
		pg_mode_in(query, held, sizeof held);
		/* not dlock's (psql, an application): the lock's own mode */
		if (!held[0])
			snprintf(held, sizeof held, "%s",
				 strcmp(PQgetvalue(r, i, 1), "ShareLock") == 0 ? "s" : "x");
		if (strcmp(ours, "x") == 0 || !held[0] || strcmp(held, "x") == 0 ||
		    strcmp(held, ours) == 0)
			continue;
		pg_mode_words(held, words, sizeof words);
		error_set(err, EX_USAGE, "the lock is held %s", words);
		PQclear(r);
		return -1;
	}
	PQclear(r);
	return 0;
}
