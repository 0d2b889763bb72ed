/* status.c - dlock status: what each server says of a lock (one round trip
 * each: the status script), merged into what a majority agrees on, printed
 * as a table or as JSON. With no KEY, every lock under the prefix, found
 * with SCAN. */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "commands.h"
#include "cluster.h"
#include "config.h"
#include "fanout.h"
#include "quorum.h"
#include "scripts.h"
#include "show.h"

#define SCAN_COUNT "1000"

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

enum state { ST_HELD, ST_FREE, ST_OTHER, ST_SPLIT, ST_UNKNOWN };
static const char *const state_names[] = { "held", "free", "other", "split", "unknown" };

struct merged {
	enum state state;
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
	const struct command_args *a;
	struct lock lk;		/* its nodes, for every lock's round */
	struct entry *entries;
	size_t n_entries, cap;
	bool listing;		/* no KEY given */
	int64_t wall_ms;
};

static char *dup_bytes(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}

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
		entry_free(&s->entries[e], s->lk.n_nodes);
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
	*e = (struct entry){ .name = dup_bytes(name, len) };
	s->n_entries++;
	e->views = calloc(s->lk.n_nodes, sizeof *e->views);
	if (!e->name || !e->views ||
	    asprintf(&e->keys[0], "%s%s", s->p->prefix, e->name) < 0) {
		e->keys[0] = NULL;
		return -1;
	}
	for (size_t k = 1; k < 8; k++)
		if (!(e->keys[k] = lock_derived_key(e->keys[0], suffix[k])))
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
	if (!is_str(r) || !(*out = dup_bytes(r->str, r->len)))
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

/* The status script's reply; see src/lua/status.lua. */
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
	struct node *nodes = s->lk.nodes;
	bool all_done = true;

	if (n > 1 && cluster_seen()) {
		for (size_t i = 0; i < n; i++)
			ask(s, first + i, 1);
		return;
	}

	for (size_t i = 0; i < n; i++)
		cmds[i] = (struct cmd){ &script_status, 8,
					(const char **)s->entries[first + i].keys, NULL };
	fanout_round(nodes, s->lk.n_nodes, cmds, (int)n, s->p->node_timeout_ms);
	for (size_t k = 0; k < s->lk.n_nodes; k++)
		all_done &= nodes[k].state == NODE_DONE;
	if (!all_done && n > 1 && cluster_seen()) {
		fanout_end(nodes, s->lk.n_nodes);
		ask(s, first, n);
		return;
	}
	for (size_t k = 0; k < s->lk.n_nodes; k++)
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
	fanout_end(nodes, s->lk.n_nodes);
}

/* ---- every lock under the prefix ------------------------------------- */

/* A key beside a lock: LOCK + tail, where tail is one of the lock's
 * suffixes (see lock.c and REDIS KEYS). */
static bool side_tail(const char *t, size_t n)
{
	static const char *const whole[] = {
		":fence", ":owner", ":mode", ":queue", ":queue:info", ":alive",
		":ticket", ":slots", ":wake", ":writers", ":history", ":notice",
		NULL,
	};
	static const char *const open[] = { ":slots:", ":wake:", ":notice:", NULL };

	for (const char *const *w = whole; *w; w++)
		if (n == strlen(*w) && memcmp(t, *w, n) == 0)
			return true;
	for (const char *const *o = open; *o; o++)
		if (n > strlen(*o) && memcmp(t, *o, strlen(*o)) == 0)
			return true;
	return false;
}

/* A {hash tag}, as lock_derived_key() tells one. */
static bool has_tag(const char *k, size_t n)
{
	const char *open = memchr(k, '{', n);
	const char *close = open ? memchr(open + 1, '}', n - (size_t)(open + 1 - k)) : NULL;

	return close && close > open + 1;
}

static bool under(const char *k, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);

	return n >= p && memcmp(k, prefix, p) == 0;
}

