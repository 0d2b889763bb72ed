/* list.c - Redis: every lock under the prefix (dlock status with no KEY,
 * dlock list): SCAN on each server, or on every master of the Redis
 * Cluster it belongs to (SCAN lists the keys of the node it is sent to
 * only), side keys left out, each name once. */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "cluster.h"
#include "fanout.h"
#include "names.h"
#include "quorum.h"
#include "rcommands.h"

#define SCAN_COUNT "1000"

/* The names found, as the servers give them less the prefix. */
struct listing {
	const struct lock_params *p;
	char **names;
	size_t n, cap;
};

static bool is_str(const redisReply *r)
{
	return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
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

/* Adds a name (len bytes, no NUL among them). Returns 0, or -1. */
static int add_name(struct listing *l, const char *name, size_t len)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **more = realloc(l->names, cap * sizeof *more);

		if (!more)
			return -1;
		l->names = more;
		l->cap = cap;
	}
	if (!(l->names[l->n] = engine_dup(name, len)))
		return -1;
	l->n++;
	return 0;
}

/* Every lock key under the prefix on one server, SCAN page by page. */
static int scan_node(struct listing *l, struct node *n, const char *pattern)
{
	char cursor[32] = "0";
	size_t plen = strlen(l->p->prefix);

	do {
		const char *argv[] = { "SCAN", cursor, "MATCH", pattern, "COUNT", SCAN_COUNT };
		struct cmd cmd = { NULL, 6, argv, NULL };
		const redisReply *r;

		if (fanout_round(n, 1, &cmd, 1, l->p->node_timeout_ms) != 1)
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
			    keys_is_side(k->str, k->len, l->p->prefix))
				continue;
			if (add_name(l, k->str + plen, k->len - plen) < 0) {
				node_end(n);
				error_set(&n->err, EX_OSERR, "out of memory");
				return -1;
			}
		}
		node_end(n);
	} while (strcmp(cursor, "0") != 0);
	return 0;
}

/* One master of CLUSTER SLOTS as a URL like the seed's; 1 when added,
 * 0 when already there, -1 when the entry is malformed. */
static int add_master(const struct url *seed, const redisReply *m,
		      struct url *urls, int n_urls)
{
	struct url *u = &urls[n_urls];
	const char *host;

	if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 || !is_str(m->element[0]) ||
	    m->element[1]->type != REDIS_REPLY_INTEGER ||
	    m->element[1]->integer <= 0 || m->element[1]->integer > 65535 ||
	    m->element[0]->len >= sizeof u->host)
		return -1;
	host = m->element[0]->str;
	if (!*host || strcmp(host, "?") == 0)	/* unknown: the seed's host */
		host = seed->host;
	for (int i = 0; i < n_urls; i++)
		if (urls[i].port == m->element[1]->integer &&
		    strcmp(urls[i].host, host) == 0)
			return 0;
	*u = *seed;
	memmove(u->host, host, strlen(host) + 1);
	u->port = (int)m->element[1]->integer;
	u->addr.n = 0;
	u->n_seeds = 0;	/* one master, not the seed list */
	url_numeric_addr(u->host, u->port, &u->addr);
	snprintf(u->text, sizeof u->text, "redis://%s%s%s:%d",
		 strchr(u->host, ':') ? "[" : "", u->host,
		 strchr(u->host, ':') ? "]" : "", u->port);
	return 1;
}

/* The masters of the cluster that n's URL names, as URLs with n's
 * credentials, asked with INFO cluster then CLUSTER SLOTS (a round more,
 * for listing only: SCAN lists the keys of the node it is sent to).
 * Returns how many (at most max; *urls is malloc'ed), 0 when the server
 * is no cluster (or not TCP), or -1 with n->err set. */
