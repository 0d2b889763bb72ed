/* lock.c - PostgreSQL: a lock's operations (src/engine.h's lock part):
 * the try statement and the wait in the server's queue, the heartbeat,
 * the watch on the idle connection, the release. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include "clock.h"
#include "postgres.h"
#include "waitline.h"

static bool shared(const struct lock *lk)
{
	return lk->p->limit == LOCK_SHARED;
}

/* The comment every later statement of the holder carries. */
int pg_make_comment(struct lock *lk, struct error *err)
{
	struct pg *pg = P(lk);
	char mode[24];
	struct pg_comment_fields f = {
		.mode = mode, .token = lk->token, .fence = lk->fence,
		.slot = pg->slot, .key = pg->key, .info = lk->info,
	};

	pg_mode_word(lk->p->limit, mode, sizeof mode);
	free(pg->comment);
	if (!(pg->comment = pg_comment(&f))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	return 0;
}

/* The statement a holder proves its session with (the heartbeat, and
 * right after the grant): still ours, its comment the holder's. */
static char *beat_sql(const struct pg *pg)
{
	char *sql;

	if (asprintf(&sql, "SELECT pg_backend_pid() = $1::int AND "
		     "current_setting('dlock.session', true) = $2 %s",
		     pg->comment ? pg->comment : "") < 0)
		return NULL;
	return sql;
}

/* A heartbeat's reply: the session is ours still. */
static bool beat_ok(const PGresult *r)
{
	return PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
}

/* ---- acquiring ------------------------------------------------------------- */

static void new_token(struct lock *lk)
{
	if (lk->p->token)
		snprintf(lk->token, sizeof lk->token, "%s", lk->p->token);
	else
		engine_random_hex(lk->token, 16);
}

int pg_begin(struct lock *lk, struct error *err)
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
	const char *params[] = { pg->pid, pg->mark };
	char *sql;

	pg->held = true;
	lk->acquired_ms = start_ms;
	lk->valid_until_ms = start_ms + lk->ttl_ms - (lk->ttl_ms / 100 + 2);
	snprintf(lk->fence, sizeof lk->fence, "%s", lk->p->no_fence ? "" : fence);
	if (pg_make_comment(lk, err) < 0)
		return LOCK_FAILED;
	if (!(sql = beat_sql(pg))) {
		error_set(err, EX_OSERR, "out of memory");
		return LOCK_FAILED;
	}
	if (pg_send(pg->c, pg->url, sql, params, 2, err) == 0)
		pg->beat_pending = true;
	free(sql);
	return LOCK_ACQUIRED;
}

/* A try, after the check (c: nothing taken or set when it fails); on a
 * new session its settings too; the lock if free, and then the fence,
 * written after the grant (f reads l); the backend, and whether it is a
 * standby. --limit N: the first free slot, in one statement (CASE stops
 * at the first WHEN that is true). A direct connection's statements
 * read neither pg_locks nor pg_stat_activity: a new backend takes longer
 * to load their catalogs than the rest of the statement. Columns: the
 * check, got, fence, backend, standby, slot. */