static bool is_side_key(const char *k, size_t n, const char *prefix)
{
	/* "{LOCK}tail", for a LOCK without a hash tag */
	for (size_t i = 1; n > 0 && k[0] == '{' && i < n; i++)
		if (k[i] == '}' && side_tail(k + i + 1, n - i - 1) &&
		    under(k + 1, i - 1, prefix) && !has_tag(k + 1, i - 1))
			return true;
	/* "LOCKtail", for a LOCK with one */
	for (size_t i = 0; i < n; i++)
		if (k[i] == ':' && side_tail(k + i, n - i) && has_tag(k, i) &&
		    under(k, i, prefix))
			return true;
	return false;
}

/* SCAN's MATCH pattern: the prefix, its glob characters escaped, '*'. */
static char *pattern_of(const char *prefix)
{
	char *pat = malloc(2 * strlen(prefix) + 2), *o = pat;

	if (!pat)
		return NULL;
	for (const char *c = prefix; *c; c++) {
		if (strchr("*?[]\\", *c))
			*o++ = '\\';
		*o++ = *c;
	}
	strcpy(o, "*");
	return pat;
}

static int by_name(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Every lock key under the prefix on one server, SCAN page by page. */
static int scan_node(struct status *s, struct node *n, const char *pattern)
{
	char cursor[32] = "0";
	size_t plen = strlen(s->p->prefix);

	do {
		const char *argv[] = { "SCAN", cursor, "MATCH", pattern, "COUNT", SCAN_COUNT };
		struct cmd cmd = { NULL, 6, argv, NULL };
		const redisReply *r;

		if (fanout_round(n, 1, &cmd, 1, s->p->node_timeout_ms) != 1)
			return -1;
		r = n->replies[0];
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    !is_str(r->element[0]) || r->element[0]->len >= sizeof cursor ||
		    r->element[1]->type != REDIS_REPLY_ARRAY) {
			error_set(&n->err, EX_SOFTWARE, "%s: unexpected reply to SCAN",
				  n->url->text);
			node_end(n);
			return -1;
		}
		memcpy(cursor, r->element[0]->str, r->element[0]->len + 1);
		for (size_t i = 0; i < r->element[1]->elements; i++) {
			const redisReply *k = r->element[1]->element[i];

			/* a name with a NUL byte is no name a command line gives */
			if (!is_str(k) || k->len <= plen || memchr(k->str, '\0', k->len) ||
			    is_side_key(k->str, k->len, s->p->prefix))
				continue;
			if (add_entry(s, k->str + plen, k->len - plen) < 0) {
				node_end(n);
				error_set(&n->err, EX_OSERR, "out of memory");
				return -1;
			}
		}
		node_end(n);
	} while (strcmp(cursor, "0") != 0);
	return 0;
}

/* One server, or each master of the Redis Cluster it belongs to (SCAN
 * lists the keys of the node it is sent to only). */
static int scan_one(struct status *s, struct node *n, const char *pattern)
{
	struct url *masters;
	int n_masters = cluster_masters(n, &masters, 64, s->p->node_timeout_ms);
	int r = 0;

	if (n_masters <= 0)
		return n_masters < 0 ? -1 : scan_node(s, n, pattern);
	for (int i = 0; i < n_masters && r == 0; i++) {
		struct node m;

		node_init(&m, &masters[i], n->password);
		if ((r = scan_node(s, &m, pattern)) < 0) {
			n->err = m.err;
			n->state = NODE_FAILED;
		}
		node_end(&m);
		node_close(&m);
	}
	for (int i = 0; i < n_masters; i++)
		cluster_drop(&masters[i]);
	free(masters);
	return r;
}

