/* wait.c - waits for a lock: tries again when a release wakes it, at
 * the holder's lease end, or after a growing, jittered pause; backs off
 * from servers that do not answer or are full, within --connect-budget;
 * shows the wait on a terminal. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sysexits.h>
#include <unistd.h>
#include <bsd/stdlib.h>
#include "clock.h"
#include "config.h"
#include "net.h"
#include "wait.h"
#include "waitline.h"

/* A try that failed for want of a server (69: down, full, or in a
 * passing state) is made again after a pause that grows, 0.1, 0.2, 0.4,
 * 0.8, 1.6, then 3.2 s, each drawn within half of that either way: a
 * fleet that failed together (a cron minute that filled the server's
 * connections) does not come back together. */
#define FAILED_FIRST_MS 100
#define FAILED_LAST_MS 3200
/* A server full at a cost (PostgreSQL forks a backend to say "too many
 * clients"): 0.8, 1.6, then 3.2 s. A fleet that filled it at one
 * instant no longer comes back five times in its first 3 s, each try a
 * backend started to refuse it. Not longer than 3.2 s: waiters left
 * outside a queue come in at that pace once it moves, and 6.4 s made
 * 200 waiters' drain 8.9 s, not 4 to 4.7 (tests/bench/README.md). */
#define FULL_FIRST_MS 800
/* A waiter that holds no connection between tries (PostgreSQL's and
 * MySQL's dlock_wait=poll): each try is a connection the server starts
 * (a backend on PostgreSQL), so the pauses grow, 0.1, 0.2, 0.4, 0.8,
 * 1.6, then 2 s, each drawn within half of that either way: an idle
 * waiter costs the server a connection every 1 to 3 s, and a release is
 * found at the next try of any waiter (the more of them, the sooner). */
#define POLL_FIRST_MS 100
#define POLL_LAST_MS 2000
#define RETRY_MIN_MS 50
#define RETRY_JITTER_MS 100

struct waiter {
	struct lock *lk;
	struct wait_hook *hook;	/* or NULL */
	int64_t hook_at_ms;
	struct waitline wl;
	int64_t start_ms, deadline_ms;	/* deadline -1: for ever */
	int n_pauses;			/* timed pauses so far: they grow */
	int64_t failing_since_ms;	/* the first of the failed tries in a
					 * row; -1: the last try was answered */
	int64_t failed_pause_ms;	/* the next pause after one, on average */
	bool last_try;			/* the next failed try ends it */
	bool woken_failing;		/* the engine's descriptors ended a
					 * pause of this run of failures */
	bool pushed;			/* the engine gave descriptors that
					 * wake us (Redis BLPOP, a blocking
					 * call, a watch) */
};

#define MAX_WAIT_FDS 64

/* Sleeps up to ms, or until the engine's descriptors wake us (*woken).
 * In a run of failed tries they may do so once: a session that connected
 * meanwhile (ZooKeeper's) is worth trying at once, but a failed try's
 * connections may be closed, readable at once, and would wake us again
 * and again (a server that drops every connection: a reconnect loop).
 * Returns 1 with *signo when a signal came first. */
static int sleep_or_wake(struct waiter *w, const struct signals *sig, int64_t ms,
			 int *signo, bool *woken)
{
	int64_t until_ms = clock_now_ms() + ms;
	bool failing = w->failing_since_ms >= 0;
	bool use_fds = !(failing && w->woken_failing);

	for (;;) {
		struct pollfd pfd[MAX_WAIT_FDS + 1] = { { sig->fd, POLLIN, 0 } };
		int64_t left_ms = until_ms - clock_now_ms();
		size_t n = use_fds ?
			   w->lk->eng->lock.wait_fds(w->lk, pfd + 1, MAX_WAIT_FDS) : 0;

		w->pushed |= n > 0;
		if (left_ms <= 0 || poll(pfd, n + 1, clock_poll_ms(left_ms)) <= 0)
			return 0;
		if (n > 0)
			*woken |= w->lk->eng->lock.wait_events(w->lk, pfd + 1, n);
		if ((pfd[0].revents & POLLIN) && (*signo = signals_interrupt(sig)))
			return 1;
		if (*woken) {
			w->woken_failing |= failing;
			return 0;
		}
		/* failing: a descriptor that is ready and says nothing (a
		 * closed connection) would make this loop spin */
		use_fds &= !failing;
	}
}

