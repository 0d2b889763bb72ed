/* status.c - Redis: what each server says of a lock (one round trip each:
 * the status script), merged into what a majority agrees on, for the core
 * to print (src/status.c). With no KEY, the core asks list.c for every
 * lock under the prefix first. */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "cluster.h"
#include "config.h"
#include "fanout.h"
#include "names.h"
#include "quorum.h"
#include "rcommands.h"
#include "rlock.h"
#include "scripts.h"
#include "show.h"

struct holder {
	char *token, *info;	/* info NULL: no dlock holder info (foreign) */
	size_t token_len, info_len;
	int64_t left_ms;	/* -1: the key has no TTL */
	long slot;		/* --limit: its slot; -1 */
};

struct waiter {
	char *token, *info;
	size_t token_len, info_len;
	long long ticket;
};

enum says { SAYS_FAILED, SAYS_FREE, SAYS_HELD, SAYS_OTHER };

/* What one server says of one lock. */
struct view {
	enum says says;
	struct error err;	/* SAYS_FAILED: why */
	char type[16];		/* TYPE of the lock key: none, string, zset... */
	int64_t pttl_ms;	/* -1 no TTL, -2 no key */
	long long fence;	/* the fencing counter; -1: none */
	char mode[24];		/* "s", "N" (--limit N), "" */
	struct holder *holders;
	size_t n_holders;
	struct waiter *waiters;	/* the --fair queue, in its order */
	size_t n_waiters;
	long long n_waiting, n_writers;
};

/* One lock, as every server tells it. */
struct entry {
	char *name;		/* as given, or the key less the prefix */
	char *keys[8];		/* the status script's KEYS */
	struct view *views;	/* one per server */
};

/* One lock, merged: what a majority says. */
struct merged_holder {
	const struct holder *h;	/* as a server with its info tells it */
	size_t n_servers;
	int64_t left_ms;	/* the least of them: what is sure */
	long long fence;	/* the largest: RedLock's fence is the max */
};


struct merged {
	enum status_state state;
	const struct view *v;	/* a view of the majority, for type and mode */
	size_t n_ok, n_agree;
	struct merged_holder *holders;
	size_t n_holders;
	const struct waiter **waiters;
	size_t n_waiters;
	long long fence, n_waiting, n_writers;
	const struct error *err;	/* ST_UNKNOWN: the worst error */
};

struct status {
	const struct lock_params *p;
	struct rlock *rl;	/* its nodes, for every lock's round */
	struct entry *entries;
	size_t n_entries, cap;
};

static void view_free(struct view *v)
{
	for (size_t i = 0; i < v->n_holders; i++) {
		free(v->holders[i].token);
		free(v->holders[i].info);
	}
	for (size_t i = 0; i < v->n_waiters; i++) {
		free(v->waiters[i].token);
		free(v->waiters[i].info);
	}
	free(v->holders);
	free(v->waiters);
}

static void entry_free(struct entry *e, size_t n_nodes)
{
	for (size_t i = 0; e->views && i < n_nodes; i++)
		view_free(&e->views[i]);
	free(e->views);
	free(e->name);
	for (size_t k = 0; k < 8; k++)
		free(e->keys[k]);
}

static void entries_free(struct status *s)
{
	for (size_t e = 0; e < s->n_entries; e++)
		entry_free(&s->entries[e], s->rl->n_nodes);
	free(s->entries);
}

static int add_entry(struct status *s, const char *name, size_t len)
{
	static const char *const suffix[8] = {
		NULL, ":fence", ":owner", ":mode", ":queue", ":alive", ":slots",
		":writers",
	};
	struct entry *e;

	if (s->n_entries == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct entry *more = realloc(s->entries, cap * sizeof *more);

		if (!more)
			return -1;
		s->entries = more;
		s->cap = cap;
	}
	e = &s->entries[s->n_entries];
	*e = (struct entry){ .name = engine_dup(name, len) };
	s->n_entries++;
	e->views = calloc(s->rl->n_nodes, sizeof *e->views);
	if (!e->name || !e->views ||
	    asprintf(&e->keys[0], "%s%s", s->p->prefix, e->name) < 0) {
		e->keys[0] = NULL;
		return -1;
	}
	for (size_t k = 1; k < 8; k++)
		if (!(e->keys[k] = keys_derived(e->keys[0], suffix[k])))
			return -1;
	return 0;
}

/* ---- what a server says ---------------------------------------------- */

