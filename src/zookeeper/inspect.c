/* inspect.c - ZooKeeper: status (the contenders in queue order, with the
 * holder info their nodes keep), the list of locks, history (persistent
 * sequential event nodes beside the lock), release --force (the holders'
 * nodes deleted), and the separate steps (dlock extend and release
 * --token take the token's session over). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "show.h"
#include "zk.h"

/* Holder info, if data is dlock's; else NULL (another client's).
 * *timeout_ms: the session's timeout dlock extend wrote after it, or -1. */
static char *info_of(const struct zc *get, size_t *len, long long *timeout_ms)
{
	struct show_info hi;
	size_t n;

	*len = 0;
	*timeout_ms = -1;
	if (!get || get->rc != ZOK || get->data_len <= 0)
		return NULL;
	n = zk_node_info(get->data, get->data_len, timeout_ms);
	if (show_info_parse(get->data, n, &hi) < 0)
		return NULL;
	show_info_free(&hi);
	*len = n;
	return engine_dup(get->data, n);
}

static int connect_for(struct zk *z, struct error *err)
{
	bool expired;

	return zk_session(z, clock_now_ms() + z->lk->node_timeout_ms, false,
			  &expired, err);
}

/* The lock's contenders read into cs (give it to zk_contenders_free()):
 * ZOK, or the library's code (ZNONODE: no lock's znode). */
static int read_contenders(struct zk *z, int64_t deadline_ms,
			   struct zk_contenders *cs)
{
	struct zc *kids = zc_children(z->s, z->path, false);

	zc_wait(&kids, 1, deadline_ms);
	return zk_contenders(cs, kids);
}

/* ---- status ------------------------------------------------------------ */

struct one {
	char *path;
	struct zc *kids;
	struct zk_contenders cs;
	struct zc **gets;
};

static void fill(struct status_lock *m, struct one *o)
{
	long long fence = -1;
	size_t n_hold = 0;

	m->n_agree = 1;
	snprintf(m->type, sizeof m->type, "znode");
	m->ttl_ms = -2;
	if (o->cs.n == 0) {
		m->state = ST_FREE;
		return;
	}
	m->state = ST_HELD;
	m->holders = calloc(o->cs.n, sizeof *m->holders);
	m->waiters = calloc(o->cs.n, sizeof *m->waiters);
	if (!m->holders || !m->waiters) {
		m->state = ST_UNKNOWN;
		error_set(&m->err, EX_OSERR, "out of memory");
		return;
	}
	for (size_t i = 0; i < o->cs.n; i++) {
		const struct zk_contender *c = &o->cs.c[i];
		const struct zc *g = o->gets[i];
		size_t len;
		long long extended_ms;
		char *info = info_of(g, &len, &extended_ms);
		/* the session's timeout: as its node's name says, or as
		 * dlock extend changed it since */
		long long timeout_ms = extended_ms > 0 ? extended_ms : c->timeout_ms;

		if (g && g->rc == ZNONODE) {	/* gone since the listing */
			free(info);
			continue;
		}
		if (zk_holds(o->cs.c, o->cs.n, i)) {
			struct status_holder *h = &m->holders[m->n_holders++];
			char note[96], t[32];

			h->token = strdup(c->name);
			h->token_len = strlen(c->name);
			h->info = info;
			h->info_len = len;
			h->left_ms = c->ours ? timeout_ms : -2;
			h->fence = g && g->rc == ZOK ? g->stat.czxid : -1;
			/* slots 1..N, as on every engine */
			h->slot = c->ours && c->limit > 0 ? (long)n_hold + 1 : -1;
			h->n_servers = 1;
			if (c->ours)
				show_duration(timeout_ms, t, sizeof t);
			if (g && g->rc == ZOK) {
				snprintf(note, sizeof note, "session 0x%" PRIx64 "%s%s",
					 (uint64_t)g->stat.ephemeralOwner,
					 c->ours ? ", timeout " : "", c->ours ? t : "");
				h->note = strdup(note);
			}
			if (h->fence > fence)
				fence = h->fence;
			if (n_hold++ == 0) {
				m->foreign = !info;
				if (c->shared)
					snprintf(m->mode, sizeof m->mode, "s");
				else if (c->ours && c->limit > 0)
					snprintf(m->mode, sizeof m->mode, "%ld", c->limit);
				m->ttl_ms = c->ours ? timeout_ms : -2;
			}
		} else {
			struct status_waiter *w = &m->waiters[m->n_waiters++];

			w->token = strdup(c->name);
			w->token_len = strlen(c->name);
			w->info = info;
			w->info_len = len;
			w->ticket = c->seq;
			m->n_writers += !c->shared;
		}
	}
	m->n_waiting = (long long)m->n_waiters;
	m->fence = fence;
	if (m->n_holders == 0)
		m->state = ST_FREE;
}