/* Returns 0, or -1 with err when fewer than a majority could be scanned. */
static int scan_all(struct status *s, struct error *err)
{
	char *pattern = pattern_of(s->p->prefix);
	size_t n_ok = 0, kept = 0;

	if (!pattern) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < s->lk.n_nodes; i++)
		n_ok += scan_one(s, &s->lk.nodes[i], pattern) == 0;
	free(pattern);
	if (n_ok < quorum_majority(s->lk.n_nodes)) {
		const struct error *worst = fanout_worst_error(s->lk.nodes, s->lk.n_nodes);

		if (worst && s->lk.n_nodes == 1)
			*err = *worst;
		else
			error_set(err, worst ? worst->exit : EX_UNAVAILABLE,
				  "%zu of %zu servers listed their locks, %zu needed%s%s%s",
				  n_ok, s->lk.n_nodes, quorum_majority(s->lk.n_nodes),
				  worst ? " (" : "", worst ? worst->msg : "", worst ? ")" : "");
		return -1;
	}
	/* The same lock from several servers once. */
	if (s->n_entries > 1)
		qsort(s->entries, s->n_entries, sizeof *s->entries, by_name);
	for (size_t i = 0; i < s->n_entries; i++) {
		if (kept > 0 && strcmp(s->entries[kept - 1].name, s->entries[i].name) == 0)
			entry_free(&s->entries[i], s->lk.n_nodes);
		else
			s->entries[kept++] = s->entries[i];
	}
	s->n_entries = kept;
	return 0;
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

/* ---- words ------------------------------------------------------------ */

static const char *mode_of(const struct merged *m, char *buf, size_t len)
{
	const struct view *v = m->v;

	if (m->state != ST_HELD && m->state != ST_SPLIT)
		return NULL;
	if (strcmp(v->type, "string") == 0)
		return m->n_holders > 0 && m->holders[0].h->info ? "exclusive" : "foreign";
	if (strcmp(v->mode, "s") == 0)
		return "shared";
	if (v->mode[0]) {
		snprintf(buf, len, "limit %s", v->mode);
		return buf;
	}
	return NULL;
}

/* When the holder's command finished (--min-hold keeps the lock), by its
 * clock; -1 while it runs, or for a foreign holder. */
static int64_t finished_ms(const struct holder *h)
{
	struct show_info hi;
	int64_t ms;

	if (!h->info || show_info_parse(h->info, h->info_len, &hi) < 0)
		return -1;
	ms = hi.finished_ms;
	show_info_free(&hi);
	return ms;
}

/* Held, and every holder's command has finished: --min-hold keeps it. */
static bool all_finished(const struct merged *m)
{
	if (m->state != ST_HELD || m->n_holders == 0)
		return false;
	for (size_t i = 0; i < m->n_holders; i++)
		if (finished_ms(m->holders[i].h) < 0)
			return false;
	return true;
}

/* "ann@db2 pid 4711 (./nightly.sh)", or what a foreign holder is. */
static void who(const struct holder *h, char *out, size_t len)
{
	struct show_info hi;
	char host[128], user[64], cmd[160], value[80];

	if (h->info && show_info_parse(h->info, h->info_len, &hi) == 0) {
		show_text(hi.host, strlen(hi.host), host, sizeof host);
		show_text(hi.user, strlen(hi.user), user, sizeof user);
		show_text(hi.command, hi.command_len, cmd, sizeof cmd);
		snprintf(out, len, "%s@%s pid %lld (%s)%s", user, host, hi.pid, cmd,
			 hi.finished_ms >= 0 ? ", command finished" : "");
		show_info_free(&hi);
		return;
	}
	show_text(h->token, h->token_len, value, sizeof value);
	snprintf(out, len, "another client, value '%s'%s", value,
		 h->token_len >= sizeof value - 1 ? "..." : "");
}

static void ttl_text(int64_t ms, char *out, size_t len)
{
	if (ms < 0)
		snprintf(out, len, "no TTL");
	else
		show_duration(ms, out, len);
}

/* ---- text ------------------------------------------------------------- */

