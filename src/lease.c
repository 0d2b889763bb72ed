/* lease.c - renews the lease every TTL/3 and says when it is gone.
 *
 * The lease's local bound, valid_until_ms, is the start of the last
 * successful round plus TTL minus drift. Failed rounds are retried soon,
 * but the lease is given up a tenth of the TTL before that bound, so the
 * command is told while the lock is still ours. The supervisor enforces
 * that deadline itself, on its own clock: a round stuck in a blocking call
 * cannot let the job run past it.
 *
 * The lock may go before a renewal finds out: another process releases
 * or breaks it (dlock release --force; Redis pushes a notice on a list of
 * ours), an operator ends the holder's session (PostgreSQL, MySQL), a
 * watch fires (ZooKeeper, etcd). What each engine watches is polled from
 * the supervisor's thread once the job has run the engine's watch_after_ms
 * (Redis, etcd: 20 ms, so that a command that ends sooner, such as
 * `dlock K true`, never opens anything for it, and a lock broken sooner
 * is found out within that and a round). An event starts a
 * renewal round at once, which decides: the job is told within a round
 * trip, not at the next renewal. */
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
	int64_t after_ms = lk->eng->lock.watch_after_ms;

	for (size_t i = 1; i < n; i++)
		valid_ms = min64(valid_ms, lk[i].valid_until_ms);
	*ls = (struct lease){
		.lk = lk,
		.n_locks = n,
		.period_ms = period_ms,
		.notice_ms = lock_notice_ms(lk->ttl_ms),
		.retry_ms = min64(period_ms / 4 > 10 ? period_ms / 4 : 10, 1000),
		.valid_until_ms = valid_ms,
		.renew_at_ms = valid_ms - lk->ttl_ms + period_ms,
		.notify_fd = -1,
		/* renewals as often as that find out as soon */
		.watch_at_ms = lk->eng->lock.watch_fds && period_ms > after_ms ?
			       clock_now_ms() + after_ms : -1,
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

size_t lease_watch_fds(struct lease *ls, struct pollfd *pfd)
{
	size_t n = 0;

	if (ls->halted || ls->busy || !ls->watching)
		return 0;
	for (size_t i = 0; i < ls->n_locks; i++) {
		struct lock *lk = &ls->lk[i];

		ls->watch_n[i] = lk->eng->lock.watch_fds ?
				 lk->eng->lock.watch_fds(lk, pfd + n, MAX_LEASE_FDS - n) : 0;
		n += ls->watch_n[i];
	}
	return n;
}

void lease_watch_events(struct lease *ls, const struct pollfd *pfd, size_t n)
{
	bool again = false;

	for (size_t i = 0, at = 0; i < ls->n_locks && at < n; at += ls->watch_n[i++]) {
		struct lock *lk = &ls->lk[i];
		char note[256] = "";

		if (ls->watch_n[i] == 0 ||
		    !lk->eng->lock.watch_events(lk, pfd + at, ls->watch_n[i], note,
					    sizeof note))
			continue;
		again = true;
		if (note[0] && ls->n_locks > 1)
			snprintf(ls->notice, sizeof ls->notice, "%s: %s", lk->p->name, note);
		else if (note[0])
			snprintf(ls->notice, sizeof ls->notice, "%s", note);
	}
	if (!again)
		return;
	/* a round now; one that runs may have started before */
	if (ls->busy)
		ls->recheck = true;
	else
		ls->renew_at_ms = clock_now_ms();
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
	if (ls->watch_at_ms >= 0 && now_ms >= ls->watch_at_ms) {
		ls->watch_at_ms = -1;
		ls->watching = true;
	}
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
	if (ls->on_round)
		ls->on_round(ls->on_round_arg, r, ls->notice[0] != '\0', &e);
	switch (r) {
	case EXTEND_OK:
		ls->last.exit = 0;
		ls->valid_until_ms = valid_ms;
		ls->renew_at_ms = ls->recheck ? now_ms :
				  valid_ms - ls->lk->ttl_ms + ls->period_ms;
		ls->recheck = false;
		ls->notice[0] = '\0';	/* not about us, or not a majority */
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
	lease_stop(ls);
	pthread_cond_destroy(&ls->kick);
	pthread_mutex_destroy(&ls->mutex);
	if (ls->notify_fd >= 0)
		close(ls->notify_fd);
	ls->notify_fd = -1;
}
