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

/* Holder info, if data is dlock's; else NULL (another client's). */
static char *info_of(const struct zc *get, size_t *len)
{
	struct show_info hi;

	*len = 0;
	if (!get || get->rc != ZOK || get->data_len <= 0 ||
	    show_info_parse(get->data, (size_t)get->data_len, &hi) < 0)
		return NULL;
	show_info_free(&hi);
	*len = (size_t)get->data_len;
	return engine_dup(get->data, *len);
}

static int connect_for(struct zk *z, struct error *err)
{
	bool expired;

	return zk_session(z, clock_now_ms() + z->lk->node_timeout_ms, false,
			  &expired, err);
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
		char *info = info_of(g, &len);

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
			h->left_ms = c->ours ? c->timeout_ms : -2;
			h->fence = g && g->rc == ZOK ? g->stat.czxid : -1;
			h->slot = c->ours && c->limit > 0 ? (long)n_hold : -1;
			h->n_servers = 1;
			if (c->ours)
				show_duration(c->timeout_ms, t, sizeof t);
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
				m->ttl_ms = c->ours ? c->timeout_ms : -2;
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

		if (asprintf(&o[i].path, "%s/%s%s", z->u->chroot, p->prefix,
			     locks[i].name) < 0) {
			o[i].path = NULL;
			continue;
		}
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
		int rc = o[i].cs.req ? o[i].cs.req->rc : ZSYSTEMERROR;

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

int zk_list(struct lock *lk, char ***names, size_t *n, struct error *err)
{
	struct zk *z = ZK(lk);
	const char *prefix = lk->p->prefix;
	size_t plen = strlen(prefix);
	struct zc *kids;
	int rc;

	*names = NULL;
	*n = 0;
	if (connect_for(z, err) < 0)
		return -1;
	kids = zc_children(z->s, z->u->chroot[0] ? z->u->chroot : "/", false);
	zc_wait(&kids, 1, clock_now_ms() + lk->node_timeout_ms);
	rc = kids ? kids->rc : ZSYSTEMERROR;
	if (rc == ZNONODE) {
		zc_free(kids);
		return 0;
	}
	if (rc != ZOK) {
		zs_error(err, rc, z->u->text);
		zc_free(kids);
		return -1;
	}
	*names = calloc((size_t)kids->n_kids + 1, sizeof **names);
	for (int i = 0; *names && i < kids->n_kids; i++) {
		const char *k = kids->kids[i];

		if (strncmp(k, prefix, plen) != 0 || strcmp(k, &ZK_HISTORY_DIR[1]) == 0 ||
		    (!z->u->chroot[0] && strcmp(k, "zookeeper") == 0))
			continue;
		if (((*names)[*n] = strdup(k + plen)))
			(*n)++;
	}
	zc_free(kids);
	if (!*names) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	return 0;
}

/* ---- history ----------------------------------------------------------- */

/* The value of "key=" in an event's lines, or NULL. */
static char *field(const char *data, const char *key, size_t *len)
{
	size_t klen = strlen(key);

	for (const char *line = data; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);

		if (n > klen && strncmp(line, key, klen) == 0 && line[klen] == '=') {
			*len = n - klen - 1;
			return engine_dup(line + klen + 1, *len);
		}
		line = end ? end + 1 : NULL;
	}
	*len = 0;
	return NULL;
}

static long long number_field(const char *data, const char *key)
{
	size_t len;
	char *v = field(data, key, &len), *end;
	long long n = -1;

	if (v && len > 0 && len <= 18 && strspn(v, "0123456789") == len)
		n = strtoll(v, &end, 10);
	free(v);
	return n;
}

/* 0 an event, -1 not one of ours */
static int parse_event(const struct zc *g, const char *name,
		       struct history_event *ev)
{
	static const char *const kinds[] = { "acquired", "broken", "released", "lost" };
	size_t len;
	char *kind;
	int k;

