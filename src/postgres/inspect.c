/* inspect.c - PostgreSQL: what other sessions hold (src/engine.h's
 * inspect part): status, from pg_locks and the holders' statements'
 * comments (comment.h), and release --force, which terminates the
 * holders' sessions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "postgres.h"

static char *dup_text(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* A holder or waiter from its pg_locks and pg_stat_activity row. */
static int person(const PGresult *r, int row, char **token, size_t *token_len,
		  char **info, size_t *info_len, long long *fence)
{
	const char *query = PQgetisnull(r, row, 6) ? NULL : PQgetvalue(r, row, 6);
	const char *c = pg_comment_in(query);
	char buf[LOCK_INFO_MAX], tok[LOCK_TOKEN_MAX + 1], f[24];

	*fence = -1;
	if (c) {
		pg_comment_field(c, "holder", buf, sizeof buf);
		pg_comment_field(c, "token", tok, sizeof tok);
		pg_comment_field(c, "fence", f, sizeof f);
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

	pg_mode_in(query, mode, sizeof mode);
	pg_comment_field(pg_comment_in(query), "slot", slot, sizeof slot);
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

	if (!(s->key = pg_key_text(lk->p->prefix, s->name))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	params[0] = s->key;
	s->fence = -1;
	s->ttl_ms = -2;
	s->n_agree = 1;
	if (pg_check_name(s->key, &s->err) < 0) {
		s->state = ST_UNKNOWN;
		return 0;
	}
	r = pg_query(pg->c, pg->url,
		     "SELECT l.pid, l.mode, l.granted, a.usename, host(a.client_addr), "
		     "a.application_name, a.query, "
		     "(extract(epoch FROM a.backend_start) * 1000)::bigint "
		     PG_LOCKS_OF_KEY "ORDER BY l.granted DESC, l.waitstart NULLS LAST, l.pid",
		     params, 1, clock_now_ms() + lk->node_timeout_ms, &dead, err);
	if (!r) {
		s->state = ST_UNKNOWN;
		s->err = *err;
		pg_disconnect(pg);
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

int pg_status(struct lock *lk, struct status_lock *locks, size_t n,
	      struct error *err)
{
	if (pg_connect_once(lk, false, err) < 0)
		return -1;
	pg_say_database(lk);
	for (size_t i = 0; i < n; i++)
		if (one_status(lk, &locks[i], err) < 0)
			return -1;
	return 0;
}

/* release --force: the holders' sessions terminated, which frees their
 * locks; each holder's dlock sees its session end and stops its job. */
int pg_force(struct lock *lk, struct broken_holder **out, size_t *n_out,
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
	if (!s.name || pg_connect_once(lk, false, err) < 0 || one_status(lk, &s, err) < 0 ||
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
		     PG_LOCKS_OF_KEY "AND l.granted AND l.pid <> pg_backend_pid()",
		     params, 1, clock_now_ms() + lk->node_timeout_ms, &dead, err);
	if (!r) {
		char why[sizeof err->msg];

		/* err->msg is "URL: cause" already: the reason after it */
		snprintf(why, sizeof why, "%s", err->msg);
		if (err->exit == EX_NOPERM)
			error_set(err, EX_NOPERM, "%s (ending another role's session takes the pg_signal_backend role; a superuser's, a superuser)",
				  why);
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
			.fence = h->fence > 0 ? h->fence : 0,
		};
		h->token = h->info = NULL;
	}
	*out = b;
	*n_out = s.n_holders;
	status_lock_free(&s);
	return EX_OK;
}
