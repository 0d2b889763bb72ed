/* engine.c - Redis behind the engine interface (src/engine.h): one server,
 * RedLock over several, Sentinel, Cluster, TLS. The lock itself is lock.c;
 * here are what wakes a waiter (BLPOP on the lock's wake list), what tells
 * a holder that another process released its lock (BRPOP on its notice
 * list), and the copies between the core's struct lock and ours. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "config.h"
#include "engine.h"
#include "fanout.h"
#include "rcommands.h"
#include "rlock.h"
#include "tls.h"
#include "url.h"

/* The engine's part of a struct lock (its e). */
struct redis {
	struct rlock rl;
	/* waiting: one connection per server, blocked in BLPOP */
	struct node *wakers;
	const char *blpop_argv[3];
	struct cmd blpop;
	size_t *waker_idx;	/* which waker each pollfd given out is */
	/* holding: one connection per server, BRPOPs our notice list */
	struct node *watch;
	size_t *watch_idx;
	char *notice_list;
	const char *watch_argv[3];
	struct cmd watch_cmd;
	bool no_resolve;	/* the renewal thread has begun */
	bool renewed;		/* a renewal succeeded since the watch was
				 * last looked at: failed watches again */
};

static struct redis *R(const struct lock *lk)
{
	return lk->e;
}

/* ---- settings ----------------------------------------------------------- */

static int init(const struct settings *st, struct error *err)
{
	return st->tls ? tls_init(&st->tls_opts, err) : 0;
}

/* ---- the lock -------------------------------------------------------------- */

int redis_open(struct lock *lk, struct error *err)
{
	struct redis *r = engine_open_state(lk, sizeof *r, err);

	if (!r)
		return -1;
	if (rlock_init(&r->rl, lk, err) < 0)
		return -1;
	lk->key = r->rl.key;
	return 0;
}

static void close_nodes(struct node **nodes, size_t n)
{
	for (size_t i = 0; *nodes && i < n; i++) {
		node_end(&(*nodes)[i]);
		node_close(&(*nodes)[i]);
	}
	free(*nodes);
	*nodes = NULL;
}

void redis_close(struct lock *lk)
{
	struct redis *r = R(lk);

	close_nodes(&r->wakers, r->rl.n_nodes);
	close_nodes(&r->watch, r->rl.n_nodes);
	free(r->waker_idx);
	free(r->watch_idx);
	free(r->notice_list);
	rlock_free(&r->rl);
	engine_close_state(lk);
}

/* What the core reads of the last round. */
static void copy_out(struct lock *lk)
{
	const struct rlock *rl = &R(lk)->rl;

	snprintf(lk->token, sizeof lk->token, "%s", rl->token);
	snprintf(lk->fence, sizeof lk->fence, "%s", lk->p->no_fence ? "" : rl->fence);
	lk->valid_until_ms = rl->valid_until_ms;
	lk->acquired_ms = rl->acquired_ms;
	snprintf(lk->held_by, sizeof lk->held_by, "%s", rl->held_by);
	lk->queue_pos = rl->queue_pos;
	lk->refused = rl->refused;
	for (size_t i = 0; i < rl->n_nodes; i++)
		lk->misconfigured |= rl->nodes[i].tls_refused;
}

int redis_begin(struct lock *lk, struct error *err)
{
	int r = rlock_begin(&R(lk)->rl, err);

	copy_out(lk);
	return r;
}

enum lock_result redis_try(struct lock *lk, int64_t *retry_ms,
			   struct error *err)
{
	struct rlock *rl = &R(lk)->rl;
	enum lock_result r;

	rl->reentry_token = lk->reentry_token;	/* known once open */
	/* --fair: servers that cannot give a ticket are retried as ones
	 * that cannot answer a try */
	if (lk->p->fair && !rl->ticket[0] && rlock_take_ticket(rl, err) < 0) {
		copy_out(lk);
		return LOCK_FAILED;
	}
	r = rlock_try(rl, retry_ms, err);
	/* --limit over several servers: they picked different free slots;
	 * all ask for one a server named, at once, once. */
	if (r == LOCK_HELD && rl->free_slot >= 0) {
		snprintf(rl->slot_arg, sizeof rl->slot_arg, "%ld", rl->free_slot);
		r = rlock_try(rl, retry_ms, err);
	}
	rl->slot_arg[0] = '\0';
	copy_out(lk);
	lk->busy = r == LOCK_FAILED && rlock_busy(rl);
	return r;
}

/* One connection per server of rl for a command that blocks (BLPOP,
 * BRPOP), and *idx, room to say which one each pollfd given out is; NULL
 * when out of memory. A blocking command waits for ever; its connect does
 * not: the node timeout. no_resolve: no name lookups (the supervisor's
 * connections: nothing that blocks). */