static char *try_sql(struct lock *lk, enum pg_guard g, int *n_params)
{
	char with[1024] = "", what[200], call[160], mode[24], *sql, *cases = NULL;
	const char *check = pg_guard_sql(g, n_params);
	int r;

	if (!P(lk)->checked)
		pg_settings_sql(lk, with, sizeof with);
	pg_mode_word(lk->p->limit, mode, sizeof mode);
	if (lk->p->limit > 0) {
		/* K shared, then the first free slot; no slot: K given back
		 * (the last WHEN, reached only then) */
		size_t cap = (size_t)lk->p->limit * 160 + 256, len = 0;

		if (!(cases = malloc(cap)))
			return NULL;
		pg_call(call, sizeof call, "pg_try_advisory_lock", true, 0);
		len += (size_t)snprintf(cases, cap, "CASE WHEN %s THEN CASE", call);
		for (long i = 1; i <= lk->p->limit; i++) {
			pg_call(call, sizeof call, "pg_try_advisory_lock", false, i);
			len += (size_t)snprintf(cases + len, cap - len, " WHEN %s THEN %ld",
						call, i);
		}
		pg_call(call, sizeof call, "pg_advisory_unlock", true, 0);
		snprintf(cases + len, cap - len, " WHEN %s THEN 0 ELSE 0 END ELSE 0 END", call);
	} else {
		pg_call(call, sizeof call, "pg_try_advisory_lock", shared(lk), 0);
		snprintf(what, sizeof what, "CASE WHEN %s THEN 1 ELSE 0 END", call);
	}
	/* --no-fence: nothing written, no commit to wait for */
	r = asprintf(&sql,
		     PG_TRY_COMMENT " WITH c AS MATERIALIZED (SELECT %s AS ok), %s"
		     "l AS MATERIALIZED (SELECT CASE WHEN c.ok AND NOT pg_is_in_recovery() "
		     "THEN %s ELSE 0 END AS slot FROM c)%s "
		     "SELECT c.ok, l.slot > 0, %s, pg_backend_pid(), pg_is_in_recovery(), l.slot%s "
		     "FROM c, l",
		     mode, check, with, cases ? cases : what,
		     lk->p->no_fence ? "" : ", " PG_FENCE_CTE,
		     lk->p->no_fence ? "''" : "(SELECT fence FROM f)::text",
		     with[0] ? ", (SELECT count(*) FROM s)" : "");
	free(cases);
	return r < 0 ? NULL : sql;
}