int zk_status(struct lock *lk, struct status_lock *locks, size_t n,
	      struct error *err)
{
	struct zk *z = ZK(lk);
	const struct lock_params *p = lk->p;
	int64_t deadline_ms;
	struct one *o = calloc(n, sizeof *o);
	int r = 0;

	if (!o) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	if (connect_for(z, err) < 0) {
		free(o);
		return -1;
	}
	deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	for (size_t i = 0; i < n; i++) {
		const char *bad;

		if (!(o[i].path = zk_lock_path(z->u->chroot, p->prefix,
					       locks[i].name)))
			continue;
		if ((bad = zk_path_invalid(o[i].path))) {
			error_set(&locks[i].err, EX_USAGE, "bad lock name for ZooKeeper: %s", bad);
			continue;
		}
		o[i].kids = zc_children(z->s, o[i].path, false);
	}
	for (size_t i = 0; i < n; i++)
		zc_wait(&o[i].kids, 1, deadline_ms);
	/* then every contender's data and stat, all at once */
	for (size_t i = 0; i < n; i++) {
		if (!o[i].kids)
			continue;
		zk_contenders(&o[i].cs, o[i].kids);
		o[i].kids = NULL;	/* the contenders own it */
		o[i].gets = calloc(o[i].cs.n + 1, sizeof *o[i].gets);
		for (size_t k = 0; o[i].gets && k < o[i].cs.n; k++) {
			char *path = zk_join(o[i].path, o[i].cs.c[k].name);

			o[i].gets[k] = path ? zc_get(z->s, path, false) : NULL;
			free(path);
		}
	}
	for (size_t i = 0; i < n; i++)
		if (o[i].gets)
			zc_wait(o[i].gets, o[i].cs.n, deadline_ms);
	for (size_t i = 0; i < n; i++) {
		struct status_lock *m = &locks[i];
		int rc = zc_rc(o[i].cs.req);

		m->key = o[i].path ? strdup(o[i].path) : NULL;
		if (m->err.exit) {
			m->state = ST_UNKNOWN;
		} else if (rc == ZNONODE) {
			m->state = ST_FREE;
			m->n_agree = 1;
			m->ttl_ms = -2;
		} else if (rc != ZOK) {
			m->state = ST_UNKNOWN;
			zs_error(&m->err, rc, z->u->text);
		} else {
			fill(m, &o[i]);
		}
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; o[i].gets && k < o[i].cs.n; k++)
			zc_free(o[i].gets[k]);
		free(o[i].gets);
		zk_contenders_free(&o[i].cs);
		zc_free(o[i].kids);
		free(o[i].path);
	}
	free(o);
	return r;
}

/* ---- the list of locks ------------------------------------------------- */

/* Nodes of one level of the walk, and the lock names they would be. */
struct level {
	char **paths, **names;
	size_t n, cap;
};

