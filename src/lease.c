/* lease.c - renews the lease every TTL/3 and says when it is gone.
 *
 * The lease's local bound, valid_until_ms, is the start of the last
 * successful round plus TTL minus drift. Failed rounds are retried soon,
 * but the lease is given up a tenth of the TTL before that bound, so the
 * command is told while the lock is still ours. The supervisor enforces
 * that deadline itself, on its own clock: a round stuck in a blocking call
 * cannot let the job run past it. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "lease.h"
#include "quorum.h"

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static void *renew(void *arg)
{
	struct lease *ls = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&ls->mutex);
	for (;;) {
		struct error err = { 0 };
		enum extend_result r;
		int64_t timeout_ms;

		while (!ls->go && !ls->stop)
			pthread_cond_wait(&ls->kick, &ls->mutex);
		if (ls->stop)
			break;
		ls->go = false;
		timeout_ms = ls->round_timeout_ms;
		pthread_mutex_unlock(&ls->mutex);
		r = lock_extend(ls->lk, timeout_ms, &err);
		pthread_mutex_lock(&ls->mutex);
		ls->result = r;
		ls->result_valid_ms = ls->lk->valid_until_ms;
		ls->result_err = err;
		(void)!write(ls->notify_fd, &one, sizeof one);
	}
	pthread_mutex_unlock(&ls->mutex);
	return NULL;
}

void lease_init(struct lease *ls, struct lock *lk)
{
	int64_t period_ms = lk->ttl_ms / 3;

	*ls = (struct lease){
		.lk = lk,
		.period_ms = period_ms,
		.notice_ms = quorum_notice_ms(lk->ttl_ms),
		.retry_ms = min64(period_ms / 4 > 10 ? period_ms / 4 : 10, 1000),
		.valid_until_ms = lk->valid_until_ms,
		.renew_at_ms = lk->valid_until_ms - lk->ttl_ms + period_ms,
		.notify_fd = -1,
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
	if (ls->halted)
		return -1;
	return ls->busy ? lease_deadline_ms(ls) :
	       min64(ls->renew_at_ms, lease_deadline_ms(ls));
}

static int start(struct lease *ls)
{
	pthread_attr_t attr;
	int e;

	ls->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ls->notify_fd < 0)
		return -1;
	/* A round must end within its deadline: no name lookups from here. */
	for (size_t i = 0; i < ls->lk->n_nodes; i++)
		ls->lk->nodes[i].no_resolve = true;
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
		ls->renew_at_ms = valid_ms - ls->lk->ttl_ms + ls->period_ms;
		return 0;
	case EXTEND_FAILED:
		ls->last = e;
		ls->renew_at_ms = now_ms + ls->retry_ms;
		return 0;
	case EXTEND_LOST:
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