static struct node *blocking_nodes(const struct rlock *rl, size_t **idx,
				   bool no_resolve)
{
	struct node *nodes = calloc(rl->n_nodes, sizeof *nodes);

	free(*idx);
	*idx = calloc(rl->n_nodes, sizeof **idx);
	if (!nodes || !*idx) {
		free(nodes);
		return NULL;
	}
	for (size_t i = 0; i < rl->n_nodes; i++) {
		node_init(&nodes[i], rl->nodes[i].url, rl->nodes[i].password);
		nodes[i].no_resolve = no_resolve;
		nodes[i].connect_ms = rl->node_timeout_ms;
	}
	return nodes;
}

/* c: VERB list 0, which blocks until list has an element. */
static void blocking_cmd(struct cmd *c, const char **argv, const char *verb,
			 const char *list)
{
	argv[0] = verb;
	argv[1] = list;
	argv[2] = "0";
	*c = (struct cmd){ NULL, 3, argv, NULL };
}

/* Wake-ups: a release pushes on the lock's wake list, and Redis hands the
 * element to the one client that has waited longest in BLPOP there (or
 * keeps it, 2 s, for the next). So a release wakes one waiter, not all:
 * with W waiters a handoff costs a few scripts, not W. A refusal already
 * counts us among the waiters, so a release between it and our BLPOP
 * leaves its element in the list for us: no gap, and no second try. Each
 * server gets a connection of its own, as a blocked connection takes no
 * other commands. On redis-sentinel:// it blocks on the master the last
 * round used (node_follow()), asking no sentinel: after a failover the
 * rounds move to the new master, where the holder releases, and the BLPOP
 * follows them there rather than wait on the old one until the next
 * timed try. */
size_t redis_wait_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct redis *r = R(lk);
	struct rlock *rl = &r->rl;
	int64_t now_ms = clock_now_ms();
	size_t n = 0;

	if (!r->wakers &&
	    !(r->wakers = blocking_nodes(rl, &r->waker_idx, false)))
		return 0;	/* then the timed retries alone */
	blocking_cmd(&r->blpop, r->blpop_argv, "BLPOP", rl->wake_list);
	for (size_t i = 0; i < rl->n_nodes && n < max; i++) {
		short events;

		if (!node_follow(&r->wakers[i], &rl->nodes[i]))
			continue;	/* no master reached yet: the timed tries */
		/* a connect on to the next address, if the last had its time */
		node_check_deadline(&r->wakers[i], now_ms);
		events = node_events(&r->wakers[i]);
		/* Where no BLPOP is outstanding: the first time, after a
		 * wake-up, or after a failure (a dead server is asked again,
		 * at each pause). */
		if (events == 0) {
			node_end(&r->wakers[i]);
			node_begin(&r->wakers[i], &r->blpop, 1, INT64_MAX);
			events = node_events(&r->wakers[i]);
		}
		if (!events)
			continue;
		r->waker_idx[n] = i;
		pfd[n++] = (struct pollfd){ node_fd(&r->wakers[i]), events, 0 };
	}
	return n;
}

bool redis_wait_events(struct lock *lk, const struct pollfd *pfd, size_t n)
{
	struct redis *r = R(lk);
	bool woken = false;

	for (size_t k = 0; k < n; k++) {
		struct node *w = &r->wakers[r->waker_idx[k]];

		if (!pfd[k].revents)
			continue;
		node_step(w, pfd[k].revents);
		woken |= w->state == NODE_DONE;
	}
	return woken;
}

void redis_end_wait(struct lock *lk, enum lock_result res)
{
	struct redis *r = R(lk);

	close_nodes(&r->wakers, r->rl.n_nodes);
	rlock_end_wait(&r->rl, res);
}

/* ---- holding ----------------------------------------------------------- */

enum extend_result redis_extend(struct lock *lk, int64_t timeout_ms,
				struct error *err)
{
	struct rlock *rl = &R(lk)->rl;
	enum extend_result r;

	/* The renewal thread: a round must end within its deadline, so no
	 * name lookups from here on (getaddrinfo blocks beyond any). */
	if (!R(lk)->no_resolve) {
		for (size_t i = 0; i < rl->n_nodes; i++)
			rl->nodes[i].no_resolve = true;
		R(lk)->no_resolve = true;
	}
	r = rlock_extend(rl, timeout_ms, err);
	lk->valid_until_ms = rl->valid_until_ms;
	/* read by watch_fds(), which never runs beside a round */
	R(lk)->renewed |= r == EXTEND_OK;
	return r;
}

/* BRPOP on every server where none is outstanding (BRPOP, where waiters
 * BLPOP: CLIENT LIST tells a holder's connection from a waiter's). A
 * sentinel URL is left out: asking the sentinels blocks, and the
 * supervisor must not. */