static int level_add(struct level *l, char *path, char *name)
{
	if (!path || !name)
		goto fail;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **p = realloc(l->paths, cap * sizeof *p);

		if (p)
			l->paths = p;
		if (!p || !(p = realloc(l->names, cap * sizeof *p)))
			goto fail;
		l->names = p;
		l->cap = cap;
	}
	l->paths[l->n] = path;
	l->names[l->n++] = name;
	return 0;
fail:
	free(path);
	free(name);
	return -1;
}

static void level_free(struct level *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->paths[i]);
		free(l->names[i]);
	}
	free(l->paths);
	free(l->names);
	*l = (struct level){ 0 };
}

static int add_name(char ***names, size_t *n, size_t *cap, const char *name)
{
	if (*n == *cap) {
		size_t more = *cap ? 2 * *cap : 16;
		char **p = realloc(*names, more * sizeof *p);

		if (!p)
			return -1;
		*names = p;
		*cap = more;
	}
	if (!((*names)[*n] = strdup(name)))
		return -1;
	(*n)++;
	return 0;
}

/* A node is a lock when it has a contender: held, or waited for (a lock
 * nobody holds or waits for is free, whether its znode stays or not).
 * Names with '/' are nodes below others (the descriptor form's are all
 * paths): the walk goes down every node that is no contender, one level
 * a round trip, its requests pipelined. A node closed to us (ZNOAUTH) is
 * passed over: its locks are not ours to list. */
int zk_list(struct lock *lk, char ***names, size_t *n, struct error *err)
{
	struct zk *z = ZK(lk);
	const char *prefix = lk->p->prefix;
	size_t cap = 0;
	struct level cur = { 0 }, next = { 0 };
	bool top = true;
	int r = 0;

	*names = NULL;
	*n = 0;
	if (connect_for(z, err) < 0)
		return -1;
	/* PREFIX = DIR/TAIL: the walk starts at DIR's children named TAIL... */
	if (level_add(&cur, zk_list_root(z->u->chroot, prefix),
		      strdup("")) < 0) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	while (cur.n > 0 && r == 0) {
		int64_t deadline_ms = clock_now_ms() + lk->node_timeout_ms;
		struct zc **kids = calloc(cur.n, sizeof *kids);

		if (!kids) {
			error_set(err, EX_OSERR, "out of memory");
			r = -1;
			break;
		}
		for (size_t i = 0; i < cur.n; i++)
			kids[i] = zc_children(z->s, cur.paths[i], false);
		zc_wait(kids, cur.n, deadline_ms);
		for (size_t i = 0; i < cur.n && r == 0; i++) {
			int rc = zc_rc(kids[i]);
			bool lock = false;

			if (rc == ZNONODE || (rc == ZNOAUTH && !top))
				continue;	/* gone since, or not ours to see */
			if (rc != ZOK) {
				zs_error(err, rc, z->u->text);
				r = -1;
				break;
			}
			for (int k = 0; k < kids[i]->n_kids && r == 0; k++) {
				const char *c = kids[i]->kids[k], *rest = NULL;
				struct zk_contender ct;
				char *name;

				if (top &&
				    !(rest = zk_list_top(z->u->chroot, prefix, c)))
					continue;
				if (!top && zk_contender_parse(c, &ct) == 0) {
					lock = true;
					continue;
				}
				if (top)
					name = strdup(rest);
				else if (asprintf(&name, "%s/%s", cur.names[i], c) < 0)
					name = NULL;
				if (level_add(&next, zk_join(cur.paths[i], c), name) < 0) {
					error_set(err, EX_OSERR, "out of memory");
					r = -1;
				}
			}
			if (lock && cur.names[i][0] &&
			    add_name(names, n, &cap, cur.names[i]) < 0) {
				error_set(err, EX_OSERR, "out of memory");
				r = -1;
			}
		}
		for (size_t i = 0; i < cur.n; i++)
			zc_free(kids[i]);
		free(kids);
		level_free(&cur);
		cur = next;
		next = (struct level){ 0 };
		top = false;
	}
	level_free(&cur);
	level_free(&next);
	if (r < 0) {
		for (size_t i = 0; i < *n; i++)
			free((*names)[i]);
		free(*names);
		*names = NULL;
		*n = 0;
		return -1;
	}
	*n = engine_sort_names(*names, *n);
	return 0;
}