/* Sleeps until the next try, as sleep_or_wake. Tries are seconds apart:
 * a wait line on a terminal counts on meanwhile, redrawn each second from
 * what the last try said, at no cost to the servers. */
static int sleep_until_try(struct waiter *w, const struct signals *sig,
			   int64_t ms, int *signo)
{
	int64_t until_ms = clock_now_ms() + ms;

	for (;;) {
		int64_t now_ms = clock_now_ms(), left_ms = until_ms - now_ms;
		int64_t to_second_ms = 1000 - (now_ms - w->wl.start_ms) % 1000;
		bool woken = false;

		if (w->wl.tty && left_ms > to_second_ms)
			left_ms = to_second_ms;
		if (sleep_or_wake(w, sig, left_ms, signo, &woken))
			return 1;
		if (woken || clock_now_ms() >= until_ms)
			return 0;
		waitline_update(&w->wl, w->lk->held_by, w->lk->queue_pos,
				w->lk->p->fair);
	}
}

/* How long to sleep before the next try. Where the engine wakes us
 * (Redis's BLPOP, a blocking call, a watch), a timed try only catches
 * what wakes nobody: on Redis a release by a client that does not push
 * (redis-py, redsync, a DEL), or one whose wake-up went to a waiter that
 * had died. The lease's end and the lapse of a dead waiter we wait behind
 * come as retry_ms. So the pauses grow, about 0.25, 0.5, 1 and 2 s, then
 * 3 s, each drawn within a third of that either way so that a thousand
 * waiters do not move in step: an idle waiter costs a try every 2 to 4 s,
 * and its liveness on Redis allows for LOCK_RETRY_MAX_MS. A waiter that
 * holds no connection between tries: growing pauses too (POLL_*_MS).
 * Without anything to wake us, redis-py's pace. */
static int64_t next_try_ms(struct waiter *w, int64_t retry_ms)
{
	int64_t sleep_ms;

	if (w->pushed) {
		int64_t mean_ms = w->n_pauses < 4 ? 250 << w->n_pauses :
				  LOCK_RETRY_MAX_MS * 3 / 4;

		w->n_pauses += w->n_pauses < 4;
		sleep_ms = mean_ms * 2 / 3 +
			   arc4random_uniform((uint32_t)(mean_ms * 2 / 3) + 1);
	} else if (w->lk->waits_polling) {
		int64_t mean_ms = (int64_t)POLL_FIRST_MS << w->n_pauses;

		if (mean_ms < POLL_LAST_MS)
			w->n_pauses++;
		else
			mean_ms = POLL_LAST_MS;
		sleep_ms = mean_ms / 2 + arc4random_uniform((uint32_t)mean_ms + 1);
	} else {
		sleep_ms = RETRY_MIN_MS + arc4random_uniform(RETRY_JITTER_MS);
	}
	/* No sleeping past the hint: the lease's end, a dead waiter's lapse. */
	if (retry_ms >= 0 && retry_ms < sleep_ms)
		sleep_ms = retry_ms;
	return sleep_ms;
}

/* After a try that failed for want of a server: when to give up (69).
 * The servers get --connect-budget: -n tries them that long
 * (a full server is not a held lock, nor an unreachable one); -w as
 * long as it waits and no longer (as flock's -w, it bounds the whole
 * run's wait); with no -w, the failures in a row may last that long
 * (they end the wait: a service that is down is not a lock that is
 * held). */
static int64_t give_up_at(const struct waiter *w)
{
	int64_t budget_ms = w->lk->p->connect_budget_ms;

	if (w->deadline_ms < 0)
		return w->failing_since_ms + budget_ms;
	if (w->deadline_ms > w->start_ms)
		return w->deadline_ms;
	return w->start_ms + budget_ms;
}

