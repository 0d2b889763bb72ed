/* inspect.c - MySQL: status, the locks held, history, release --force.
 *
 * Who holds a lock is the server's to say: IS_USED_LOCK(name) is the
 * holder's connection id. The dlock_locks row names a dlock holder only
 * while its conn is that id (a row outlives its holder); otherwise the
 * holder is another client, shown from information_schema.PROCESSLIST
 * (its user, host and idle time: every account sees its own sessions
 * there, PROCESS shows all). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <mysqld_error.h>
#include "clock.h"
#include "mysql.h"
#include "show.h"

static long long num(const char *s)
{
	return s ? strtoll(s, NULL, 10) : -1;
}

static int connect_to(struct lock *lk, struct my_conn *c, struct error *err)
{
	my_init(c, lk->p->servers, lk->p->password, lk->p->tls);
	return my_connect(c, clock_now_ms() + lk->node_timeout_ms, err);
}

/* What the server says of one lock. */
struct found {
	long long id;			/* the holder's connection; -1 free */
	const char *user, *host, *command;	/* PROCESSLIST's; NULL */
	long long idle_ms;		/* -1: not known */
	bool row;			/* dlock_locks has its row */
	long long fence, conn, ttl_ms;
	const char *token, *holder;
	size_t token_len, holder_len;
	long long n_waiting;
	unsigned err_no;		/* the batch's failure, if it stopped
					 * before the row */
};

/* Asks for one lock (n: its names): its holder with PROCESSLIST's words,
 * how many wait, the row (unless there is no database). Fills f from c's
 * results, which stay c's until my_done(). Returns 0, or -1 with err. */
static int ask(struct lock *lk, struct my_conn *c, const struct my_names *n,
	       struct found *f, struct error *err)
{
	const struct my_url *u = lk->p->servers;
	char pattern_lit[MY_PATTERN_LIT];
	char *sql = NULL;
	size_t len;
	int r;

	/* dlock's waiters, as they wrote their GET_LOCK */
	my_waiter_pattern(n, pattern_lit);
	/* no database: no row to read; MySQL's PROCESSLIST has no TIME_MS */
	if (asprintf(&sql, "SELECT IS_USED_LOCK(%s), p.USER, p.HOST, %s, p.COMMAND "
		     "FROM (SELECT 1) AS d LEFT JOIN information_schema.PROCESSLIST AS p "
		     "ON p.ID = IS_USED_LOCK(%s);"
		     "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
		     "WHERE STATE = 'User lock' AND LOCATE(%s, INFO) > 0%s%s",
		     n->lit, c->mariadb ? "p.TIME_MS" : "p.TIME * 1000", n->lit, pattern_lit,
		     u->database[0] ? ";SELECT fence, conn, token, holder, ttl_ms "
				      "FROM dlock_locks WHERE name = " : "",
		     u->database[0] ? n->rowkey : "") < 0) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	r = my_query(c, sql, clock_now_ms() + lk->node_timeout_ms, err);
	free(sql);
	if (r < 0)
		return -1;
	if (c->err_no && c->err_at < 2) {
		my_error(c, "asking who holds the lock", err);
		return -1;
	}
	*f = (struct found){ .id = -1, .idle_ms = -1, .fence = -1, .err_no = c->err_no };
	if (!my_int(c, 0, 0, &f->id))
		f->id = -1;
	f->user = my_field(c, 0, 1, &len);
	f->host = my_field(c, 0, 2, &len);
	if (my_field(c, 0, 3, &len))
		f->idle_ms = (long long)strtod(my_field(c, 0, 3, &len), NULL);
	f->command = my_field(c, 0, 4, &len);
	if (!my_int(c, 1, 0, &f->n_waiting))
		f->n_waiting = 0;
	if (!c->err_no && u->database[0] && my_field(c, 2, 0, &len)) {
		f->row = true;
		f->fence = num(my_field(c, 2, 0, &len));
		f->conn = num(my_field(c, 2, 1, &len));
		f->token = my_field(c, 2, 2, &f->token_len);
		f->holder = my_field(c, 2, 3, &f->holder_len);
		f->ttl_ms = num(my_field(c, 2, 4, &len));
		if (!f->token || !f->holder)
			f->row = false;
	}
	return 0;
}

/* The dlock holder's info with its fence after it (show.h), or NULL for
 * another client. */
static char *info_of(const struct found *f)
{
	char *info = NULL;

	if (!f->row || f->conn != f->id)
		return NULL;
	/* --min-hold kept by dlock after the job: the holder wrote its
	 * info whole, fence and finished (engine.c's finished()) */
	if (my_info_whole(f->holder, f->holder_len))
		return engine_dup(f->holder, f->holder_len);
	if (asprintf(&info, "%.*s\t%lld", (int)f->holder_len, f->holder, f->fence) < 0)
		return NULL;
	return info;
}