static bool is_str(const redisReply *r)
{
	return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

static bool is_int(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_INTEGER;
}

/* r: a bulk string or nil. */
static int copy_opt(const redisReply *r, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (!r || r->type == REDIS_REPLY_NIL)
		return 0;
	if (!is_str(r) || !(*out = engine_dup(r->str, r->len)))
		return -1;
	*len = r->len;
	return 0;
}

static long long to_ll(const redisReply *r, long long dflt)
{
	char *end;
	long long v;

	if (is_int(r))
		return r->integer;
	if (!is_str(r))
		return dflt;
	v = strtoll(r->str, &end, 10);
	return end != r->str && *end == '\0' ? v : dflt;
}

static int parse_holders(struct view *v, const redisReply *r)
{
	size_t n = r->elements / 4;

	if (r->elements % 4)
		return -1;
	v->holders = calloc(n ? n : 1, sizeof *v->holders);
	if (!v->holders)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct holder *h = &v->holders[i];
		redisReply **e = r->element + 4 * i;

		v->n_holders++;
		if (!is_str(e[0]) || !is_int(e[1]) ||
		    copy_opt(e[0], &h->token, &h->token_len) < 0 ||
		    copy_opt(e[2], &h->info, &h->info_len) < 0)
			return -1;
		h->left_ms = e[1]->integer;
		h->slot = (long)to_ll(e[3], -1);
	}
	return 0;
}

static int parse_waiters(struct view *v, const redisReply *r)
{
	size_t n = r->elements / 3;

	if (r->elements % 3)
		return -1;
	v->waiters = calloc(n ? n : 1, sizeof *v->waiters);
	if (!v->waiters)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct waiter *w = &v->waiters[i];
		redisReply **e = r->element + 3 * i;

		v->n_waiters++;
		if (copy_opt(e[0], &w->token, &w->token_len) < 0 || !w->token ||
		    copy_opt(e[2], &w->info, &w->info_len) < 0)
			return -1;
		w->ticket = to_ll(e[1], -1);
	}
	return 0;
}

/* The status script's reply; see src/redis/lua/status.lua. */
static int parse_view(struct view *v, const redisReply *r)
{
	redisReply **e;

	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 9)
		return -1;
	e = r->element;
	if (!is_int(e[0]) || !is_str(e[1]) || !is_int(e[2]) ||
	    e[5]->type != REDIS_REPLY_ARRAY || e[6]->type != REDIS_REPLY_ARRAY ||
	    !is_int(e[7]) || !is_int(e[8]) || e[1]->len >= sizeof v->type)
		return -1;
	memcpy(v->type, e[1]->str, e[1]->len + 1);
	v->pttl_ms = e[2]->integer;
	v->fence = to_ll(e[3], -1);
	if (is_str(e[4]))
		snprintf(v->mode, sizeof v->mode, "%.*s", (int)e[4]->len, e[4]->str);
	v->n_waiting = e[7]->integer;
	v->n_writers = e[8]->integer;
	if (parse_holders(v, e[5]) < 0 || parse_waiters(v, e[6]) < 0)
		return -1;
	if (strcmp(v->type, "none") == 0)
		v->says = SAYS_FREE;
	else if (strcmp(v->type, "string") == 0)
		v->says = SAYS_HELD;
	else if (strcmp(v->type, "zset") == 0 && v->mode[0])
		v->says = v->n_holders ? SAYS_HELD : SAYS_FREE;
	else
		v->says = SAYS_OTHER;	/* not a lock, or another client's set */
	return 0;
}

/* One round: the status script for up to NODE_MAX_CMDS locks. In a Redis
 * Cluster the locks of one round may live on different nodes: there, and
 * once a round of several failed, one lock a round. */