/* ---- history ----------------------------------------------------------- */

int zk_history(struct lock *lk, long count, struct history_report *out,
	       struct error *err)
{
	struct zk *z = ZK(lk);
	long keep = lk->p->history;
	int64_t deadline_ms;
	struct zk_contender *seq = NULL;
	struct zc *kids, **gets = NULL;
	size_t n = 0;
	int rc;

	*out = (struct history_report){ .n_servers = 1 };
	if (connect_for(z, err) < 0)
		return -1;
	deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	kids = zc_children(z->s, z->hist, false);
	zc_wait(&kids, 1, deadline_ms);
	rc = zc_rc(kids);
	if (rc == ZNONODE) {
		zc_free(kids);
		out->n_ok = 1;
		return 0;
	}
	if (rc != ZOK) {
		zs_error(err, rc, z->u->text);
		zc_free(kids);
		return -1;
	}
	out->n_ok = 1;
	seq = calloc((size_t)kids->n_kids + 1, sizeof *seq);
	for (int i = 0; seq && i < kids->n_kids; i++)
		if (zk_event_seq(kids->kids[i], &seq[n].seq) == 0)
			seq[n++].name = kids->kids[i];
	zk_contenders_sort(seq, n);
	/* the newest, as many as asked and kept (trimming is in batches) */
	if (keep > 0 && (long)n > keep) {
		memmove(seq, seq + (n - (size_t)keep), (size_t)keep * sizeof *seq);
		n = (size_t)keep;
	}
	if (count >= 0 && (long)n > count) {
		memmove(seq, seq + (n - (size_t)count), (size_t)count * sizeof *seq);
		n = (size_t)count;
	}
	gets = calloc(n + 1, sizeof *gets);
	out->events = calloc(n + 1, sizeof *out->events);
	if (!seq || !gets || !out->events) {
		error_set(err, EX_OSERR, "out of memory");
		rc = -1;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char *path = zk_join(z->hist, seq[i].name);

		gets[i] = path ? zc_get(z->s, path, false) : NULL;
		free(path);
	}
	zc_wait(gets, n, deadline_ms);
	for (size_t i = n; i-- > 0;)	/* newest first */
		if (zk_event_parse(gets[i], seq[i].name, &out->events[out->n_events]) == 0)
			out->n_events++;
	rc = 0;
out:
	for (size_t i = 0; gets && i < n; i++)
		zc_free(gets[i]);
	free(gets);
	free(seq);
	zc_free(kids);
	return rc;
}

/* ---- release --force ----------------------------------------------------- */

/* release --force's state, passed down its steps. */
struct force {
	struct zk *z;
	int64_t deadline_ms;
	struct zk_contenders cs;	/* the holders first: c[0..n_hold-1] */
	size_t n_hold;
	struct zc **gets, **dels, **evs;	/* each holder's */
	char *ev_path;		/* where its "broken" event is made */
};

/* Contender c's "broken" event (get: its node's data and czxid, read
 * before its delete; holder: the holder info it records) sent. */
static struct zc *send_broken(const struct force *f,
			      const struct zk_contender *c,
			      const struct zc *get, const char *holder)
{
	char data[2 * LOCK_INFO_MAX + 256], tok[ZK_GUID_LEN + 1];
	long long czxid = get && get->rc == ZOK ? get->stat.czxid : -1;
	int len = zk_event_data(data, sizeof data, "broken",
				zk_event_token(c, tok, sizeof tok), czxid, -1, -1,
				holder, f->z->lk->info);

	return zc_create(f->z->s, f->ev_path, data, len,
			 ZOO_PERSISTENT_SEQUENTIAL);
}