/* The pause after a failed try: growing, jittered. One that would end
 * past the moment to give up makes the next try the last, at a moment
 * drawn in the second half of the time left: hosts that began together
 * (a cron minute) would otherwise all make their last try at the same
 * instant. So does one that would leave less than the shortest pause
 * of its step (half its mean): the try after the next one would follow
 * in the few ms still left, a pause that shrank to nothing; and the
 * hosts whose tries came that close to the end, a quarter of a fleet on
 * a 2 s budget, would all come back in those last ms before the moment
 * they all give up. */
static int64_t next_failed_ms(struct waiter *w, int64_t now_ms, int64_t give_up_ms)
{
	int64_t mean_ms, sleep_ms, left_ms = give_up_ms - now_ms;

	if (w->lk->full_at_a_cost && w->failed_pause_ms < FULL_FIRST_MS)
		w->failed_pause_ms = FULL_FIRST_MS;
	mean_ms = w->failed_pause_ms;
	sleep_ms = mean_ms / 2 + arc4random_uniform((uint32_t)mean_ms + 1);
	if (w->failed_pause_ms < FAILED_LAST_MS)
		w->failed_pause_ms *= 2;
	if (sleep_ms + mean_ms / 2 > left_ms) {
		/* -w's last try is at its end, as a wait for the lock's is */
		if (w->deadline_ms > w->start_ms)
			sleep_ms = left_ms;
		else
			sleep_ms = left_ms / 2 + arc4random_uniform((uint32_t)(left_ms / 2) + 1);
		w->last_try = true;
	}
	return sleep_ms;
}

/* The next try after a failed one gets twice the deadline of the last
 * (--node-timeout at first), up to a third of the lease and what is left
 * before giving up: a server too slow to answer in time (a listen queue,
 * a backlog of requests a fleet just filled) is still working on the try
 * that gave up on it, and a retry as short only adds to its load. */
static void slower_tries(struct waiter *w, int64_t now_ms)
{
	struct lock *lk = w->lk;
	int64_t base_ms = lock_node_timeout_ms(lk), ms = lk->node_timeout_ms * 2;
	int64_t left_ms = give_up_at(w) - now_ms;

	if (ms > lk->ttl_ms / 3)
		ms = lk->ttl_ms / 3;
	if (ms > left_ms)
		ms = left_ms;
	lk->node_timeout_ms = ms > base_ms ? ms : base_ms;
}

/* Acquired, after the last round (leaving the waiters where a server
 * refused, giving back stray --limit grants): is enough of the lease left
 * to start the command? A paused minority server costs a --node-timeout
 * per round, and a short TTL may be gone by now. If not, give it back. */
static bool enough_left(struct lock *lk, struct error *err)
{
	struct error ignored;

	if (lock_check_left(lk, err) == 0)
		return true;
	lock_release(lk, &ignored);
	return false;
}