static void ask(struct status *s, size_t first, size_t n)
{
	struct cmd cmds[NODE_MAX_CMDS];
	struct node *nodes = s->rl->nodes;
	bool all_done = true;

	if (n > 1 && cluster_seen()) {
		for (size_t i = 0; i < n; i++)
			ask(s, first + i, 1);
		return;
	}

	for (size_t i = 0; i < n; i++)
		cmds[i] = (struct cmd){ &script_status, 8,
					(const char **)s->entries[first + i].keys, NULL };
	fanout_round(nodes, s->rl->n_nodes, cmds, (int)n, s->p->node_timeout_ms);
	for (size_t k = 0; k < s->rl->n_nodes; k++)
		all_done &= nodes[k].state == NODE_DONE;
	if (!all_done && n > 1 && cluster_seen()) {
		fanout_end(nodes, s->rl->n_nodes);
		ask(s, first, n);
		return;
	}
	for (size_t k = 0; k < s->rl->n_nodes; k++)
		for (size_t i = 0; i < n; i++) {
			struct view *v = &s->entries[first + i].views[k];

			if (nodes[k].state != NODE_DONE) {
				v->says = SAYS_FAILED;
				v->err = nodes[k].err;
			} else if (parse_view(v, nodes[k].replies[i]) < 0) {
				v->says = SAYS_FAILED;
				error_set(&v->err, EX_SOFTWARE, "%s: unexpected reply to the status script",
					  nodes[k].url->text);
			}
		}
	fanout_end(nodes, s->rl->n_nodes);
}

/* ---- what a majority says -------------------------------------------- */

static bool has_token(const struct view *v, const char *t, size_t len)
{
	for (size_t i = 0; i < v->n_holders; i++)
		if (v->holders[i].token_len == len &&
		    memcmp(v->holders[i].token, t, len) == 0)
			return true;
	return false;
}

static bool same_view(const struct view *a, const struct view *b)
{
	if (a->says != b->says || a->says == SAYS_FAILED ||
	    strcmp(a->type, b->type) != 0 || a->n_holders != b->n_holders)
		return false;
	for (size_t i = 0; i < a->n_holders; i++)
		if (!has_token(b, a->holders[i].token, a->holders[i].token_len))
			return false;
	return true;
}

static void merge_holders(struct merged *m, const struct view *views, size_t n)
{
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; views[k].says == SAYS_HELD && i < views[k].n_holders; i++) {
			const struct holder *h = &views[k].holders[i];
			struct show_info hi;
			long long fence = -1;
			size_t j;

			if (h->info && show_info_parse(h->info, h->info_len, &hi) == 0) {
				fence = hi.fence;
				show_info_free(&hi);
			}
			for (j = 0; j < m->n_holders; j++)
				if (m->holders[j].h->token_len == h->token_len &&
				    memcmp(m->holders[j].h->token, h->token, h->token_len) == 0)
					break;
			if (j == m->n_holders) {
				m->holders[m->n_holders++] = (struct merged_holder){
					.h = h, .left_ms = h->left_ms, .fence = fence,
				};
				continue;
			}
			m->holders[j].n_servers++;
			if (!m->holders[j].h->info && h->info)
				m->holders[j].h = h;
			if (h->left_ms < m->holders[j].left_ms)
				m->holders[j].left_ms = h->left_ms;
			if (fence > m->holders[j].fence)
				m->holders[j].fence = fence;
		}
	for (size_t j = 0; j < m->n_holders; j++)
		m->holders[j].n_servers++;	/* counted from 0 above */
}

static int by_ticket(const void *a, const void *b)
{
	const struct waiter *x = *(const struct waiter *const *)a;
	const struct waiter *y = *(const struct waiter *const *)b;

	return (x->ticket > y->ticket) - (x->ticket < y->ticket);
}

static void merge_waiters(struct merged *m, const struct view *views, size_t n)
{
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; views[k].says != SAYS_FAILED && i < views[k].n_waiters; i++) {
			const struct waiter *w = &views[k].waiters[i];
			size_t j;

			for (j = 0; j < m->n_waiters; j++)
				if (m->waiters[j]->token_len == w->token_len &&
				    memcmp(m->waiters[j]->token, w->token, w->token_len) == 0)
					break;
			if (j == m->n_waiters)
				m->waiters[m->n_waiters++] = w;
			else if (!m->waiters[j]->info && w->info)
				m->waiters[j] = w;
		}
	if (m->n_waiters > 1)
		qsort(m->waiters, m->n_waiters, sizeof *m->waiters, by_ticket);
}