/* Holder i's delete answered: 0 broken (b filled, its event sent), 1
 * gone meanwhile, -1 not broken (err says why: no "broken" line). */
static int take_break(struct force *f, size_t i, struct broken_holder *b,
		      struct error *err)
{
	const struct zk *z = f->z;
	const struct zk_contender *c = &f->cs.c[i];
	int drc = zc_rc(f->dels[i]);
	char what[2048];
	long long timeout_ms;

	if (drc == ZNONODE)
		return 1;
	if (drc == ZNOAUTH) {
		error_set(err, EX_NOPERM, "%s: cannot delete the holder's node %s/%s: not allowed by the ACL of %s (breaking a lock needs the delete permission on it)",
			  z->u->text, z->path, c->name, z->path);
		return -1;
	}
	if (drc != ZOK) {
		snprintf(what, sizeof what, "%s: cannot delete the holder's node %s/%s",
			 z->u->text, z->path, c->name);
		zs_error(err, drc, what);
		return -1;
	}
	b->token = strdup(c->name);
	b->token_len = strlen(c->name);
	b->info = info_of(f->gets[i], &b->info_len, &timeout_ms);
	/* another client's: its session's timeout is not ours to know */
	b->left_ms = timeout_ms > 0 ? timeout_ms : c->ours ? c->timeout_ms : -2;
	b->n_servers = 1;
	if (b->info)
		b->fence = (long long)f->gets[i]->stat.czxid;	/* DLOCK_FENCE */
	if (z->lk->p->history > 0)
		f->evs[i] = send_broken(f, c, f->gets[i], b->info);
	return 0;
}

/* The history's znode missing (the events' creates said so): made, and
 * those events again. */
static void events_again(struct force *f)
{
	const char *hist = f->z->hist;
	struct error ignored;
	bool missing = false;

	for (size_t i = 0; i < f->n_hold && !missing; i++)
		missing = f->evs[i] && f->evs[i]->rc == ZNONODE;
	if (!missing ||
	    zc_ensure(f->z->s, &hist, 1, f->deadline_ms, &ignored) < 0)
		return;
	for (size_t i = 0; i < f->n_hold; i++) {
		const struct zc *g = f->gets[i];

		if (!f->evs[i] || f->evs[i]->rc != ZNONODE)
			continue;
		zc_free(f->evs[i]);
		f->evs[i] = send_broken(f, &f->cs.c[i], g,
					g && g->rc == ZOK ? g->data : NULL);
	}
	zc_wait(f->evs, f->n_hold, f->deadline_ms);
}

/* Who held it (data, czxid), then its node deleted, each holder's in
 * one go; the results into out[0..*n-1], their events sent. 0 one
 * broken at least, 1 none there, else the exit status of a failure. */
static int break_holders(struct force *f, struct broken_holder *out, size_t *n,
			 struct error *err)
{
	int r = 1;

	for (size_t i = 0; i < f->n_hold; i++) {
		char *path = zk_join(f->z->path, f->cs.c[i].name);

		if (!path)
			continue;
		f->gets[i] = zc_get(f->z->s, path, false);
		f->dels[i] = zc_delete(f->z->s, path);
		free(path);
	}
	zc_wait(f->gets, f->n_hold, f->deadline_ms);
	zc_wait(f->dels, f->n_hold, f->deadline_ms);
	for (size_t i = 0; i < f->n_hold; i++) {
		int b = take_break(f, i, &out[*n], err);

		if (b < 0) {
			r = err->exit;
		} else if (b == 0) {
			(*n)++;
			if (r == 1)
				r = 0;
		}
	}
	zc_wait(f->evs, f->n_hold, f->deadline_ms);
	events_again(f);
	return r;
}

int zk_force(struct lock *lk, struct broken_holder **out, size_t *n,
	     struct error *err)
{
	struct zk *z = ZK(lk);
	struct force f = { .z = z };
	int rc, r = EX_OSERR;