static enum lock_result wait_loop(struct waiter *w, const struct signals *sig,
				  int *signo, struct error *err)
{
	struct lock *lk = w->lk;
	const struct lock_params *p = lk->p;
	bool held = false;

	w->failing_since_ms = -1;
	for (;;) {
		int64_t sleep_ms, retry_ms = -1, now_ms;
		enum lock_result r = lock_try(lk, &retry_ms, err);

		if (r != LOCK_FAILED)
			lk->node_timeout_ms = lock_node_timeout_ms(lk);
		if (r == LOCK_ACQUIRED) {
			lock_end_wait(lk, r);
			if (enough_left(lk, err))
				return r;
			r = LOCK_FAILED;
			/* a fresh start: our place in any queue is gone */
			if (lock_begin(lk, err) < 0)
				return r;
		}
		if (r == LOCK_REENTERED)
			return r;
		now_ms = clock_now_ms();
		/* a try that a signal cut short (net_wait()): the signal's */
		if (net_take_stop() && r == LOCK_FAILED &&
		    (*signo = signals_interrupt(sig)))
			return LOCK_INTERRUPTED;
		if (r == LOCK_FAILED) {
			if (err->exit != EX_UNAVAILABLE)
				return r;	/* credentials, bad replies: no retry */
			/* -n: a certificate to fix is no busy server */
			if (lk->misconfigured && w->deadline_ms == w->start_ms)
				return r;
			if (w->failing_since_ms < 0) {
				w->failing_since_ms = now_ms;
				w->failed_pause_ms = FAILED_FIRST_MS;
				w->last_try = false;
				w->woken_failing = false;
			}
			/* Out of time in a passing state (a Cluster moving the
			 * lock's slot answers TRYAGAIN), after the servers said
			 * the lock is held: held, as far as anyone knows (1, not
			 * 69, which says the servers could not be asked). */
			if (held && lock_busy(lk) && w->deadline_ms >= 0 &&
			    now_ms >= w->deadline_ms)
				return LOCK_HELD;
			if (now_ms >= give_up_at(w) || w->last_try)
				return r;
			sleep_ms = next_failed_ms(w, now_ms, give_up_at(w));
			slower_tries(w, now_ms + sleep_ms);
		} else {
			w->failing_since_ms = -1;
			held = true;
			if (w->deadline_ms == w->start_ms)	/* -n: no wait to show */
				return r;
			waitline_update(&w->wl, lk->held_by, lk->queue_pos, p->fair);
			sleep_ms = next_try_ms(w, retry_ms);
			if (w->deadline_ms >= 0) {
				if (now_ms >= w->deadline_ms)
					return r;
				if (sleep_ms > w->deadline_ms - now_ms)
					sleep_ms = w->deadline_ms - now_ms;
			}
		}
		if (w->hook) {
			if (now_ms >= w->hook_at_ms) {
				if (w->hook->fn(w->hook->arg, err) < 0) {
					w->hook->failed = true;
					return LOCK_FAILED;
				}
				now_ms = clock_now_ms();
				w->hook_at_ms = now_ms + w->hook->every_ms;
			}
			if (sleep_ms > w->hook_at_ms - now_ms)
				sleep_ms = w->hook_at_ms - now_ms;
		}
		if (sleep_until_try(w, sig, sleep_ms, signo))
			return LOCK_INTERRUPTED;
	}
}

enum lock_result wait_acquire(struct lock *lk, int64_t wait_ms,
			      const struct signals *sig, int *signo,
			      struct error *err)
{
	return wait_acquire_hooked(lk, wait_ms, sig, signo, NULL, err);
}

enum lock_result wait_acquire_hooked(struct lock *lk, int64_t wait_ms,
				     const struct signals *sig, int *signo,
				     struct wait_hook *hook, struct error *err)
{
	const struct lock_params *p = lk->p;
	struct waiter w = { .lk = lk, .start_ms = clock_now_ms(), .hook = hook };
	enum lock_result r;
	int stop_fd;

	if (hook)
		w.hook_at_ms = w.start_ms + hook->every_ms;

	w.deadline_ms = wait_ms >= 0 ? w.start_ms + wait_ms : -1;
	lk->wait_deadline_ms = w.deadline_ms;
	if (lock_begin(lk, err) < 0)
		return LOCK_FAILED;
	waitline_init(&w.wl, p->name, p->verbose);
	/* a try waiting on a silent server ends at a signal, not at its
	 * deadline (up to a third of the TTL once tries have grown) */
	stop_fd = signals_stop_fd(sig);
	net_set_stop_fd(stop_fd);
	r = wait_loop(&w, sig, signo, err);
	net_set_stop_fd(-1);
	if (stop_fd >= 0)
		close(stop_fd);
	lk->node_timeout_ms = lock_node_timeout_ms(lk);	/* slower_tries() */
	waitline_clear(&w.wl);
	/* acquired, it left the waiters already (wait_loop) */
	if (r != LOCK_ACQUIRED)
		lock_end_wait(lk, r);
	return r;
}