/* Another client's lock: its connection, and who that is. */
static char *foreign_of(const struct found *f)
{
	char *s = NULL;

	if (f->user && f->host) {
		if (asprintf(&s, "connection %lld (%s@%s)", f->id, f->user, f->host) < 0)
			s = NULL;
	} else if (asprintf(&s, "connection %lld", f->id) < 0) {
		s = NULL;
	}
	return s;
}

/* The time before the server drops an idle dlock holder: its
 * wait_timeout (the TTL, whole seconds) less the time it has been idle. */
static int64_t left_of(const struct found *f)
{
	int64_t limit_ms;

	if (!f->row || f->conn != f->id || f->ttl_ms < 0)
		return -1;
	limit_ms = (f->ttl_ms + 999) / 1000 * 1000;
	if (f->command && strcmp(f->command, "Sleep") == 0 && f->idle_ms >= 0)
		return limit_ms > f->idle_ms ? limit_ms - f->idle_ms : 0;
	return limit_ms;
}

static int status_one(struct lock *lk, struct my_conn *c, struct status_lock *s,
		      struct error *err)
{
	struct my_names names;
	struct status_holder *h;
	struct found f;
	char note[48];

	if (my_names(&names, lk->p->servers, lk->p->prefix, s->name, err) < 0)
		return -1;
	my_names_rowkey(&names, c->mariadb);
	if (!(s->key = strdup(names.name))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	snprintf(s->type, sizeof s->type, "user lock");
	if (ask(lk, c, &names, &f, &s->err) < 0) {
		s->state = ST_UNKNOWN;
		if (c->m)
			return 0;
		*err = s->err;	/* the connection is gone: no more */
		return -1;
	}
	s->n_agree = 1;
	s->fence = f.row ? f.fence : -1;
	s->n_waiting = f.n_waiting;
	if (f.id < 0) {
		s->state = ST_FREE;
		s->ttl_ms = -2;
		my_done(c);
		return 0;
	}
	s->state = ST_HELD;
	if (!(s->holders = calloc(1, sizeof *s->holders))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	s->n_holders = 1;
	h = &s->holders[0];
	h->n_servers = 1;
	h->slot = -1;
	h->info = info_of(&f);
	if (h->info) {
		h->token = engine_dup(f.token, f.token_len);
		h->token_len = f.token_len;
		h->info_len = strlen(h->info);
		h->fence = f.fence;
		h->left_ms = left_of(&f);
		s->ttl_ms = h->left_ms;
		snprintf(note, sizeof note, "connection %lld", f.id);
		h->note = strdup(note);
	} else {
		s->foreign = true;
		h->token = foreign_of(&f);
		h->token_len = h->token ? strlen(h->token) : 0;
		h->fence = -1;
		h->left_ms = -1;	/* as long as its session lives */
		s->ttl_ms = -2;
	}
	my_done(c);
	if (!h->token) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	return 0;
}

int my_status(struct lock *lk, struct status_lock *locks, size_t n,
	      struct error *err)
{
	struct my_conn c;

	if (connect_to(lk, &c, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (status_one(lk, &c, &locks[i], err) < 0) {
			my_conn_close(&c);
			return -1;
		}
	my_conn_close(&c);
	return 0;
}

/* The answer to a read of one of dlock's tables (what: for the error) on
 * c: its result (*res, NULL for none) and rows, and a zeroed array of size
 * bytes a row for the caller to fill. NULL when the table is not there
 * (*r 0: no dlock ever wrote it), or with err (*r -1). */
static void *table_rows(struct my_conn *c, const char *what, size_t size,
			MYSQL_RES **res, size_t *rows, int *r, struct error *err)
{
	void *array;

	*r = -1;
	if (c->err_no == ER_NO_SUCH_TABLE) {
		*r = 0;
		return NULL;
	}
	if (c->err_no) {
		my_error(c, what, err);
		return NULL;
	}
	*res = c->results[0].res;
	*rows = *res ? (size_t)mysql_num_rows(*res) : 0;
	if (!(array = calloc(*rows ? *rows : 1, size)))
		error_set(err, EX_OSERR, "out of memory");
	return array;
}

int my_list(struct lock *lk, char ***names, size_t *n, struct error *err)
{
	struct mylock *m = M(lk);
	const char *prefix = lk->p->prefix;
	size_t plen = strlen(prefix), rows;
	char *hex = malloc(2 * plen + 4), *sql = NULL;
	struct my_conn c;
	MYSQL_RES *res;
	int r = -1;

	*names = NULL;
	*n = 0;
	if (!m->u->database[0]) {
		free(hex);
		error_set(err, EX_USAGE, "%s: no database in the URL, where dlock_locks would list the locks: name them (dlock status KEY...)",
			  m->u->text);
		return -1;
	}
	if (!hex) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	my_hex_literal(prefix, plen, hex);
	if (asprintf(&sql, "SELECT lock_name FROM dlock_locks WHERE IS_USED_LOCK(name) IS NOT NULL "
		     "AND LEFT(lock_name, %zu) = %s ORDER BY lock_name", plen, hex) < 0) {
		free(hex);
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	free(hex);
	if (connect_to(lk, &c, err) < 0 ||
	    my_query(&c, sql, clock_now_ms() + lk->node_timeout_ms, err) < 0)
		goto out;
	*names = table_rows(&c, "listing dlock_locks", sizeof **names, &res, &rows,
			    &r, err);
	if (!*names)
		goto out;	/* r 0: no dlock ever held a lock here */
	for (size_t i = 0; i < rows; i++) {
		MYSQL_ROW row = mysql_fetch_row(res);
		unsigned long *len = mysql_fetch_lengths(res);

		if (!row || !row[0] || len[0] < plen)
			continue;
		if (!((*names)[*n] = engine_dup(row[0] + plen, len[0] - plen))) {
			error_set(err, EX_OSERR, "out of memory");
			goto out;
		}
		(*n)++;
	}
	r = 0;
out:
	if (r < 0 && *names) {
		for (size_t i = 0; i < *n; i++)
			free((*names)[i]);
		free(*names);
		*names = NULL;
		*n = 0;
	}
	free(sql);
	my_conn_close(&c);
	return r;
}

static int kind_of(const char *s)
{
	static const char *const kinds[] = {
		"acquired", "broken", "released", "lost", "killed",
	};

	for (int k = 0; s && k < 5; k++)
		if (strcmp(s, kinds[k]) == 0)
			return k;
	return -1;
}

int my_history(struct lock *lk, long count, struct history_report *out,
	       struct error *err)
{
	struct mylock *m = M(lk);
	struct my_conn c;
	MYSQL_RES *res;
	char *sql = NULL;
	size_t rows;
	int r = -1;

	*out = (struct history_report){ .n_servers = 1 };
	if (!m->u->database[0]) {
		error_set(err, EX_USAGE, "%s: no database in the URL, where dlock_history would be",
			  m->u->text);
		return -1;
	}
	if (connect_to(lk, &c, err) < 0)
		goto out;
	/* the row key is the server's kind's */
	my_names_rowkey(&m->names, c.mariadb);
	if (asprintf(&sql, "SELECT id, at_ms, event, token, holder, by_info, fence, exit_status, held_ms "
		     "FROM dlock_history WHERE name = %s ORDER BY id DESC LIMIT %ld",
		     m->names.rowkey, count > 0 ? count : 10) < 0) {
		sql = NULL;
		error_set(err, EX_OSERR, "out of memory");
		goto out;
	}
	if (my_query(&c, sql, clock_now_ms() + lk->node_timeout_ms, err) < 0)
		goto out;
	out->n_ok = 1;
	out->events = table_rows(&c, "reading dlock_history", sizeof *out->events,
				 &res, &rows, &r, err);
	if (!out->events)
		goto out;
	for (size_t i = 0; i < rows; i++) {
		MYSQL_ROW row = mysql_fetch_row(res);
		unsigned long *len = mysql_fetch_lengths(res);
		struct history_event *ev = &out->events[out->n_events];
		int kind;

		if (!row || !row[0] || !row[1] || (kind = kind_of(row[2])) < 0)
			continue;
		*ev = (struct history_event){
			.kind = (enum history_kind)kind,
			.time_ms = num(row[1]),
			.id = engine_dup(row[0], len[0]),
			.token = engine_dup(row[3] ? row[3] : "", row[3] ? len[3] : 0),
			.token_len = row[3] ? len[3] : 0,
			.holder = row[4] && len[4] ? engine_dup(row[4], len[4]) : NULL,
			.holder_len = row[4] ? len[4] : 0,
			.by = row[5] && len[5] ? engine_dup(row[5], len[5]) : NULL,
			.by_len = row[5] ? len[5] : 0,
			.fence = num(row[6]),
			.exit = num(row[7]),
			.held_ms = num(row[8]),
			.n_servers = 1,
		};
		out->n_events++;
		if (!ev->id || !ev->token) {
			error_set(err, EX_OSERR, "out of memory");
			goto out;
		}
	}
	r = 0;
out:
	free(sql);
	my_conn_close(&c);
	return r;
}

/* The 'broken' event and the trim, after a KILL. Best effort. The
 * batch that found the holder is gone by now: b has what it said. */
static void record_broken(struct lock *lk, struct my_conn *c,
			  const struct mylock *m, const struct found *f,
			  const struct broken_holder *b)
{
	struct show_info hi;
	int64_t held_ms = -1;
	size_t hlen = 0;
	char *sql, *holder, *by, *tok, held[24] = "NULL", fence[24] = "NULL";

	if (lk->p->history <= 0 || !m->u->database[0] || !f->row)
		return;
	if (b->info) {
		/* the info less its fence (info_of() put it there) */
		hlen = (size_t)(strrchr(b->info, '\t') - b->info);
		snprintf(fence, sizeof fence, "%lld", f->fence);
		if (show_info_parse(b->info, b->info_len, &hi) == 0) {
			held_ms = clock_wall_ms() - hi.since_ms;
			show_info_free(&hi);
		}
		if (held_ms >= 0)
			snprintf(held, sizeof held, "%" PRId64, held_ms);
	}
	holder = malloc(2 * hlen + 4);
	by = malloc(2 * strlen(lk->info) + 4);
	tok = malloc(2 * b->token_len + 4);
	if (holder && by && tok) {
		my_hex_literal(b->info ? b->info : "", hlen, holder);
		my_hex_literal(lk->info, strlen(lk->info), by);
		my_hex_literal(b->token, b->token_len, tok);
		if (asprintf(&sql, "INSERT INTO dlock_history (name, at_ms, event, token, holder, by_info, fence, held_ms) "
			     "VALUES (%s, " MY_NOW_MS ", 'broken', LEFT(%s, 64), %s, %s, %s, %s)",
			     m->names.rowkey, tok, holder, by, fence, held) >= 0) {
			my_event_trimmed(c, &m->names, lk->p->history, sql,
					 clock_now_ms() + lk->node_timeout_ms);
			free(sql);
		}
	}
	free(holder);
	free(by);
	free(tok);
}

int my_force(struct lock *lk, struct broken_holder **out, size_t *n,
	     struct error *err)
{
	struct mylock *m = M(lk);
	struct broken_holder *b = NULL;
	struct my_conn c;
	struct found f;
	char sql[64], what[160];
	int status;

	*out = NULL;
	*n = 0;
	if (connect_to(lk, &c, err) < 0)
		return err->exit;
	my_names_rowkey(&m->names, c.mariadb);
	if (ask(lk, &c, &m->names, &f, err) < 0) {
		status = err->exit;
		goto out;
	}
	if (f.id < 0) {
		status = 1;
		goto out;
	}
	if (!(b = calloc(1, sizeof *b))) {
		error_set(err, EX_OSERR, "out of memory");
		status = EX_OSERR;
		goto out;
	}
	b->n_servers = 1;
	b->info = info_of(&f);
	b->info_len = b->info ? strlen(b->info) : 0;
	if (b->info) {
		b->token = engine_dup(f.token, f.token_len);
		b->token_len = f.token_len;
	} else {
		b->token = foreign_of(&f);
		b->token_len = b->token ? strlen(b->token) : 0;
	}
	b->left_ms = left_of(&f);	/* -1 as status says: with its session */
	if (!b->token) {
		error_set(err, EX_OSERR, "out of memory");
		status = EX_OSERR;
		goto out;
	}
	/* The holder may have changed since IS_USED_LOCK answered: a KILL
	 * cannot be made conditional. The window is one round trip. */
	snprintf(sql, sizeof sql, "KILL CONNECTION %lld", f.id);
	if (my_query(&c, sql, clock_now_ms() + lk->node_timeout_ms, err) < 0) {
		status = err->exit;
		goto out;
	}
	if (c.err_no && c.err_no != ER_NO_SUCH_THREAD) {
		snprintf(what, sizeof what, "KILL CONNECTION %lld (needs the CONNECTION ADMIN or SUPER privilege, or the holder's account)",
			 f.id);
		my_error(&c, what, err);
		status = err->exit;
		goto out;
	}
	record_broken(lk, &c, m, &f, b);
	/* only now: a holder not broken is nobody's to print */
	*out = b;
	*n = 1;
	b = NULL;
	status = EX_OK;
out:
	broken_free(b, b ? 1 : 0);
	my_conn_close(&c);
	return status;
}