static int merge(struct merged *m, const struct entry *e, size_t n)
{
	size_t need = quorum_majority(n), n_says[4] = { 0 }, best = 0, n_h = 0, n_w = 0;

	*m = (struct merged){ .fence = -1 };
	for (size_t k = 0; k < n; k++) {
		const struct view *v = &e->views[k];
		size_t agree = 0;

		n_says[v->says]++;
		n_h += v->n_holders;
		n_w += v->n_waiters;
		if (v->says == SAYS_FAILED) {
			if (!m->err || v->err.exit == EX_NOPERM)
				m->err = &v->err;
			continue;
		}
		m->n_ok++;
		for (size_t j = 0; j < n; j++)
			agree += same_view(v, &e->views[j]);
		if (agree > m->n_agree) {
			m->n_agree = agree;
			best = k;
		}
		if (v->fence > m->fence)
			m->fence = v->fence;
		if (v->n_waiting > m->n_waiting)
			m->n_waiting = v->n_waiting;
		if (v->n_writers > m->n_writers)
			m->n_writers = v->n_writers;
	}
	m->holders = calloc(n_h ? n_h : 1, sizeof *m->holders);
	m->waiters = calloc(n_w ? n_w : 1, sizeof *m->waiters);
	if (!m->holders || !m->waiters)
		return -1;
	m->v = &e->views[best];
	if (m->n_ok < need) {
		m->state = ST_UNKNOWN;
	} else if (m->n_agree >= need) {
		m->state = m->v->says == SAYS_HELD ? ST_HELD :
			   m->v->says == SAYS_FREE ? ST_FREE : ST_OTHER;
	} else {
		/* no majority agrees on who holds it: held if a majority says
		 * held (nobody else can get a majority), and so on */
		m->state = n_says[SAYS_HELD] >= need ? ST_HELD :
			   n_says[SAYS_FREE] >= need ? ST_FREE :
			   n_says[SAYS_OTHER] >= need ? ST_OTHER : ST_SPLIT;
		for (size_t k = 0; k < n; k++)
			if (e->views[k].says == (m->state == ST_HELD ? SAYS_HELD :
						 m->state == ST_FREE ? SAYS_FREE : SAYS_OTHER))
				m->v = &e->views[k];
	}
	merge_holders(m, e->views, n);
	merge_waiters(m, e->views, n);
	return 0;
}

static void merged_free(struct merged *m)
{
	free(m->holders);
	free(m->waiters);
}


/* ---- what the core prints -------------------------------------------- */

/* What one server says, in a few words. */
static void says_text(const struct view *v, char *out, size_t len)
{
	char w[320], ttl[32];

	switch (v->says) {
	case SAYS_FAILED:
		snprintf(out, len, "%s", v->err.msg);
		break;
	case SAYS_FREE:
		snprintf(out, len, "free");
		break;
	case SAYS_OTHER:
		show_ttl(v->pttl_ms, ttl, sizeof ttl);
		snprintf(out, len, "a %s, not a lock (%s)", v->type, ttl);
		break;
	case SAYS_HELD:
		show_who(v->holders[0].token, v->holders[0].token_len,
			 v->holders[0].info, v->holders[0].info_len, w, sizeof w);
		show_ttl(v->holders[0].left_ms, ttl, sizeof ttl);
		snprintf(out, len, "held by %s, TTL %s%s", w, ttl,
			 v->n_holders > 1 ? " and more" : "");
		if (v->n_holders > 1)
			snprintf(out + strlen(out), len - strlen(out), " (%zu holders)",
				 v->n_holders);
		break;
	}
}

static int dup_to(const char *s, size_t len, char **out, size_t *out_len)
{
	*out = NULL;
	if (out_len)
		*out_len = 0;
	if (!s)
		return 0;
	if (!(*out = engine_dup(s, len)))
		return -1;
	if (out_len)
		*out_len = len;
	return 0;
}

static int publish_server(const struct node *n, const struct view *v,
			  struct status_server *out)
{
	static const char *const kinds[] = { "error", "free", "held", "other" };
	char says[700];

	says_text(v, says, sizeof says);
	/* an error names the server already */
	if (v->says == SAYS_FAILED && strncmp(says, n->url->text, strlen(n->url->text)) == 0 &&
	    says[strlen(n->url->text)] == ':')
		memmove(says, says + strlen(n->url->text) + 2,
			strlen(says + strlen(n->url->text) + 2) + 1);
	*out = (struct status_server){
		.url = strdup(n->url->text),
		.says = strdup(says),
		.failed = v->says == SAYS_FAILED,
		.ttl_ms = v->says == SAYS_FAILED ? -1 : v->pttl_ms,
		.fence = v->fence,
	};
	snprintf(out->kind, sizeof out->kind, "%s", kinds[v->says]);
	if (v->says != SAYS_FAILED)
		snprintf(out->type, sizeof out->type, "%s", v->type);
	out->tokens = calloc(v->n_holders ? v->n_holders : 1, sizeof *out->tokens);
	if (!out->url || !out->says || !out->tokens)
		return -1;
	for (size_t i = 0; i < v->n_holders; i++, out->n_tokens++)
		if (!(out->tokens[i] = v->holders[i].token ?
		      engine_dup(v->holders[i].token, v->holders[i].token_len) :
		      strdup("")))
			return -1;
	return 0;
}

