/* lease.c - renews the lease every TTL/3 and says when it is gone.
 *
 * The lease's local bound, valid_until_ms, is the start of the last
 * successful round plus TTL minus drift. Failed rounds are retried soon,
 * but the lease is given up a tenth of the TTL before that bound, so the
 * command is told while the lock is still ours. The supervisor enforces
 * that deadline itself, on its own clock: a round stuck in a blocking call
 * cannot let the job run past it.
 *
 * Another process may release the lock under us (dlock release --force,
 * or by our token): it pushes a notice on a list of ours, which we BRPOP
 * from the supervisor's thread once the job has run NOTICE_AFTER_MS (a
 * command that ends sooner never opens the connections). A notice starts
 * a renewal round at once, which finds the lock gone: the job is told
 * within a round trip, not at the next renewal. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "clock.h"
#include "lease.h"
#include "quorum.h"

#define NOTICE_AFTER_MS 500

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* One round over every lock (-k), one after the other: lost if any is
 * lost, failed if any failed; valid as long as the first to run out. Each
 * lock gets the whole timeout_ms: shared, a minority server that does not
 * answer would eat it all on the first lock and fail every round. The
 * supervisor keeps the lease's deadline whatever a round takes. */
static enum extend_result extend_all(struct lease *ls, int64_t timeout_ms,
				     int64_t *valid_ms, struct error *err)
{
	enum extend_result worst = EXTEND_OK;

	*valid_ms = INT64_MAX;
	for (size_t i = 0; i < ls->n_locks; i++) {
		struct lock *lk = &ls->lk[i];
		struct error e = { 0 };
		enum extend_result r = lock_extend(lk, timeout_ms, &e);

		if (lk->valid_until_ms < *valid_ms)
			*valid_ms = lk->valid_until_ms;
		if (r == EXTEND_OK || (r == EXTEND_FAILED && worst != EXTEND_OK))
			continue;
		worst = r;
		if (ls->n_locks > 1)
			error_set(err, e.exit, "%s: %s", lk->p->name, e.msg);
		else
			*err = e;
		if (r == EXTEND_LOST)
			break;
	}
	return worst;
}

static void *renew(void *arg)
{
	struct lease *ls = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&ls->mutex);
	for (;;) {
		struct error err = { 0 };
		enum extend_result r;
		int64_t timeout_ms, valid_ms;

		while (!ls->go && !ls->stop)
			pthread_cond_wait(&ls->kick, &ls->mutex);
		if (ls->stop)
			break;
		ls->go = false;
		timeout_ms = ls->round_timeout_ms;
		pthread_mutex_unlock(&ls->mutex);
		r = extend_all(ls, timeout_ms, &valid_ms, &err);
		pthread_mutex_lock(&ls->mutex);
		ls->result = r;
		ls->result_valid_ms = valid_ms;
		ls->result_err = err;
		(void)!write(ls->notify_fd, &one, sizeof one);
	}
	pthread_mutex_unlock(&ls->mutex);
	return NULL;
}

void lease_init(struct lease *ls, struct lock *lk)
{
	lease_init_locks(ls, lk, 1);
}

void lease_init_locks(struct lease *ls, struct lock *lk, size_t n)
{
	int64_t period_ms = lk->ttl_ms / 3, valid_ms = lk->valid_until_ms;

	for (size_t i = 1; i < n; i++)
		valid_ms = min64(valid_ms, lk[i].valid_until_ms);
	*ls = (struct lease){
		.lk = lk,
		.n_locks = n,
		.period_ms = period_ms,
		.notice_ms = quorum_notice_ms(lk->ttl_ms),
		.retry_ms = min64(period_ms / 4 > 10 ? period_ms / 4 : 10, 1000),
		.valid_until_ms = valid_ms,
		.renew_at_ms = valid_ms - lk->ttl_ms + period_ms,
		.notify_fd = -1,
		/* renewals as often as that find out as soon */
		.watch_at_ms = period_ms > NOTICE_AFTER_MS ?
			       clock_now_ms() + NOTICE_AFTER_MS : -1,
	};
	pthread_mutex_init(&ls->mutex, NULL);
	pthread_cond_init(&ls->kick, NULL);
}

int64_t lease_deadline_ms(const struct lease *ls)
{
	return ls->valid_until_ms - ls->notice_ms;
}

int64_t lease_end_ms(const struct lease *ls)
{
	return ls->valid_until_ms;
}

int64_t lease_next_ms(const struct lease *ls)
{
	int64_t next_ms;

	if (ls->halted)
		return -1;
	next_ms = ls->busy ? lease_deadline_ms(ls) :
		  min64(ls->renew_at_ms, lease_deadline_ms(ls));
	return ls->watch_at_ms >= 0 ? min64(next_ms, ls->watch_at_ms) : next_ms;
}

