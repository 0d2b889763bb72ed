/* lease.c - renews the lease every TTL/3 on a thread of its own.
 *
 * The thread keeps a local bound on the lease, valid_until_ms: the start of
 * the last successful round plus TTL minus drift, on the monotonic clock.
 * When renewals fail it retries quickly, but gives up a tenth of the TTL
 * before that bound, so the command is told while the lock is still ours. */
#include <errno.h>
#include <stdint.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "clock.h"
#include "lease.h"

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Waits until deadline_ms or lease_stop(); returns true when stopped. */
static bool sleep_until(struct lease *ls, int64_t deadline_ms)
{
	struct timespec ts = {
		.tv_sec = deadline_ms / 1000,
		.tv_nsec = (deadline_ms % 1000) * 1000000,
	};
	bool stop;

	pthread_mutex_lock(&ls->mutex);
	while (!ls->stop && clock_now_ms() < deadline_ms)
		if (pthread_cond_timedwait(&ls->wake, &ls->mutex, &ts) == ETIMEDOUT)
			break;
	stop = ls->stop;
	pthread_mutex_unlock(&ls->mutex);
	return stop;
}

static void *renew(void *arg)
{
	struct lease *ls = arg;
	struct lock *lk = ls->lk;
	int64_t period_ms = lk->ttl_ms / 3;
	int64_t notice_ms = lk->ttl_ms / 10 > 0 ? lk->ttl_ms / 10 : 1;
	int64_t retry_ms = min64(period_ms / 4 > 10 ? period_ms / 4 : 10, 1000);
	int64_t next_ms = lease_first_renewal_ms(ls);
	uint64_t one = 1;
	struct error last = { 0 };

	for (;;) {
		int64_t give_up_ms = lk->valid_until_ms - notice_ms;
		int64_t now_ms;
		enum extend_result r;

		if (sleep_until(ls, min64(next_ms, give_up_ms)))
			return NULL;
		now_ms = clock_now_ms();
		if (now_ms >= give_up_ms) {
			error_set(&ls->err, EX_TEMPFAIL, "not renewed in time%s%s",
				  last.exit ? ": " : "", last.msg);
			break;
		}
		r = lock_extend(lk, min64(lk->node_timeout_ms, give_up_ms - now_ms),
				&last);
		if (r == EXTEND_OK) {
			last.exit = 0;
			next_ms = lk->valid_until_ms - lk->ttl_ms + period_ms;
		} else if (r == EXTEND_LOST) {
			ls->err = last;
			break;
		} else {
			next_ms = clock_now_ms() + retry_ms;
		}
	}
	(void)!write(ls->notify_fd, &one, sizeof one);
	return NULL;
}

void lease_init(struct lease *ls, struct lock *lk)
{
	*ls = (struct lease){ .lk = lk, .notify_fd = -1 };
}

int64_t lease_first_renewal_ms(const struct lease *ls)
{
	const struct lock *lk = ls->lk;

	return lk->valid_until_ms - lk->ttl_ms + lk->ttl_ms / 3;
}

int lease_start(struct lease *ls)
{
	pthread_condattr_t attr;
	pthread_attr_t tattr;
	int e;

	ls->notify_fd = eventfd(0, EFD_CLOEXEC);
	if (ls->notify_fd < 0)
		return -1;
	pthread_mutex_init(&ls->mutex, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ls->wake, &attr);
	pthread_condattr_destroy(&attr);
	/* A small stack: the thread runs fanout rounds and nothing deep. */
	pthread_attr_init(&tattr);
	pthread_attr_setstacksize(&tattr, 256 * 1024);
	e = pthread_create(&ls->thread, &tattr, renew, ls);
	pthread_attr_destroy(&tattr);
	if (e) {
		pthread_cond_destroy(&ls->wake);
		pthread_mutex_destroy(&ls->mutex);
		errno = e;
		return -1;
	}
	ls->started = true;
	return 0;
}

void lease_stop(struct lease *ls)
{
	if (!ls->started || ls->joined)
		return;
	ls->joined = true;
	pthread_mutex_lock(&ls->mutex);
	ls->stop = true;
	pthread_cond_signal(&ls->wake);
	pthread_mutex_unlock(&ls->mutex);
	pthread_join(ls->thread, NULL);
	pthread_cond_destroy(&ls->wake);
	pthread_mutex_destroy(&ls->mutex);
}

void lease_free(struct lease *ls)
{
	lease_stop(ls);
	if (ls->notify_fd >= 0)
		close(ls->notify_fd);
	ls->notify_fd = -1;
}