/* cmd + " (finished 2.0s ago)" */
static void finished(int64_t then_ms, int64_t now_ms, char *cmd, size_t len)
{
	char ago[32];
	size_t used = strlen(cmd);

	show_ago(then_ms, now_ms, ago, sizeof ago);
	if (used < len)
		snprintf(cmd + used, len - used, " (finished %s)", ago);
}

static void print_holders(const struct status *s, const struct merged *m)
{
	bool limit = m->v->mode[0] && strcmp(m->v->mode, "s") != 0;
	bool several = s->lk.n_nodes > 1;
	struct table t;
	const char *head[] = { "HOST", "PID", "USER", "SINCE", "TTL", "FENCE",
			       limit ? "SLOT" : NULL, several ? "SERVERS" : NULL,
			       "COMMAND" };
	const char *row[9];
	size_t n_cols = 0;

	table_init(&t, 7 + limit + several, "  ");
	for (size_t c = 0; c < 9; c++)
		if (head[c])
			row[n_cols++] = head[c];
	table_add(&t, row);
	for (size_t i = 0; i < m->n_holders; i++) {
		const struct merged_holder *mh = &m->holders[i];
		struct show_info hi;
		char host[128], pid[24], user[64], since[32], ttl[32], fence[24];
		char slot[24], servers[32], cmd[512], value[256];

		ttl_text(mh->left_ms, ttl, sizeof ttl);
		snprintf(servers, sizeof servers, "%zu/%zu", mh->n_servers, s->lk.n_nodes);
		snprintf(slot, sizeof slot, "%ld", mh->h->slot);
		if (!mh->h->info || show_info_parse(mh->h->info, mh->h->info_len, &hi) < 0) {
			show_text(mh->h->token, mh->h->token_len, value, sizeof value);
			snprintf(cmd, sizeof cmd, "(another client: value '%s')", value);
			row[0] = "-", row[1] = "-", row[2] = "-", row[3] = "-";
			row[4] = ttl, row[5] = "-";
		} else {
			show_text(hi.host, strlen(hi.host), host, sizeof host);
			show_text(hi.user, strlen(hi.user), user, sizeof user);
			show_text(hi.command, hi.command_len, cmd, sizeof cmd);
			if (hi.finished_ms >= 0)
				finished(hi.finished_ms, s->wall_ms, cmd, sizeof cmd);
			snprintf(pid, sizeof pid, "%lld", hi.pid);
			show_ago(hi.since_ms, s->wall_ms, since, sizeof since);
			snprintf(fence, sizeof fence, "%lld", mh->fence);
			row[0] = host, row[1] = pid, row[2] = user, row[3] = since;
			row[4] = ttl, row[5] = mh->fence >= 0 ? fence : "-";
			show_info_free(&hi);
		}
		n_cols = 6;
		if (limit)
			row[n_cols++] = mh->h->slot >= 0 ? slot : "-";
		if (several)
			row[n_cols++] = servers;
		row[n_cols] = cmd;
		table_add(&t, row);
	}
	table_print(&t, stdout);
	table_free(&t);
}

static void print_waiters(const struct status *s, const struct merged *m)
{
	struct table t;
	const char *head[] = { "POS", "HOST", "PID", "USER", "SINCE", "COMMAND" };

	printf("  waiting in the --fair queue, in its order:\n");
	table_init(&t, 6, "  ");
	table_add(&t, head);
	for (size_t i = 0; i < m->n_waiters; i++) {
		const struct waiter *w = m->waiters[i];
		struct show_info hi;
		char pos[24], host[128], pid[24], user[64], since[32], cmd[512];
		const char *row[] = { pos, "-", "-", "-", "-", "(no holder info)" };

		snprintf(pos, sizeof pos, "%zu", i + 1);
		if (w->info && show_info_parse(w->info, w->info_len, &hi) == 0) {
			show_text(hi.host, strlen(hi.host), host, sizeof host);
			show_text(hi.user, strlen(hi.user), user, sizeof user);
			show_text(hi.command, hi.command_len, cmd, sizeof cmd);
			snprintf(pid, sizeof pid, "%lld", hi.pid);
			show_ago(hi.since_ms, s->wall_ms, since, sizeof since);
			row[1] = host, row[2] = pid, row[3] = user, row[4] = since;
			row[5] = cmd;
			show_info_free(&hi);
		}
		table_add(&t, row);
	}
	table_print(&t, stdout);
	table_free(&t);
}

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
		ttl_text(v->pttl_ms, ttl, sizeof ttl);
		snprintf(out, len, "a %s, not a lock (%s)", v->type, ttl);
		break;
	case SAYS_HELD:
		who(&v->holders[0], w, sizeof w);
		ttl_text(v->holders[0].left_ms, ttl, sizeof ttl);
		snprintf(out, len, "held by %s, TTL %s%s", w, ttl,
			 v->n_holders > 1 ? " and more" : "");
		if (v->n_holders > 1)
			snprintf(out + strlen(out), len - strlen(out), " (%zu holders)",
				 v->n_holders);
		break;
	}
}