/* The merged view of e as the core prints it. */
static int publish(const struct status *s, const struct entry *e,
		   const struct merged *m, struct status_lock *out)
{
	size_t n_nodes = s->rl->n_nodes;

	out->key = strdup(e->keys[0]);
	out->state = m->state;
	out->ttl_ms = -2;
	if (m->state != ST_UNKNOWN) {
		snprintf(out->type, sizeof out->type, "%s", m->v->type);
		snprintf(out->mode, sizeof out->mode, "%s", m->v->mode);
		out->ttl_ms = m->state == ST_FREE ? -2 : m->v->pttl_ms;
	}
	out->fence = m->fence;
	out->n_waiting = m->n_waiting;
	out->n_writers = m->n_writers;
	out->n_agree = m->n_agree;
	if (m->err)
		out->err = *m->err;
	out->holders = calloc(m->n_holders ? m->n_holders : 1, sizeof *out->holders);
	out->waiters = calloc(m->n_waiters ? m->n_waiters : 1, sizeof *out->waiters);
	out->servers = calloc(n_nodes, sizeof *out->servers);
	if (!out->key || !out->holders || !out->waiters || !out->servers)
		return -1;
	for (size_t i = 0; i < m->n_holders; i++, out->n_holders++) {
		const struct merged_holder *mh = &m->holders[i];
		struct status_holder *h = &out->holders[i];

		/* slot i's key is :slots:i, 0 to n-1; every engine shows
		 * slots as 1 to n */
		*h = (struct status_holder){
			.left_ms = mh->left_ms, .fence = mh->fence,
			.slot = mh->h->slot >= 0 ? mh->h->slot + 1 : -1,
			.n_servers = mh->n_servers,
		};
		if (dup_to(mh->h->token, mh->h->token_len, &h->token, &h->token_len) < 0 ||
		    dup_to(mh->h->info, mh->h->info_len, &h->info, &h->info_len) < 0)
			return -1;
	}
	for (size_t i = 0; i < m->n_waiters; i++, out->n_waiters++) {
		const struct waiter *w = m->waiters[i];
		struct status_waiter *o = &out->waiters[i];

		o->ticket = w->ticket;
		if (dup_to(w->token, w->token_len, &o->token, &o->token_len) < 0 ||
		    dup_to(w->info, w->info_len, &o->info, &o->info_len) < 0)
			return -1;
	}
	for (size_t k = 0; k < n_nodes; k++, out->n_servers++)
		if (publish_server(&s->rl->nodes[k], &e->views[k], &out->servers[k]) < 0)
			return -1;
	return 0;
}

int redis_status(struct lock *lk, struct status_lock *locks, size_t n,
		 struct error *err)
{
	struct status s = { .p = lk->p, .rl = redis_rlock(lk) };
	int r = 0;

	/* names given (the first was checked when lk was opened); a listing
	 * shows whatever keys it found */
	for (size_t i = 1; *lk->p->name && i < n; i++) {
		char *key;
		int bad;

		if (asprintf(&key, "%s%s", lk->p->prefix, locks[i].name) < 0) {
			error_set(err, EX_OSERR, "out of memory");
			return -1;
		}
		bad = keys_check(key, err->msg, sizeof err->msg);
		free(key);
		if (bad) {
			err->exit = EX_USAGE;
			return -1;
		}
	}
	for (size_t i = 0; i < n && r == 0; i++)
		r = add_entry(&s, locks[i].name, strlen(locks[i].name));
	for (size_t e = 0; r == 0 && e < s.n_entries; e += NODE_MAX_CMDS)
		ask(&s, e, s.n_entries - e < NODE_MAX_CMDS ? s.n_entries - e :
		    NODE_MAX_CMDS);
	for (size_t e = 0; r == 0 && e < s.n_entries; e++) {
		struct merged m;

		r = merge(&m, &s.entries[e], s.rl->n_nodes);
		if (r == 0)
			r = publish(&s, &s.entries[e], &m, &locks[e]);
		merged_free(&m);
	}
	entries_free(&s);
	if (r < 0)
		error_set(err, EX_OSERR, "out of memory");
	return r;
}