	*out = NULL;
	*n = 0;
	if (connect_for(z, err) < 0)
		return err->exit;
	f.deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	rc = read_contenders(z, f.deadline_ms, &f.cs);
	if (rc != ZOK && rc != ZNONODE) {
		char what[2048];

		snprintf(what, sizeof what, "%s: cannot read the contenders of %s",
			 z->u->text, z->path);
		zs_error(err, rc, what);
		zk_contenders_free(&f.cs);
		return err->exit;
	}
	while (f.n_hold < f.cs.n && zk_holds(f.cs.c, f.cs.n, f.n_hold))
		f.n_hold++;
	if (f.n_hold == 0) {	/* none there, or no holder */
		zk_contenders_free(&f.cs);
		return 1;
	}
	f.gets = calloc(f.n_hold, sizeof *f.gets);
	f.dels = calloc(f.n_hold, sizeof *f.dels);
	f.evs = calloc(f.n_hold, sizeof *f.evs);
	*out = calloc(f.n_hold, sizeof **out);
	f.ev_path = zk_join(z->hist, ZK_EVENT_PREFIX);
	if (!f.gets || !f.dels || !f.evs || !*out || !f.ev_path)
		error_set(err, EX_OSERR, "out of memory");
	else
		r = break_holders(&f, *out, n, err);
	for (size_t i = 0; i < f.n_hold; i++) {
		if (f.gets)
			zc_free(f.gets[i]);
		if (f.dels)
			zc_free(f.dels[i]);
		if (f.evs)
			zc_free(f.evs[i]);
	}
	free(f.gets);
	free(f.dels);
	free(f.evs);
	free(f.ev_path);
	zk_contenders_free(&f.cs);
	return r;
}

/* ---- the separate steps ---------------------------------------------------- */

/* The node of token's GUID under the lock: its name, or NULL (rc says
 * why: ZOK none). */
static char *token_node(struct zk *z, const char *token, int *rc)
{
	struct zk_contenders cs;
	char guid[ZK_GUID_LEN + 1], *name = NULL;

	snprintf(guid, sizeof guid, "%.*s", ZK_GUID_LEN, token);
	*rc = read_contenders(z, clock_now_ms() + z->lk->node_timeout_ms, &cs);
	if (*rc == ZNONODE)
		*rc = ZOK;
	for (size_t i = 0; *rc == ZOK && i < cs.n; i++)
		if (zk_name_has_guid(cs.c[i].name, guid) && zk_holds(cs.c, cs.n, i))
			name = zk_join(z->path, cs.c[i].name);
	zk_contenders_free(&cs);
	return name;
}

int zk_release_token(struct lock *lk, const char *token, struct error *err)
{
	struct zk *z = ZK(lk);
	int64_t deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	char *own;
	int r, rc;

	if ((r = zk_resume(z, token, deadline_ms, err)) != 0)
		return r;
	if (!(own = token_node(z, token, &rc))) {
		if (rc != ZOK) {
			zs_error(err, rc, z->u->text);
			return err->exit;
		}
		/* not ours to end: a session may still wait for it */
		z->held = true;
		return 1;
	}
	z->own = own;
	{
		/* who held it (its data, its fence), for the history's
		 * event, read right before the delete */
		struct zc *reqs[2] = { zc_get(z->s, own, false), zc_delete(z->s, own) };
		const struct zc *get = reqs[0];
		bool read = zc_wait(reqs, 2, deadline_ms) == 2 && zc_rc(get) == ZOK &&
			    get->data_len > 0;

		rc = zc_rc(reqs[1]);
		/* by: who released it (this dlock release --token) */
		if (rc == ZOK && lk->p->history > 0)
			zk_write_event(z, "released", token,
				       read ? (long long)get->stat.czxid : -1, -1,
				       read ? get->data : NULL, lk->info, deadline_ms);
		zc_free(reqs[0]);
		zc_free(reqs[1]);
	}
	if (rc == ZNONODE)
		return 1;
	if (rc != ZOK && !zs_transient(rc))
		return zk_end_session(z, rc, err) < 0 ? err->exit : 0;
	if (rc != ZOK) {
		zs_error(err, rc, z->u->text);
		z->held = true;	/* leave the session be */
		return err->exit;
	}
	/* the session was the lock's (dlock acquire's): close() ends it */
	return 0;
}