static void print_servers(const struct status *s, const struct entry *e)
{
	struct table t;
	const char *head[] = { "SERVER", "SAYS" };

	table_init(&t, 2, "  ");
	table_add(&t, head);
	for (size_t k = 0; k < s->lk.n_nodes; k++) {
		char says[700];
		const char *row[] = { s->lk.nodes[k].url->text, says };

		says_text(&e->views[k], says, sizeof says);
		/* an error names the server already */
		if (e->views[k].says == SAYS_FAILED &&
		    strncmp(says, row[0], strlen(row[0])) == 0 &&
		    says[strlen(row[0])] == ':')
			memmove(says, says + strlen(row[0]) + 2,
				strlen(says + strlen(row[0]) + 2) + 1);
		table_add(&t, row);
	}
	table_print(&t, stdout);
	table_free(&t);
}

/* "nightly: held, exclusive, fencing counter 42; 3 of 3 servers agree" */
static void print_block(const struct status *s, const struct entry *e,
			const struct merged *m)
{
	char name[300], buf[32], ttl[32];
	const char *mode = mode_of(m, buf, sizeof buf);

	show_text(e->name, strlen(e->name), name, sizeof name);
	printf("%s: %s", name, m->state == ST_OTHER ? "not a lock" :
	       m->state == ST_SPLIT ? "no majority" :
	       m->state == ST_UNKNOWN ? "unknown" : state_names[m->state]);
	if (all_finished(m))
		printf(", command finished");
	if (m->state == ST_OTHER) {
		ttl_text(m->v->pttl_ms, ttl, sizeof ttl);
		printf(" (a %s, %s): left alone", m->v->type, ttl);
	}
	if (mode)
		printf(", %s", mode);
	if (m->state == ST_HELD && m->n_holders > 1 && m->v->mode[0])
		printf(", %zu holders", m->n_holders);
	if (m->state == ST_HELD && m->v->pttl_ms == -1)
		printf(", never expires (no TTL)");
	if (m->n_waiting > 0)
		printf(", %lld waiting", m->n_waiting);
	if (m->n_waiters > 0)
		printf(" (%zu in the --fair queue)", m->n_waiters);
	if (m->fence >= 0)
		printf(", fencing counter %lld", m->fence);
	if (s->lk.n_nodes > 1)
		printf("; %zu of %zu servers agree%s", m->n_agree, s->lk.n_nodes,
		       m->n_agree >= quorum_majority(s->lk.n_nodes) ? "" :
		       ": no majority");
	putchar('\n');
	if (m->n_holders > 0 && m->state != ST_OTHER)
		print_holders(s, m);
	if (m->n_waiters > 0)
		print_waiters(s, m);
	if (s->lk.n_nodes > 1)
		print_servers(s, e);
}