/* BRPOP on every server where none is outstanding (BRPOP, where waiters
 * BLPOP: CLIENT LIST tells a holder's connection from a waiter's). A sentinel URL is left
 * out: asking the sentinels blocks, and the supervisor must not. */
static void watch_again(struct lease *ls)
{
	for (size_t i = 0; ls->watch && i < ls->n_watch; i++)
		if (node_events(&ls->watch[i]) == 0 &&
		    ls->watch[i].url->kind != URL_SENTINEL) {
			node_end(&ls->watch[i]);
			node_begin(&ls->watch[i], &ls->watch_cmds[ls->watch_lock[i]].cmd,
				   1, INT64_MAX);
		}
}

static void watch_free(struct lease *ls)
{
	for (size_t i = 0; ls->watch && i < ls->n_watch; i++) {
		node_end(&ls->watch[i]);
		node_close(&ls->watch[i]);
	}
	for (size_t k = 0; ls->watch_cmds && k < ls->n_locks; k++)
		free(ls->watch_cmds[k].list);
	free(ls->watch);
	free(ls->watch_lock);
	free(ls->watch_idx);
	free(ls->watch_cmds);
	ls->watch = NULL;
	ls->watch_lock = ls->watch_idx = NULL;
	ls->watch_cmds = NULL;
	ls->n_watch = 0;
}

size_t lease_watch_max(const struct lease *ls)
{
	size_t n = 0;

	for (size_t k = 0; k < ls->n_locks; k++)
		n += ls->lk[k].n_nodes;
	return n;
}

/* One connection a server and lock: a lock's notice list is in its hash
 * slot, which on a Cluster may be another master's than the next key's. */
static void watch_start(struct lease *ls)
{
	size_t n = lease_watch_max(ls), w = 0;

	ls->watch_at_ms = -1;
	ls->watch = calloc(n, sizeof *ls->watch);
	ls->watch_lock = calloc(n, sizeof *ls->watch_lock);
	ls->watch_idx = calloc(n, sizeof *ls->watch_idx);
	ls->watch_cmds = calloc(ls->n_locks, sizeof *ls->watch_cmds);
	if (!ls->watch || !ls->watch_lock || !ls->watch_idx || !ls->watch_cmds) {
		watch_free(ls);
		return;		/* the renewals find out, later */
	}
	for (size_t k = 0; k < ls->n_locks; k++) {
		struct lock *lk = &ls->lk[k];
		struct watch_cmd *wc = &ls->watch_cmds[k];

		if (asprintf(&wc->list, "%s:%s", lk->notice_key, lk->token) < 0) {
			wc->list = NULL;
			watch_free(ls);
			return;
		}
		wc->argv[0] = "BRPOP";
		wc->argv[1] = wc->list;
		wc->argv[2] = "0";
		wc->cmd = (struct cmd){ NULL, 3, wc->argv, NULL };
		for (size_t i = 0; i < lk->n_nodes; i++, w++) {
			node_init(&ls->watch[w], lk->nodes[i].url, lk->nodes[i].password);
			ls->watch[w].no_resolve = true;	/* nothing that blocks */
			ls->watch_lock[w] = k;
		}
	}
	ls->n_watch = w;
	watch_again(ls);
}

size_t lease_watch_fds(struct lease *ls, struct pollfd *pfd)
{
	size_t n = 0;

	for (size_t i = 0; !ls->halted && ls->watch && i < ls->n_watch; i++) {
		short events = node_events(&ls->watch[i]);

		if (events) {
			pfd[n] = (struct pollfd){ node_fd(&ls->watch[i]), events, 0 };
			ls->watch_idx[n++] = i;
		}
	}
	return n;
}

void lease_watch_events(struct lease *ls, const struct pollfd *pfd, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		size_t i = ls->watch_idx[k];
		struct node *w = &ls->watch[i];
		const redisReply *r;

		if (!pfd[k].revents)
			continue;
		node_step(w, pfd[k].revents);
		/* still waiting; or failed: again after the next renewal, not
		 * at once (a refused connection would spin) */
		if (w->state != NODE_DONE)
			continue;
		r = w->replies[0];
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		    r->element[1]->type == REDIS_REPLY_STRING) {
			/* -k: which key, as a lost lease names it */
			if (ls->n_locks > 1)
				snprintf(ls->notice, sizeof ls->notice, "%s: %.*s",
					 ls->lk[ls->watch_lock[i]].p->name,
					 (int)r->element[1]->len, r->element[1]->str);
			else
				snprintf(ls->notice, sizeof ls->notice, "%.*s",
					 (int)r->element[1]->len, r->element[1]->str);
		}
		/* and wait for the next: the round may find it not about us */
		node_end(w);
		node_begin(w, &ls->watch_cmds[ls->watch_lock[i]].cmd, 1, INT64_MAX);
		/* a round now; one that runs may have started before */
		if (ls->busy)
			ls->recheck = true;
		else
			ls->renew_at_ms = clock_now_ms();
	}
}