	if (!g || g->rc != ZOK || g->data_len <= 0 || memchr(g->data, '\0', (size_t)g->data_len))
		return -1;
	if (!(kind = field(g->data, "event", &len)))
		return -1;
	for (k = 0; k < 4 && strcmp(kind, kinds[k]) != 0; k++)
		;
	free(kind);
	if (k == 4)
		return -1;
	*ev = (struct history_event){
		.kind = (enum history_kind)k,
		.time_ms = g->stat.ctime,
		.id = strdup(name),
		.fence = number_field(g->data, "fence"),
		.exit = number_field(g->data, "exit"),
		.held_ms = number_field(g->data, "held_ms"),
		.n_servers = 1,
	};
	ev->token = field(g->data, "token", &ev->token_len);
	if (!ev->token)
		ev->token = strdup("");
	ev->holder = field(g->data, "holder", &ev->holder_len);
	ev->by = field(g->data, "by", &ev->by_len);
	if (ev->holder && !ev->holder_len) {
		free(ev->holder);
		ev->holder = NULL;
	}
	if (ev->by && !ev->by_len) {
		free(ev->by);
		ev->by = NULL;
	}
	return 0;
}

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
	rc = kids ? kids->rc : ZSYSTEMERROR;
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
	for (int i = 0; seq && i < kids->n_kids; i++) {
		const char *name = kids->kids[i];
		size_t len = strlen(name);

		if (strncmp(name, ZK_EVENT_PREFIX, 2) != 0 || len != 12 ||
		    strspn(name + 2, "0123456789") != 10)
			continue;
		seq[n].name = name;
		seq[n++].seq = strtoll(name + 2, NULL, 10);
	}
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
		if (parse_event(gets[i], seq[i].name, &out->events[out->n_events]) == 0)
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

int zk_force(struct lock *lk, struct broken_holder **out, size_t *n,
	     struct error *err)
{
	struct zk *z = ZK(lk);
	int64_t deadline_ms;
	struct zk_contenders cs = { 0 };
	struct zc **gets = NULL, **dels = NULL, **evs = NULL;
	char *ev_path = NULL;
	size_t n_hold = 0;
	int rc, r = 1;

	*out = NULL;
	*n = 0;
	if (connect_for(z, err) < 0)
		return err->exit;
	deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	{
		struct zc *kids = zc_children(z->s, z->path, false);

		zc_wait(&kids, 1, deadline_ms);
		rc = zk_contenders(&cs, kids);
	}
	if (rc == ZNONODE) {
		zk_contenders_free(&cs);
		return 1;
	}
	if (rc != ZOK) {
		zs_error(err, rc, z->u->text);
		zk_contenders_free(&cs);
		return err->exit;
	}
	while (n_hold < cs.n && zk_holds(cs.c, cs.n, n_hold))
		n_hold++;
	if (n_hold == 0) {
		zk_contenders_free(&cs);
		return 1;
	}
	gets = calloc(n_hold, sizeof *gets);
	dels = calloc(n_hold, sizeof *dels);
	evs = calloc(n_hold, sizeof *evs);
	*out = calloc(n_hold, sizeof **out);
	ev_path = zk_join(z->hist, ZK_EVENT_PREFIX);
	if (!gets || !dels || !evs || !*out || !ev_path) {
		error_set(err, EX_OSERR, "out of memory");
		r = EX_OSERR;
		goto out;
	}
	/* who held it (data, czxid), then its node deleted, in one go */
	for (size_t i = 0; i < n_hold; i++) {
		char *path = zk_join(z->path, cs.c[i].name);

		if (!path)
			continue;
		gets[i] = zc_get(z->s, path, false);
		dels[i] = zc_delete(z->s, path);
		free(path);
	}
	zc_wait(gets, n_hold, deadline_ms);
	zc_wait(dels, n_hold, deadline_ms);
	for (size_t i = 0; i < n_hold; i++) {
		struct broken_holder *b = &(*out)[*n];
		int drc = dels[i] ? dels[i]->rc : ZSYSTEMERROR;

		if (drc == ZNONODE)
			continue;	/* gone meanwhile */
		if (drc != ZOK) {
			zs_error(err, drc, z->u->text);
			r = err->exit;
			continue;
		}
		b->token = strdup(cs.c[i].name);
		b->token_len = strlen(cs.c[i].name);
		b->info = info_of(gets[i], &b->info_len);
		b->left_ms = cs.c[i].ours ? cs.c[i].timeout_ms : 0;
		b->n_servers = 1;
		(*n)++;
		if (r == 1)
			r = 0;
		if (lk->p->history > 0) {
			char data[2 * LOCK_INFO_MAX + 256];
			int len = zk_event_data(data, sizeof data, "broken", cs.c[i].name,
						gets[i] && gets[i]->rc == ZOK ?
						gets[i]->stat.czxid : -1, -1, -1,
						b->info, lk->info);

			evs[i] = zc_create(z->s, ev_path, data, len, ZOO_PERSISTENT_SEQUENTIAL);
		}
	}
	zc_wait(evs, n_hold, deadline_ms);
	/* the history's znode missing: made, and the events again */
	for (size_t i = 0; i < n_hold; i++) {
		struct error ignored;

		if (!evs[i] || evs[i]->rc != ZNONODE)
			continue;
		if (zk_ensure(z, z->hist, true, deadline_ms, &ignored) < 0)
			break;
		for (size_t k = i; k < n_hold; k++) {
			char data[2 * LOCK_INFO_MAX + 256];
			int len;

			if (!evs[k] || evs[k]->rc != ZNONODE)
				continue;
			len = zk_event_data(data, sizeof data, "broken", cs.c[k].name,
					    gets[k] && gets[k]->rc == ZOK ?
					    gets[k]->stat.czxid : -1, -1, -1,
					    gets[k] && gets[k]->rc == ZOK ? gets[k]->data : NULL,
					    lk->info);
			zc_free(evs[k]);
			evs[k] = zc_create(z->s, ev_path, data, len, ZOO_PERSISTENT_SEQUENTIAL);
		}
		zc_wait(evs, n_hold, deadline_ms);
		break;
	}
out:
	for (size_t i = 0; i < n_hold; i++) {
		if (gets)
			zc_free(gets[i]);
		if (dels)
			zc_free(dels[i]);
		if (evs)
			zc_free(evs[i]);
	}
	free(gets);
	free(dels);
	free(evs);
	free(ev_path);
	zk_contenders_free(&cs);
	return r;
}