/* The session's timeout as the server granted it to dlock extend, where
 * it differs from the one our node's name says: written after the holder
 * info in the node's data (zk_node_info()), for status. Only the holder
 * info is kept of what was there: a set that loses a race (the holder's
 * own, after a wait) is not tried again, as status alone reads it. */
static void note_timeout(struct zk *z, const char *own, const struct zc *get,
			 int64_t deadline_ms)
{
	struct zk_contender c;
	long long written_ms;
	size_t info_len;
	char *data;
	int len;
	struct zc *set;

	if (zk_contender_parse(strrchr(own, '/') + 1, &c) < 0 || !c.ours ||
	    get->data_len < 0)
		return;
	info_len = zk_node_info(get->data, get->data_len, &written_ms);
	if (written_ms == z->timeout_ms ||
	    (written_ms < 0 && c.timeout_ms == z->timeout_ms))
		return;
	if (!(data = malloc(info_len + 40)))
		return;
	memcpy(data, get->data, info_len);
	len = (int)info_len + 1 + snprintf(data + info_len + 1, 39, "timeout_ms=%lld",
					   (long long)z->timeout_ms);
	data[info_len] = '\0';
	set = zc_set(z->s, own, data, len, get->stat.version);
	zc_wait(&set, 1, deadline_ms);
	zc_free(set);
	free(data);
}

/* A token dlock gives: the GUID and the session's password (64 hex
 * digits), or several keys' shared one (32). */
static bool token_form(const char *t)
{
	size_t n = strlen(t);

	return (n == 64 || n == 32) && strspn(t, "0123456789abcdef") == n;
}

enum extend_result zk_extend_token(struct lock *lk, struct error *err)
{
	struct zk *z = ZK(lk);
	int64_t deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	char *own;
	int r, rc;

	/* no lock is held with it: a setting to fix, told before asking */
	if (!token_form(lk->token)) {
		error_set(err, EX_USAGE, "bad --token '%s': a ZooKeeper token is 64 hex digits (32 for several keys')",
			  lk->token);
		return EXTEND_FAILED;
	}
	if ((r = zk_resume(z, lk->token, deadline_ms, err)) == 1)
		return EXTEND_LOST;
	if (r != 0)
		return EXTEND_FAILED;
	/* whatever happens now, the session is not ours to end */
	z->held = true;
	if (!(own = token_node(z, lk->token, &rc))) {
		if (rc != ZOK) {
			zs_error(err, rc, z->u->text);
			return EXTEND_FAILED;
		}
		return EXTEND_LOST;
	}
	/* reconnecting touched the session (its timeout from this --ttl);
	 * the leader confirms it (a sync), and our node's data is read
	 * behind it */
	{
		struct zc *reqs[2] = { zc_sync(z->s, own), zc_get(z->s, own, false) };

		zc_wait(reqs, 2, deadline_ms);
		rc = zc_rc(reqs[0]);
		if (rc == ZOK)
			rc = zc_rc(reqs[1]);
		if (rc == ZOK)
			note_timeout(z, own, reqs[1], deadline_ms);
		zc_free(reqs[0]);
		zc_free(reqs[1]);
	}
	free(own);
	if (rc == ZNONODE)
		return EXTEND_LOST;
	if (rc != ZOK) {
		zs_error(err, rc, z->u->text);
		return EXTEND_FAILED;
	}
	return EXTEND_OK;
}