int lease_reserve(struct lease *ls, struct error *err)
{
	if (ls->notify_fd < 0)
		ls->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ls->notify_fd >= 0)
		return 0;
	error_set(err, EX_OSERR, "cannot set up the renewals: eventfd: %s",
		  strerror(errno));
	return -1;
}

static int start(struct lease *ls)
{
	pthread_attr_t attr;
	int e;

	if (ls->notify_fd < 0)
		ls->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ls->notify_fd < 0)
		return -1;
	/* A round must end within its deadline: no name lookups from here. */
	for (size_t k = 0; k < ls->n_locks; k++)
		for (size_t i = 0; i < ls->lk[k].n_nodes; i++)
			ls->lk[k].nodes[i].no_resolve = true;
	/* A small stack: the thread runs fanout rounds and nothing deep. */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	e = pthread_create(&ls->thread, &attr, renew, ls);
	pthread_attr_destroy(&attr);
	if (e) {
		errno = e;
		return -1;
	}
	ls->started = true;
	return 0;
}

int lease_tick(struct lease *ls, int64_t now_ms, struct error *err)
{
	if (ls->halted)
		return 0;
	if (ls->watch_at_ms >= 0 && now_ms >= ls->watch_at_ms)
		watch_start(ls);
	if (now_ms >= lease_deadline_ms(ls)) {
		error_set(err, EX_TEMPFAIL, "not renewed in time%s%s",
			  ls->last.exit ? ": " : "", ls->last.msg);
		lease_halt(ls);
		return -1;
	}
	if (ls->busy || now_ms < ls->renew_at_ms)
		return 0;
	if (!ls->started && start(ls) < 0) {
		error_set(err, EX_OSERR, "cannot start the renewal thread: %s",
			  strerror(errno));
		lease_halt(ls);
		return -1;
	}
	pthread_mutex_lock(&ls->mutex);
	ls->round_timeout_ms = min64(ls->lk->node_timeout_ms,
				     lease_deadline_ms(ls) - now_ms);
	ls->go = true;
	pthread_cond_signal(&ls->kick);
	pthread_mutex_unlock(&ls->mutex);
	ls->busy = true;
	return 0;
}

int lease_collect(struct lease *ls, int64_t now_ms, struct error *err)
{
	uint64_t n;
	enum extend_result r;
	int64_t valid_ms;
	struct error e;

	if (read(ls->notify_fd, &n, sizeof n) != (ssize_t)sizeof n)
		return 0;
	pthread_mutex_lock(&ls->mutex);
	r = ls->result;
	valid_ms = ls->result_valid_ms;
	e = ls->result_err;
	pthread_mutex_unlock(&ls->mutex);
	ls->busy = false;
	if (ls->halted)
		return 0;
	switch (r) {
	case EXTEND_OK:
		ls->last.exit = 0;
		ls->valid_until_ms = valid_ms;
		ls->renew_at_ms = ls->recheck ? now_ms :
				  valid_ms - ls->lk->ttl_ms + ls->period_ms;
		ls->recheck = false;
		ls->notice[0] = '\0';	/* not about us, or not a majority */
		watch_again(ls);	/* a server that failed, again */
		return 0;
	case EXTEND_FAILED:
		ls->last = e;
		ls->renew_at_ms = now_ms + ls->retry_ms;
		return 0;
	case EXTEND_LOST:
		if (ls->notice[0])
			error_set(err, EX_TEMPFAIL, "%s", ls->notice);
		else
			*err = e;
		lease_halt(ls);
		return -1;
	}
	return 0;
}

void lease_halt(struct lease *ls)
{
	ls->halted = true;
}

void lease_stop(struct lease *ls)
{
	ls->halted = true;
	if (!ls->started)
		return;
	ls->started = false;
	pthread_mutex_lock(&ls->mutex);
	ls->stop = true;
	pthread_cond_signal(&ls->kick);
	pthread_mutex_unlock(&ls->mutex);
	pthread_join(ls->thread, NULL);
}

void lease_free(struct lease *ls)
{
	watch_free(ls);
	lease_stop(ls);
	pthread_cond_destroy(&ls->kick);
	pthread_mutex_destroy(&ls->mutex);
	if (ls->notify_fd >= 0)
		close(ls->notify_fd);
	ls->notify_fd = -1;
}