/* The blocking call: the fence once it returns, the lock granted. */
static int send_wait(struct lock *lk, struct error *err)
{
	struct pg *pg = P(lk);
	const char *params[] = { pg->key, pg->pid, pg->mark };
	char *sql = NULL, *who, mode[24], call[64];
	int r, n;

	pg_mode_word(lk->p->limit, mode, sizeof mode);
	pg_call(call, sizeof call, "pg_advisory_lock", shared(lk), 0);
	/* the holder's comment (no fence yet), first: status names the
	 * waiter from it, as it names a holder */
	who = pg_comment(&(struct pg_comment_fields){
		.mode = mode, .token = lk->token, .fence = "", .key = pg->key,
		.info = lk->info,
	});
	if (!who ||
	    asprintf(&sql, PG_TRY_COMMENT " %s WITH c AS MATERIALIZED (SELECT %s AS ok), "
		     "l AS MATERIALIZED (SELECT CASE WHEN c.ok THEN "
		     "(SELECT 1 FROM (SELECT %s) x) ELSE 0 END AS slot "
		     "FROM c)%s SELECT c.ok, %s FROM c, l", mode, who,
		     pg_guard_sql(GUARD_OURS, &n),
		     call, lk->p->no_fence ? "" : ", " PG_FENCE_CTE,
		     lk->p->no_fence ? "''" : "(SELECT fence FROM f)::text") < 0) {
		free(who);
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	free(who);
	r = pg_send(pg->c, pg->url, sql, params, n, err);
	free(sql);
	if (r == 0)
		pg->waiting = true;
	return r;
}

/* Whether holders may be in another mode than ours beside us: -s and
 * --limit both take the key shared, so a shared grant must look at the
 * others (pg_look_at_holders(): 64 if they hold in another mode). An
 * exclusive grant has the key alone: nobody to look at, and the holder
 * it waited on (the wait line's) is gone. Not looking saves the
 * hand-off a round trip, and a new backend the loading of pg_locks'
 * and pg_stat_activity's catalogs. */
static bool shared_modes(const struct lock *lk)
{
	return lk->p->limit != 0;
}

/* The blocking call's reply has come (or the connection broke). A wait
 * cancelled by somebody else (pg_cancel_backend(), a DBA's Ctrl-C in
 * psql on our backend: 57014; dlock never cancels, it closes, and its
 * session sets statement_timeout to 0) took nothing the session keeps
 * past its close: it is asked again at once, as after a terminated
 * session, in the server's queue anew. */
static enum lock_result wait_over(struct lock *lk, int64_t *retry_ms, struct error *err)
{
	struct pg *pg = P(lk);
	int64_t now_ms = clock_now_ms();
	bool dead;
	struct pg_failure why;
	PGresult *r = pg_result_why(pg->c, pg->url, now_ms + lk->node_timeout_ms, &dead,
				    &why, err);
	enum lock_result res = LOCK_FAILED;

	pg->waiting = false;
	if (!r && strcmp(why.state, "57014") == 0) {
		pg_disconnect(pg);
		*err = (struct error){ 0 };
		*retry_ms = 0;
		return LOCK_HELD;
	}
	if (!r)
		pg_fence_failed(lk, &why, err);
	else if (PQntuples(r) != 1 || PQnfields(r) != 2)
		error_set(err, EX_SOFTWARE, "%s: unexpected reply to pg_advisory_lock",
			  pg->url->text);
	else if (strcmp(PQgetvalue(r, 0, 0), "t") != 0)
		pg_pooler_error(lk, err);	/* nothing was taken */
	else if (!shared_modes(lk) || pg_look_at_holders(lk, err) == 0)
		res = granted(lk, PQgetvalue(r, 0, 1), now_ms, err);
	PQclear(r);
	if (res != LOCK_ACQUIRED)
		pg_disconnect(pg);
	return res;
}


/* Through a pooler, the lock just taken: the backend's next transaction
 * is ours too (GUARD_POOLED saw nobody's before it, this sees nobody's
 * after), before the job starts; else it is given back (on our backend,
 * whatever the pooler does meanwhile: pg_release()) and refused, 69. */
static bool still_ours(struct lock *lk, struct error *err)
{
	struct pg *pg = P(lk);
	struct release_how how = { .job = false, .exit_status = LOCK_EXIT_UNKNOWN };
	struct error ignored = { 0 };
	bool left;
	int ours = pg_vxid_next(pg->vxid, pg->vxid, sizeof pg->vxid) < 0 ? 0 :
		   pg_next_is_ours(lk, &left, err);

	if (ours == 1)
		return true;
	pg->held = true;
	pg->stolen = true;
	pg_release(lk, &how, &ignored);
	if (ours == 0)
		pg_pooler_error(lk, err);
	return false;
}

/* One try statement: what it checked, when it went, what came back. */
struct attempt {
	enum pg_guard g;	/* what the statement checks first */
	int64_t start_ms;	/* when it was sent: the loss clock's start */
	bool created;		/* the counter's table made during this try */
	PGresult *r;		/* its reply: one row of six columns */
};

/* The try statement sent and its reply in a->r: 1; 0, to send it again
 * (the counter's table was missing: made now, nothing taken); -1 with
 * err (the session closed, but for want of memory). */
static int send_try(struct lock *lk, struct attempt *a, struct error *err)
{
	struct pg *pg = P(lk);
	const char *params[] = { pg->key, pg->pid, pg->mark, pg->vxid };
	struct pg_failure why;
	int n_params;
	bool dead;
	char *sql;

	a->g = pg_guard_of(pg);
	if (!(sql = try_sql(lk, a->g, &n_params))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	a->start_ms = clock_now_ms();
	a->r = pg_query_why(pg->c, pg->url, sql, params, n_params,
			    a->start_ms + lk->node_timeout_ms, &dead, &why, err);
	free(sql);
	if (!a->r && strcmp(why.state, "42P01") == 0 && !lk->p->no_fence && !a->created) {
		/* no counter table yet (the statement stopped before it ran:
		 * nothing taken); made once, then the try again */
		pg_disconnect(pg);
		a->created = true;
		return pg_create_fences(lk, err) < 0 ? -1 : 0;
	}
	if (a->r && PQntuples(a->r) == 1 && PQnfields(a->r) >= 6)
		return 1;
	if (a->r)
		error_set(err, EX_SOFTWARE, "%s: unexpected reply to the lock statement",
			  pg->url->text);
	else
		pg_fence_failed(lk, &why, err);
	PQclear(a->r);
	a->r = NULL;
	pg_disconnect(pg);
	return -1;
}

/* The statement's check failed: nothing taken, nothing set, on a
 * pooler's backend (the first statement's), or the check saw the
 * session shared. 0: send it again (a declared pooler passed its
 * check); -1 with err (the session closed). */
static int check_failed(struct lock *lk, struct attempt *a, struct error *err)
{
	struct pg *pg = P(lk);
	char first_pid[16];

	snprintf(first_pid, sizeof first_pid, "%s", PQgetvalue(a->r, 0, 3));
	PQclear(a->r);
	a->r = NULL;
	if (a->g == GUARD_DIRECT && !pg->url->session_pooling)
		pg_undeclared_pooler(lk, first_pid, err);
	else if (a->g == GUARD_DIRECT && pg_pooler_check(lk, first_pid, err) == 0)
		return 0;
	else if (a->g != GUARD_DIRECT)
		pg_pooler_error(lk, err);
	pg_disconnect(pg);
	return -1;
}

/* The try statement until one passes its check: 0, its reply in a->r,
 * or -1 with err. */
static int ask(struct lock *lk, struct attempt *a, struct error *err)
{
	for (;;) {
		int sent = send_try(lk, a, err);

		if (sent < 0)
			return -1;
		if (sent == 0)
			continue;
		if (strcmp(PQgetvalue(a->r, 0, 0), "t") == 0)
			return 0;
		if (check_failed(lk, a, err) < 0)
			return -1;
	}
}

/* The reply of a statement that passed its check: the session is ours,
 * on the backend it names. LOCK_ACQUIRED; LOCK_HELD, not taken; or
 * LOCK_FAILED with err, the session closed (a standby, a pooler that
 * shared the session, holders in a mode ours cannot share). */
static enum lock_result took(struct lock *lk, struct attempt *a, struct error *err)
{
	struct pg *pg = P(lk);
	PGresult *r = a->r;
	enum lock_result res;
	bool got;

	pg->checked = true;
	snprintf(pg->pid, sizeof pg->pid, "%s", PQgetvalue(r, 0, 3));
	got = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	if (strcmp(PQgetvalue(r, 0, 4), "t") == 0) {
		error_set(err, EX_UNAVAILABLE, "%s: a standby (in recovery): its advisory locks are not the primary's; connect to the primary",
			  pg->url->text);
		PQclear(r);
		pg_disconnect(pg);
		return LOCK_FAILED;
	}
	pg->slot = got && lk->p->limit > 0 ? atol(PQgetvalue(r, 0, 5)) : 0;
	if (!got) {
		PQclear(r);
		return LOCK_HELD;
	}
	if (a->g == GUARD_POOLED && !still_ours(lk, err)) {
		PQclear(r);
		return LOCK_FAILED;
	}
	/* shared: the others may hold in another mode (then the session,
	 * and what it took, goes) */
	res = shared_modes(lk) && pg_look_at_holders(lk, err) < 0 ? LOCK_FAILED :
	      granted(lk, PQgetvalue(r, 0, 2), a->start_ms, err);
	PQclear(r);
	if (res != LOCK_ACQUIRED)
		pg_disconnect(pg);
	return res;
}

/* Someone else has it: who, for the wait line and --verbose (and a mode
 * ours cannot share: 64); with -w, a wait inside the server, in its
 * queue, or with dlock_wait=poll the session closed until the next try.
 * LOCK_HELD, or LOCK_FAILED with err. */
static enum lock_result refused(struct lock *lk, int64_t *retry_ms, struct error *err)
{
	struct pg *pg = P(lk);

	if (pg->hidden_holder[0]) {
		/* waiting would wait on our own caller, for ever without -w */
		error_set(err, EX_USAGE, "%s: DLOCK_TOKEN names this lock, but its holder is a session of role \"%s\" whose statements this role cannot read: a nested dlock cannot tell whether it is its caller's, and would wait on it; run the nested dlock as the same role, or grant this one pg_read_all_stats",
			  pg->url->text, pg->hidden_holder);
		pg_disconnect(pg);
		return LOCK_FAILED;
	}
	lk->refused = true;
	/* the look at the holder costs a new backend a statement
	 * (pg_lock_status(), about 1 ms of its CPU): only for somebody who
	 * reads it */
	if (lk->p->limit != 0 || lk->p->verbose ||
	    (lk->p->waits && waitline_holder_shown(lk->p->verbose))) {
		struct error e = { 0 };

		if (pg_look_at_holders(lk, &e) < 0 && (!pg->c || e.exit == EX_USAGE)) {
			*err = e;
			return LOCK_FAILED;
		}
	}
	if (!pg->c)
		return LOCK_FAILED;
	/* dlock_wait=poll: no backend kept between tries; the next comes
	 * at the core's growing pace (lk->waits_polling) */
	if (pg->url->poll_wait) {
		pg_disconnect(pg);
		return LOCK_HELD;
	}
	/* --limit has no "any of these" to wait on, and asks again at the
	 * waiter's pace. */
	if (lk->p->waits && lk->p->limit <= 0) {
		if (send_wait(lk, err) < 0) {
			pg_disconnect(pg);
			return LOCK_FAILED;
		}
		*retry_ms = 60000;
	}
	return LOCK_HELD;
}

/* A blocking wait's reply, or else the try statement (after re-entry,
 * for a nested dlock): see the functions above. */
enum lock_result pg_try(struct lock *lk, int64_t *retry_ms, struct error *err)
{
	struct pg *pg = P(lk);
	struct attempt a = { 0 };
	enum lock_result res;

	lk->busy = false;	/* pg_connect_once() says whether the server is full */
	lk->full_at_a_cost = false;
	if (pg->waiting) {
		if (PQconsumeInput(pg->c) && PQisBusy(pg->c)) {
			*retry_ms = 60000;	/* the reply wakes us */
			return LOCK_HELD;
		}
		return wait_over(lk, retry_ms, err);
	}
	if (pg_connect_once(lk, true, err) < 0)
		return LOCK_FAILED;
	if (lk->p->verbose)
		pg_say_database(lk);
	if (lk->reentry_token) {
		int in = pg_reentered(lk, err);

		if (in != 0)
			return in > 0 ? LOCK_REENTERED : LOCK_FAILED;
	}
	if (ask(lk, &a, err) < 0)
		return LOCK_FAILED;
	res = took(lk, &a, err);
	return res == LOCK_HELD ? refused(lk, retry_ms, err) : res;
}

size_t pg_wait_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct pg *pg = P(lk);

	if (!pg->waiting || max == 0)
		return 0;
	pfd[0] = (struct pollfd){ PQsocket(pg->c), POLLIN, 0 };
	return 1;
}

bool pg_wait_events(struct lock *lk, const struct pollfd *pfd, size_t n)
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
void pg_end_wait(struct lock *lk, enum lock_result r)
{
	struct pg *pg = P(lk);

	if (r == LOCK_ACQUIRED || r == LOCK_REENTERED)
		return;
	pg_disconnect(pg);
}

/* ---- holding --------------------------------------------------------------- */

/* The reply to what was sent before (the heartbeat sent after the
 * grant, one that timed out), read before the next statement: 0, -1 not
 * yet, -2 the session ended, -3 it is not ours alone (pg->stolen). */
int pg_drain_beat(struct lock *lk, int64_t deadline_ms, struct error *err)
{
	struct pg *pg = P(lk);
	bool dead, ours;
	PGresult *r;

	if (!pg->beat_pending)
		return pg->stolen ? -3 : 0;
	r = pg_result(pg->c, pg->url, deadline_ms, &dead, err);
	if (!r && !dead)
		return -1;	/* not yet: still pending */
	pg->beat_pending = false;
	ours = r && beat_ok(r);
	PQclear(r);
	if (!r)
		return -2;
	pg->stolen |= !ours;
	return ours ? 0 : -3;
}

/* The heartbeat: the session answers, so its locks are still ours (only
 * the session itself can release them). */
enum extend_result pg_extend(struct lock *lk, int64_t timeout_ms,
			     struct error *err)
{
	struct pg *pg = P(lk);
	const char *params[] = { pg->pid, pg->mark };
	int64_t start_ms = clock_now_ms(), deadline_ms = start_ms + timeout_ms;
	char *sql;
	bool dead, ours;
	PGresult *r;
	int d;

	if (!pg->c || !pg->held) {
		error_set(err, EX_TEMPFAIL, "%s: the session holding the lock is gone",
			  pg->url->text);
		return EXTEND_LOST;
	}
	if ((d = pg_drain_beat(lk, deadline_ms, err)) == -1)
		return EXTEND_FAILED;
	if (d == -2)
		goto lost;
	if (d == -3)
		goto stolen;
	if (!(sql = beat_sql(pg))) {
		error_set(err, EX_OSERR, "out of memory");
		return EXTEND_FAILED;
	}
	r = pg_query(pg->c, pg->url, sql, params, 2, deadline_ms, &dead, err);
	free(sql);
	if (r) {
		ours = beat_ok(r);
		PQclear(r);
		if (!ours)
			goto stolen;
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
stolen:
	/* Our statement ran on another backend, or on ours after another
	 * client changed dlock's mark: a pooler shares the session, and
	 * whatever holds the lock is not ours to vouch for. */
	pg->held = false;
	pg->stolen = true;
	error_set(err, EX_TEMPFAIL, "%s: the session holding the lock is no longer ours alone (its backend or dlock's mark on it changed: a pooler in transaction mode?)",
		  pg->url->text);
	return EXTEND_LOST;
}

/* --min-hold kept by dlock after the job: the comment says the command
 * finished (lk->info), from this heartbeat on. */
int pg_finished(struct lock *lk, struct error *err)
{
	if (pg_make_comment(lk, err) < 0)
		return -1;
	return pg_extend(lk, lk->node_timeout_ms, err) == EXTEND_OK ? 0 : -1;
}

/* The idle lock connection: readable when the server says something
 * unasked (it ended the session: pg_terminate_backend, a shutdown) or
 * the reply to the comment arrives. */
size_t pg_watch_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct pg *pg = P(lk);

	if (!pg->c || !pg->held || max == 0)
		return 0;
	pfd[0] = (struct pollfd){ PQsocket(pg->c), POLLIN, 0 };
	return 1;
}

bool pg_watch_events(struct lock *lk, const struct pollfd *pfd, size_t n,
		     char *note, size_t notelen)
{
	struct pg *pg = P(lk);

	if (!pfd[0].revents)
		return false;
	if (PQconsumeInput(pg->c) && PQstatus(pg->c) == CONNECTION_OK) {
		/* the heartbeat's reply, or a notice: read; a heartbeat that
		 * found the session not ours asks for a round now */
		while (pg->beat_pending && !PQisBusy(pg->c)) {
			PGresult *r = PQgetResult(pg->c);

			if (!r)
				pg->beat_pending = false;
			else if (PQresultStatus(r) == PGRES_TUPLES_OK && !beat_ok(r))
				pg->stolen = true;
			PQclear(r);
		}
		if (pg->stolen) {
			snprintf(note, notelen, "%s: the session holding the lock is no longer ours alone",
				 pg->url->text);
			return true;
		}
		if (!(pfd[0].revents & (POLLHUP | POLLERR)))
			return false;
	}
	snprintf(note, notelen, "%s: the server ended the session holding the lock",
		 pg->url->text);
	return true;
}

size_t pg_fds(const struct lock *lk, int *out, size_t max)
{
	const struct pg *pg = P(lk);

	if (!pg->c || max == 0 || PQsocket(pg->c) < 0)
		return 0;
	out[0] = PQsocket(pg->c);
	return 1;
}

/* pg_advisory_unlock says whether the lock was still ours; then the
 * connection goes, and anything else the session held with it. */
int pg_release(struct lock *lk, const struct release_how *how,
	       struct error *err)
{
	struct pg *pg = P(lk);
	const char *params[] = { pg->key, pg->pid, pg->mark };
	int64_t deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	char *sql = NULL, unlock[320], slot[160], key[64];
	bool dead = true, held = pg->held, answered = false, pooled;
	PGresult *r = NULL;
	int d = -2;

	lk->lost_at_release = false;
	/* --limit: the slot, and K shared */
	if (pg->slot > 0) {
		pg_call(slot, sizeof slot, "pg_advisory_unlock", false, pg->slot);
		pg_call(key, sizeof key, "pg_advisory_unlock", true, 0);
		snprintf(unlock, sizeof unlock, "%s AND %s", slot, key);
	} else {
		pg_call(unlock, sizeof unlock, "pg_advisory_unlock", shared(lk), 0);
	}
	/* a reply still to read (the heartbeat sent after the grant): a
	 * session that ended meanwhile is found there (-2); the unlock
	 * only on our session (NULL elsewhere). Through a pooler, the
	 * session's settings (pg_settings_sql()) go back to the role's
	 * too; our mark (which pg_settings does not list) says "released",
	 * so that the next dlock on this backend refuses a pooler that does
	 * not reset sessions (pg_pooler_check()). A session found shared
	 * (-3) may still have our lock on our backend: asked again until a
	 * statement lands there, within the node timeout. */
	pooled = pg->c && atoi(pg->pid) != PQbackendPID(pg->c);
	if (pg->c && ((d = pg_drain_beat(lk, deadline_ms, err)) == 0 || (d == -3 && pooled)) &&
	    asprintf(&sql, "WITH c AS MATERIALIZED (SELECT pg_backend_pid() = $2::int AND "
		     "current_setting('dlock.session', true) = $3 AS ok)%s "
		     "SELECT CASE WHEN c.ok THEN %s END%s FROM c %s",
		     pooled ? ", r AS MATERIALIZED (SELECT set_config('dlock.session', 'released', false) "
			      "FROM c WHERE c.ok UNION ALL SELECT set_config(name, reset_val, false) "
			      "FROM pg_settings, c WHERE c.ok AND source = 'session')" : "",
		     unlock, pooled ? ", (SELECT count(*) FROM r)" : "",
		     pg->comment ? pg->comment : "") >= 0) {
		for (;;) {
			r = pg_query(pg->c, pg->url, sql, params, 3, deadline_ms, &dead, err);
			answered = r || dead;
			if (!r || !pooled || !PQgetisnull(r, 0, 0) ||
			    clock_now_ms() + 10 >= deadline_ms)
				break;
			PQclear(r);
			r = NULL;
			poll(NULL, 0, 10);
		}
		free(sql);
	}
	answered |= d == -2 || d == -3;
	pg_disconnect(pg);
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

/* The server hashes a lock's name as text: one that is not UTF-8 would
 * be its encoding error (70) after connecting; a setting to fix (64)
 * before. */
int pg_check_name(const char *key, struct error *err)
{
	char why[160];

	if (pg_name_check(key, why, sizeof why) == 0)
		return 0;
	error_set(err, EX_USAGE, "%s", why);
	return -1;
}

int pg_open(struct lock *lk, struct error *err)
{
	struct pg *pg = engine_open_state(lk, sizeof *pg, err);

	if (!pg)
		return -1;
	pg->url = lk->p->servers;
	lk->waits_polling = pg->url->poll_wait;
	if (lk->p->fair && pg->url->poll_wait) {
		error_set(err, EX_USAGE, "PostgreSQL cannot --fair with dlock_wait=poll: a waiter keeps its place in the server's queue only on a connection it holds (dlock_wait=server)");
		return -1;
	}
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
	if (!(pg->key = pg_key_text(lk->p->prefix, lk->p->name))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	lk->key = pg->key;
	return pg_check_name(pg->key, err);
}

void pg_close(struct lock *lk)
{
	struct pg *pg = P(lk);

	pg_disconnect(pg);
	free(pg->key);
	free(pg->comment);
	engine_close_state(lk);
}