static int cluster_masters(struct node *n, struct url **urls, int max,
			   int64_t timeout_ms)
{
	const char *info[] = { "INFO", "cluster" };
	const char *slots[] = { "CLUSTER", "SLOTS" };
	struct cmd cmd = { NULL, 2, info, NULL };
	const redisReply *r;
	int n_urls = 0;

	*urls = NULL;
	if (n->url->kind != URL_TCP)
		return 0;
	if (fanout_round(n, 1, &cmd, 1, timeout_ms) != 1)
		return -1;
	r = n->replies[0];
	if (!is_str(r) || !strstr(r->str, "cluster_enabled:1")) {
		node_end(n);
		return 0;
	}
	cluster_note_seen();
	cmd.argv = slots;
	if (fanout_round(n, 1, &cmd, 1, timeout_ms) != 1)
		return -1;
	r = n->replies[0];
	*urls = calloc((size_t)max, sizeof **urls);
	if (!*urls) {
		node_end(n);
		error_set(&n->err, EX_OSERR, "out of memory");
		return -1;
	}
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
		const redisReply *range = r->element[i];
		int added;

		if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
		    (added = add_master(n->url, range->element[2], *urls, n_urls)) < 0) {
			n_urls = -1;
			break;
		}
		if (added && ++n_urls == max)
			break;
	}
	node_end(n);
	if (n_urls <= 0) {
		error_set(&n->err, EX_SOFTWARE, "%s: unexpected reply to CLUSTER SLOTS",
			  n->url->text);
		n->state = NODE_FAILED;
		free(*urls);
		*urls = NULL;
		n_urls = -1;
	}
	return n_urls;
}

/* One server, or each master of the Redis Cluster it belongs to (SCAN
 * lists the keys of the node it is sent to only). */
static int scan_one(struct listing *l, struct node *n, const char *pattern)
{
	struct url *masters;
	int n_masters = cluster_masters(n, &masters, 64, l->p->node_timeout_ms);
	int r = 0;

	if (n_masters <= 0)
		return n_masters < 0 ? -1 : scan_node(l, n, pattern);
	for (int i = 0; i < n_masters && r == 0; i++) {
		struct node m;

		node_init(&m, &masters[i], n->password);
		if ((r = scan_node(l, &m, pattern)) < 0) {
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

/* Every lock under the prefix on a majority of rl's servers, each name
 * once, sorted. Returns 0, or -1 with err when fewer than a majority
 * could be scanned. */
static int scan_all(struct listing *l, struct rlock *rl, struct error *err)
{
	char *pattern = pattern_of(l->p->prefix);
	size_t n_ok = 0;

	if (!pattern) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < rl->n_nodes; i++)
		n_ok += scan_one(l, &rl->nodes[i], pattern) == 0;
	free(pattern);
	if (n_ok < quorum_majority(rl->n_nodes)) {
		const struct error *worst = fanout_worst_error(rl->nodes, rl->n_nodes);

		if (worst && rl->n_nodes == 1)
			*err = *worst;
		else
			error_set(err, worst ? worst->exit : EX_UNAVAILABLE,
				  "%zu of %zu servers listed their locks, %zu needed%s%s%s",
				  n_ok, rl->n_nodes, quorum_majority(rl->n_nodes),
				  worst ? " (" : "", worst ? worst->msg : "", worst ? ")" : "");
		return -1;
	}
	/* The same lock from several servers once. */
	l->n = engine_sort_names(l->names, l->n);
	return 0;
}

int redis_list(struct lock *lk, char ***names, size_t *n, struct error *err)
{
	struct listing l = { .p = lk->p };
	int r = scan_all(&l, redis_rlock(lk), err);

	*names = NULL;
	*n = 0;
	/* never NULL on success, even with no lock */
	if (r == 0 && !l.names && !(l.names = calloc(1, sizeof *l.names))) {
		error_set(err, EX_OSERR, "out of memory");
		r = -1;
	}
	if (r < 0) {
		for (size_t i = 0; i < l.n; i++)
			free(l.names[i]);
		free(l.names);
		return -1;
	}
	*names = l.names;
	*n = l.n;
	return 0;
}