/* With no KEY: one line a lock. */
static void print_list(const struct status *s, const struct merged *ms)
{
	bool several = s->lk.n_nodes > 1;
	struct table t;
	const char *head[] = { "LOCK", "STATE", "MODE", "HOLDERS", "TTL", "SINCE",
			       several ? "AGREE" : "HOLDER", "HOLDER" };

	table_init(&t, 7 + several, NULL);
	table_add(&t, head);
	for (size_t e = 0; e < s->n_entries; e++) {
		const struct merged *m = &ms[e];
		char name[300], buf[32], n_holders[24], ttl[32], since[32] = "-";
		char holder[400] = "-", agree[32];
		const char *mode = mode_of(m, buf, sizeof buf);
		const char *row[8];
		int64_t first_since = -1;
		size_t c = 0;

		show_text(s->entries[e].name, strlen(s->entries[e].name), name, sizeof name);
		for (size_t i = 0; i < m->n_holders; i++) {
			struct show_info hi;

			if (m->holders[i].h->info &&
			    show_info_parse(m->holders[i].h->info,
					    m->holders[i].h->info_len, &hi) == 0) {
				if (first_since < 0 || hi.since_ms < first_since)
					first_since = hi.since_ms;
				show_info_free(&hi);
			}
		}
		if (m->n_holders > 0 && m->state != ST_OTHER) {
			who(m->holders[0].h, holder, sizeof holder);
			if (m->n_holders > 1)
				snprintf(holder + strlen(holder), sizeof holder - strlen(holder),
					 " and %zu more", m->n_holders - 1);
		} else if (m->state == ST_OTHER) {
			snprintf(holder, sizeof holder, "a %s: not a lock", m->v->type);
		}
		if (first_since >= 0)
			show_ago(first_since, s->wall_ms, since, sizeof since);
		/* the lock key's: a shared lock's longest lease */
		if (m->state == ST_HELD || m->state == ST_OTHER)
			ttl_text(m->v->pttl_ms, ttl, sizeof ttl);
		else
			strcpy(ttl, "-");
		snprintf(n_holders, sizeof n_holders, "%zu", m->n_holders);
		snprintf(agree, sizeof agree, "%zu/%zu", m->n_agree, s->lk.n_nodes);
		row[c++] = name;
		row[c++] = m->state == ST_OTHER ? m->v->type : state_names[m->state];
		row[c++] = mode;
		row[c++] = m->state == ST_OTHER ? NULL : n_holders;
		row[c++] = ttl;
		row[c++] = since;
		if (several)
			row[c++] = agree;
		row[c++] = holder;
		table_add(&t, row);
	}
	table_print(&t, stdout);
	table_free(&t);
}

/* ---- JSON -------------------------------------------------------------- */

static void json_info(struct json *j, const char *info, size_t len)
{
	struct show_info hi;
	bool ok = info && show_info_parse(info, len, &hi) == 0;

	json_key(j, "host");
	ok ? json_cstr(j, hi.host) : json_null(j);
	json_key(j, "pid");
	json_int_or_null(j, ok ? hi.pid : -1);
	json_key(j, "user");
	ok ? json_cstr(j, hi.user) : json_null(j);
	json_key(j, "command");
	ok ? json_str(j, hi.command, hi.command_len) : json_null(j);
	json_key(j, "since_ms");
	json_int_or_null(j, ok ? hi.since_ms : -1);
	if (ok)
		show_info_free(&hi);
}