/* ---- the separate steps ---------------------------------------------------- */

/* The node of token's GUID under the lock: its name, or NULL (rc says
 * why: ZOK none). */
static char *token_node(struct zk *z, const char *token, int *rc)
{
	struct zk_contenders cs = { 0 };
	struct zc *kids = zc_children(z->s, z->path, false);
	char guid[ZK_GUID_LEN + 1], *name = NULL;

	snprintf(guid, sizeof guid, "%.*s", ZK_GUID_LEN, token);
	zc_wait(&kids, 1, clock_now_ms() + z->lk->node_timeout_ms);
	*rc = zk_contenders(&cs, kids);
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
		struct zc *del = zc_delete(z->s, own);

		zc_wait(&del, 1, deadline_ms);
		rc = del ? del->rc : ZSYSTEMERROR;
		zc_free(del);
	}
	if (rc == ZOK && lk->p->history > 0) {
		char data[2 * LOCK_INFO_MAX + 256], *ev_path = zk_join(z->hist, ZK_EVENT_PREFIX);
		int len = zk_event_data(data, sizeof data, "released", strrchr(own, '/') + 1,
					-1, -1, -1, lk->info, NULL);
		struct zc *ev = ev_path ? zc_create(z->s, ev_path, data, len,
						    ZOO_PERSISTENT_SEQUENTIAL) : NULL;

		zc_wait(&ev, 1, deadline_ms);
		zc_free(ev);
		free(ev_path);
	}
	if (rc == ZNONODE)
		return 1;
	if (rc != ZOK) {
		zs_error(err, rc, z->u->text);
		z->held = true;	/* leave the session be */
		return err->exit;
	}
	/* the session was the lock's (dlock acquire's): close() ends it */
	return 0;
}

enum extend_result zk_extend_token(struct lock *lk, struct error *err)
{
	struct zk *z = ZK(lk);
	int64_t deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	char *own;
	int r, rc;

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
	 * the leader confirms it (a sync) */
	{
		struct zc *sync = zc_sync(z->s, own);

		zc_wait(&sync, 1, deadline_ms);
		rc = sync ? sync->rc : ZSYSTEMERROR;
		zc_free(sync);
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