size_t redis_watch_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct redis *r = R(lk);
	struct rlock *rl = &r->rl;
	size_t n = 0;

	if (!r->watch) {
		free(r->notice_list);
		if (asprintf(&r->notice_list, "%s:%s", rl->notice_key, rl->token) < 0) {
			r->notice_list = NULL;
			return 0;	/* the renewals find out, later */
		}
		/* nothing that blocks: no name lookups */
		if (!(r->watch = blocking_nodes(rl, &r->watch_idx, true)))
			return 0;
		blocking_cmd(&r->watch_cmd, r->watch_argv, "BRPOP", r->notice_list);
	}
	for (size_t i = 0; i < rl->n_nodes && n < max; i++) {
		struct node *w = &r->watch[i];
		short events;

		if (w->url->kind == URL_SENTINEL)
			continue;
		node_check_deadline(w, clock_now_ms());
		/* a failed one again after a renewal, not at once (a
		 * refused connection would spin) */
		if (node_events(w) == 0 && (w->state != NODE_FAILED || r->renewed)) {
			node_end(w);
			node_begin(w, &r->watch_cmd, 1, INT64_MAX);
		}
		if (!(events = node_events(w)))
			continue;
		r->watch_idx[n] = i;
		pfd[n++] = (struct pollfd){ node_fd(w), events, 0 };
	}
	r->renewed = false;
	return n;
}

bool redis_watch_events(struct lock *lk, const struct pollfd *pfd, size_t n,
			char *note, size_t notelen)
{
	struct redis *r = R(lk);
	bool again = false;

	for (size_t k = 0; k < n; k++) {
		struct node *w = &r->watch[r->watch_idx[k]];
		const redisReply *reply;

		if (!pfd[k].revents)
			continue;
		node_step(w, pfd[k].revents);
		if (w->state != NODE_DONE)
			continue;	/* still waiting; or failed */
		reply = w->replies[0];
		if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
		    reply->element[1]->type == REDIS_REPLY_STRING)
			snprintf(note, notelen, "%.*s", (int)reply->element[1]->len,
				 reply->element[1]->str);
		/* and wait for the next: the round may find it not about us */
		node_end(w);
		node_begin(w, &r->watch_cmd, 1, INT64_MAX);
		again = true;
	}
	return again;
}

/* The 'killed' event, as the release script writes its 'released'; the
 * stream kept a week, as there. */
void redis_note_killed(struct lock *lk, int64_t held_ms)
{
	struct rlock *rl = &R(lk)->rl;
	char maxlen[24], held[24];
	const char *xadd[] = {
		"XADD", rl->history_key, "MAXLEN", maxlen, "*", "event", "killed",
		"token", lk->token, "holder", lk->info, "fence", lk->fence,
		"exit", "", "held_ms", held,
	};
	const char *pexpire[] = { "PEXPIRE", rl->history_key, "604800000" };
	struct cmd cmds[2] = {
		{ NULL, sizeof xadd / sizeof *xadd, xadd, NULL },
		{ NULL, 3, pexpire, NULL },
	};

	snprintf(maxlen, sizeof maxlen, "%ld", lk->p->history);
	snprintf(held, sizeof held, "%" PRId64, held_ms);
	fanout_round(rl->nodes, rl->n_nodes, cmds, 2, lk->node_timeout_ms);
	fanout_end(rl->nodes, rl->n_nodes);
}

size_t redis_fds(const struct lock *lk, int *out, size_t max)
{
	const struct rlock *rl = &R(lk)->rl;
	size_t n = 0;

	for (size_t i = 0; i < rl->n_nodes && n < max; i++)
		if (node_fd(&rl->nodes[i]) >= 0)
			out[n++] = node_fd(&rl->nodes[i]);
	return n;
}

int redis_release(struct lock *lk, const struct release_how *how,
		  struct error *err)
{
	struct rlock *rl = &R(lk)->rl;

	int r;

	close_nodes(&R(lk)->watch, rl->n_nodes);
	if (!how->job)
		return rlock_release(rl, err);
	r = rlock_release_job(rl, how->exit_status, how->min_hold, err);
	lk->lost_at_release = r == LOCK_RELEASE_LOST;
	return lk->lost_at_release ? 0 : r;
}

int redis_raise_fence(struct lock *lk, const char *fence, struct error *err)
{
	struct rlock *rl = &R(lk)->rl;
	int r = rlock_raise_fence(rl, fence, err);

	snprintf(lk->fence, sizeof lk->fence, "%s", rl->fence);
	return r;
}

void redis_log_servers(const struct lock *lk)
{
	rlock_log_servers(&R(lk)->rl);
}

const struct engine redis_engine = {
	.settings = {
		.name = "Redis",
		.flags = CAP_SHARED | CAP_LIMIT | CAP_FAIR | CAP_SEVERAL |
			 CAP_WAIT_REPLICAS | CAP_MIN_HOLD_KEPT | CAP_NO_FORK |
			 CAP_UNAVAILABLE_RUN,
		.min_ttl_ms = MIN_TTL_MS,
		ENGINE_URL_OPS(redis, struct url),
		.url_tls = redis_url_tls,
		.init = init,
		.end = tls_end,
	},
	ENGINE_OPS(redis),
	ENGINE_WATCH_OPS(redis),
	ENGINE_HISTORY_OPS(redis),
	ENGINE_STEPS_OPS(redis),
	.lock.watch_after_ms = 20,
	.lock.raise_fence = redis_raise_fence,
	.lock.log_servers = redis_log_servers,
	.inspect.list = redis_list,
	.inspect.force = redis_force,
};

struct rlock *redis_rlock(const struct lock *lk)
{
	return &R(lk)->rl;
}