static void json_lock(struct json *j, const struct status *s,
		      const struct entry *e, const struct merged *m)
{
	char buf[32];
	const char *mode = mode_of(m, buf, sizeof buf);

	json_open(j, '{');
	json_key(j, "name");
	json_cstr(j, e->name);
	json_key(j, "key");
	json_cstr(j, e->keys[0]);
	json_key(j, "state");
	json_cstr(j, state_names[m->state]);
	json_key(j, "command_finished");
	json_bool(j, all_finished(m));
	json_key(j, "type");
	json_cstr(j, m->state == ST_UNKNOWN ? NULL : m->v->type);
	json_key(j, "mode");
	json_cstr(j, mode && strncmp(mode, "limit", 5) == 0 ? "limit" : mode);
	json_key(j, "limit");
	json_int_or_null(j, mode && strncmp(mode, "limit", 5) == 0 ?
			 atol(m->v->mode) : -1);
	json_key(j, "ttl_ms");
	json_int_or_null(j, m->state == ST_UNKNOWN || m->state == ST_FREE ? -1 :
			 m->v->pttl_ms);
	json_key(j, "expires");
	json_bool(j, m->state == ST_UNKNOWN || m->state == ST_FREE ||
		  m->v->pttl_ms >= 0);
	json_key(j, "fence");
	json_int_or_null(j, m->fence);
	json_key(j, "servers_agreeing");
	json_int(j, (long long)m->n_agree);
	json_key(j, "majority_agrees");
	json_bool(j, m->n_agree >= quorum_majority(s->lk.n_nodes));
	json_key(j, "holders");
	json_open(j, '[');
	for (size_t i = 0; m->state != ST_OTHER && i < m->n_holders; i++) {
		const struct merged_holder *mh = &m->holders[i];

		json_open(j, '{');
		json_key(j, "token");
		json_str(j, mh->h->token, mh->h->token_len);
		json_key(j, "foreign");
		json_bool(j, !mh->h->info);
		json_info(j, mh->h->info, mh->h->info_len);
		json_key(j, "finished_ms");
		json_int_or_null(j, finished_ms(mh->h));
		json_key(j, "ttl_ms");
		json_int_or_null(j, mh->left_ms);
		json_key(j, "fence");
		json_int_or_null(j, mh->fence);
		json_key(j, "slot");
		json_int_or_null(j, mh->h->slot);
		json_key(j, "servers");
		json_int(j, (long long)mh->n_servers);
		json_close(j, '}');
	}
	json_close(j, ']');
	json_key(j, "waiting");
	json_int(j, m->n_waiting);
	json_key(j, "writers_waiting");
	json_int(j, m->n_writers);
	json_key(j, "fair_queue");
	json_open(j, '[');
	for (size_t i = 0; i < m->n_waiters; i++) {
		json_open(j, '{');
		json_key(j, "position");
		json_int(j, (long long)i + 1);
		json_key(j, "token");
		json_str(j, m->waiters[i]->token, m->waiters[i]->token_len);
		json_key(j, "ticket");
		json_int_or_null(j, m->waiters[i]->ticket);
		json_info(j, m->waiters[i]->info, m->waiters[i]->info_len);
		json_close(j, '}');
	}
	json_close(j, ']');
	json_key(j, "servers");
	json_open(j, '[');
	for (size_t k = 0; k < s->lk.n_nodes; k++) {
		const struct view *v = &e->views[k];

		json_open(j, '{');
		json_key(j, "url");
		json_cstr(j, s->lk.nodes[k].url->text);
		json_key(j, "says");
		json_cstr(j, v->says == SAYS_FAILED ? "error" : v->says == SAYS_FREE ?
			  "free" : v->says == SAYS_HELD ? "held" : "other");
		json_key(j, "error");
		json_cstr(j, v->says == SAYS_FAILED ? v->err.msg : NULL);
		json_key(j, "type");
		json_cstr(j, v->says == SAYS_FAILED ? NULL : v->type);
		json_key(j, "ttl_ms");
		json_int_or_null(j, v->says == SAYS_FAILED || v->pttl_ms < 0 ? -1 :
				 v->pttl_ms);
		json_key(j, "fence");
		json_int_or_null(j, v->fence);
		json_key(j, "holders");
		json_open(j, '[');
		for (size_t i = 0; i < v->n_holders; i++)
			json_str(j, v->holders[i].token, v->holders[i].token_len);
		json_close(j, ']');
		json_close(j, '}');
	}
	json_close(j, ']');
	json_close(j, '}');
}

static void print_json(const struct status *s, const struct merged *ms)
{
	struct json j;

	json_init(&j, stdout);
	json_open(&j, '{');
	json_key(&j, "prefix");
	json_cstr(&j, s->p->prefix);
	json_key(&j, "majority");
	json_int(&j, (long long)quorum_majority(s->lk.n_nodes));
	json_key(&j, "locks");
	json_open(&j, '[');
	for (size_t e = 0; e < s->n_entries; e++)
		json_lock(&j, s, &s->entries[e], &ms[e]);
	json_close(&j, ']');
	json_close(&j, '}');
}

/* ---- the command ------------------------------------------------------ */

/* 0 held, 1 free or no majority, 70 not a lock, 69/77 unknown. */
static int exit_of(const struct merged *m)
{
	switch (m->state) {
	case ST_HELD:
		return EX_OK;
	case ST_FREE:
	case ST_SPLIT:
		return 1;
	case ST_OTHER:
		return EX_SOFTWARE;
	case ST_UNKNOWN:
		break;
	}
	return m->err ? m->err->exit : EX_UNAVAILABLE;
}

static int rank(int status)
{
	return status == EX_NOPERM ? 5 : status == EX_UNAVAILABLE ? 4 :
	       status == EX_SOFTWARE ? 3 : status == 1 ? 2 : status ? 1 : 0;
}

int status_main(const struct lock_params *base, const struct command_args *a)
{
	struct lock_params p = *base;
	struct status s = { .p = &p, .a = a, .listing = a->n_keys == 0 };
	struct merged *ms = NULL;
	struct error err = { 0 };
	int status = EX_OK;

	p.name = a->n_keys ? a->keys[0] : "";
	if (lock_init(&s.lk, &p, &err) < 0) {
		log_error(base->name, &err);
		status = err.exit;
		goto out;
	}
	for (size_t i = 0; i < a->n_keys; i++)
		if (add_entry(&s, a->keys[i], strlen(a->keys[i])) < 0) {
			log_line(a->keys[i], "out of memory");
			status = EX_OSERR;
			goto out;
		}
	if (s.listing && scan_all(&s, &err) < 0) {
		log_error(NULL, &err);
		status = err.exit;
		goto out;
	}
	for (size_t e = 0; e < s.n_entries; e += NODE_MAX_CMDS)
		ask(&s, e, s.n_entries - e < NODE_MAX_CMDS ? s.n_entries - e :
		    NODE_MAX_CMDS);
	s.wall_ms = clock_wall_ms();
	ms = calloc(s.n_entries ? s.n_entries : 1, sizeof *ms);
	if (!ms) {
		log_line(NULL, "out of memory");
		status = EX_OSERR;
		goto out;
	}
	for (size_t e = 0; e < s.n_entries; e++) {
		int one;

		if (merge(&ms[e], &s.entries[e], s.lk.n_nodes) < 0) {
			log_line(s.entries[e].name, "out of memory");
			status = EX_OSERR;
			goto out;
		}
		one = exit_of(&ms[e]);
		if (ms[e].state == ST_UNKNOWN && ms[e].err)
			log_error(s.entries[e].name, ms[e].err);
		/* listing: what is there; only unreachable servers fail it */
		if (s.listing && one != EX_UNAVAILABLE && one != EX_NOPERM)
			one = EX_OK;
		if (rank(one) > rank(status))
			status = one;
	}
	if (a->quiet)
		;
	else if (a->json)
		print_json(&s, ms);
	else if (s.listing)
		print_list(&s, ms);
	else
		for (size_t e = 0; e < s.n_entries; e++)
			print_block(&s, &s.entries[e], &ms[e]);
	if (fflush(stdout) != 0 && status == EX_OK)
		status = EX_IOERR;
out:
	for (size_t e = 0; ms && e < s.n_entries; e++)
		merged_free(&ms[e]);
	free(ms);
	entries_free(&s);
	lock_free(&s.lk);
	return status;
}
