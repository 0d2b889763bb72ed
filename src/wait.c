/* wait.c - waits for a lock: tries again when a release wakes it, at
 * the holder's lease end, or after a growing, jittered pause; backs off
 * from servers that do not answer; shows the wait on a terminal. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sysexits.h>
#include <unistd.h>
#include <bsd/stdlib.h>
#include "clock.h"
#include "config.h"
#include "fanout.h"
#include "wait.h"
#include "waitline.h"

/* With no -w, an unreachable service fails after this many tries, with
 * backoff 0.1, 0.2, 0.4, 0.8 and 1.6 s between them (about 3 s). */
#define CONNECT_ATTEMPTS 6
#define RETRY_MIN_MS 50
#define RETRY_JITTER_MS 100

struct waiter {
	struct lock *lk;
	struct wait_hook *hook;	/* or NULL */
	int64_t hook_at_ms;
	struct node *wakers;	/* one connection per server, blocked in BLPOP */
	const char *blpop_argv[3];
	struct cmd blpop;
	struct waitline wl;
	int64_t start_ms, deadline_ms;	/* deadline -1: for ever */
	int n_pauses;			/* timed pauses so far: they grow */
};

/* Wake-ups: a release pushes on the lock's wake list, and Redis hands the
 * element to the one client that has waited longest in BLPOP there (or
 * keeps it, 2 s, for the next). So a release wakes one waiter, not all:
 * with W waiters a handoff costs a few scripts, not W. A refusal already
 * counts us among the waiters, so a release between it and our BLPOP
 * leaves its element in the list for us: no gap, and no second try. Each
 * server gets a connection of its own, as a blocked connection takes no
 * other commands. */
static void block(struct waiter *w)
{
	const struct lock *lk = w->lk;

	if (!w->wakers) {
		w->wakers = calloc(lk->n_nodes, sizeof *w->wakers);
		if (!w->wakers)
			return;		/* then the timed retries alone */
		for (size_t i = 0; i < lk->n_nodes; i++)
			node_init(&w->wakers[i], lk->nodes[i].url, lk->nodes[i].password);
		w->blpop_argv[0] = "BLPOP";
		w->blpop_argv[1] = lk->wake_list;
		w->blpop_argv[2] = "0";
		w->blpop = (struct cmd){ NULL, 3, w->blpop_argv, NULL };
	}
	/* Where no BLPOP is outstanding: the first time, after a wake-up, or
	 * after a failure (a dead server is asked again, at each pause). */
	for (size_t i = 0; i < lk->n_nodes; i++)
		if (node_events(&w->wakers[i]) == 0) {
			node_end(&w->wakers[i]);
			node_begin(&w->wakers[i], &w->blpop, 1, INT64_MAX);
		}
}

static void unblock(struct waiter *w)
{
	for (size_t i = 0; w->wakers && i < w->lk->n_nodes; i++) {
		node_end(&w->wakers[i]);
		node_close(&w->wakers[i]);
	}
	free(w->wakers);
	w->wakers = NULL;
}

/* Sleeps up to ms, or until a server wakes us (*woken). Returns 1 with
 * *signo when a signal came first. */
static int sleep_or_wake(struct waiter *w, const struct signals *sig, int64_t ms,
			 int *signo, bool *woken)
{
	int64_t until_ms = clock_now_ms() + ms;

	for (;;) {
		struct pollfd pfd[MAX_SERVERS + 1] = { { sig->fd, POLLIN, 0 } };
		struct node *which[MAX_SERVERS + 1];
		int64_t left_ms = until_ms - clock_now_ms();
		nfds_t n_pfd = 1;

		for (size_t i = 0; w->wakers && i < w->lk->n_nodes; i++) {
			short events = node_events(&w->wakers[i]);

			if (!events)
				continue;
			which[n_pfd] = &w->wakers[i];
			pfd[n_pfd++] = (struct pollfd){ node_fd(&w->wakers[i]), events, 0 };
		}
		if (left_ms <= 0 || poll(pfd, n_pfd, clock_poll_ms(left_ms)) <= 0)
			return 0;
		for (nfds_t k = 1; k < n_pfd; k++) {
			if (!pfd[k].revents)
				continue;
			node_step(which[k], pfd[k].revents);
			*woken |= which[k]->state == NODE_DONE;
		}
		if ((pfd[0].revents & POLLIN) && (*signo = signals_interrupt(sig)))
			return 1;
		if (*woken)
			return 0;
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

/* How long to sleep before the next try. Blocked in BLPOP, a timed try
 * only catches what wakes nobody: a release by a client that does not
 * push (redis-py, redsync, a DEL), or one whose wake-up went to a waiter
 * that had died. The lease's end and the lapse of a dead waiter we wait
 * behind come as retry_ms. So the pauses grow, about 0.25, 0.5, 1 and
 * 2 s, then 3 s, each drawn within a third of that either way so that a
 * thousand waiters do not move in step: an idle waiter costs a try every
 * 2 to 4 s, and its liveness (lock.c) allows for LOCK_RETRY_MAX_MS.
 * Without BLPOP, redis-py's pace. */
static int64_t next_try_ms(struct waiter *w, int64_t retry_ms)
{
	int64_t sleep_ms;

	if (w->wakers) {
		int64_t mean_ms = w->n_pauses < 4 ? 250 << w->n_pauses :
				  LOCK_RETRY_MAX_MS * 3 / 4;

		w->n_pauses += w->n_pauses < 4;
		sleep_ms = mean_ms * 2 / 3 +
			   arc4random_uniform((uint32_t)(mean_ms * 2 / 3) + 1);
	} else {
		sleep_ms = RETRY_MIN_MS + arc4random_uniform(RETRY_JITTER_MS);
	}
	/* No sleeping past the hint: the lease's end, a dead waiter's lapse. */
	if (retry_ms >= 0 && retry_ms < sleep_ms)
		sleep_ms = retry_ms;
	return sleep_ms;
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
	int64_t backoff_ms = 100;
	int n_failures = 0;
	bool slot_named = false, held = false;

	for (;;) {
		int64_t sleep_ms, retry_ms = -1, now_ms;
		enum lock_result r;

		/* --fair: servers that cannot give a ticket are retried as
		 * ones that cannot answer a try */
		if (p->fair && !lk->ticket[0] && lock_take_ticket(lk, err) < 0)
			r = LOCK_FAILED;
		else
			r = lock_try(lk, &retry_ms, err);

		/* --limit over several servers: they picked different free
		 * slots; all ask for one a server named, at once, once. */
		lk->slot_arg[0] = '\0';
		if (r == LOCK_HELD && lk->free_slot >= 0 && !slot_named) {
			snprintf(lk->slot_arg, sizeof lk->slot_arg, "%ld", lk->free_slot);
			slot_named = true;
			continue;
		}
		slot_named = false;

		if (r == LOCK_ACQUIRED) {
			lock_end_wait(lk, r);
			if (enough_left(lk, err))
				return r;
			r = LOCK_FAILED;
			/* a fresh ticket: our place in the --fair queue is gone */
			if (lock_begin(lk, err) < 0)
				return r;
		}
		if (r == LOCK_REENTERED)
			return r;
		if (r == LOCK_FAILED) {
			if (err->exit != EX_UNAVAILABLE)
				return r;	/* credentials, bad replies: no retry */
			if (w->deadline_ms < 0 && ++n_failures >= CONNECT_ATTEMPTS)
				return r;
			sleep_ms = backoff_ms;
			backoff_ms = backoff_ms * 2 > 1600 ? 1600 : backoff_ms * 2;
		} else {
			n_failures = 0;
			backoff_ms = 100;
			held = true;
			if (w->deadline_ms == w->start_ms)	/* -n: no wait to show */
				return r;
			waitline_update(&w->wl, lk->held_by, lk->queue_pos, p->fair);
			block(w);
			sleep_ms = next_try_ms(w, retry_ms);
		}
		now_ms = clock_now_ms();
		if (w->deadline_ms >= 0) {
			/* Out of time in a passing state (a Cluster moving the
			 * lock's slot answers TRYAGAIN), after the servers said
			 * the lock is held: held, as far as anyone knows (1, not
			 * 69, which says the servers could not be asked). */
			if (now_ms >= w->deadline_ms)
				return r == LOCK_FAILED && held && lock_busy(lk) ?
				       LOCK_HELD : r;
			if (sleep_ms > w->deadline_ms - now_ms)
				sleep_ms = w->deadline_ms - now_ms;
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

	if (hook)
		w.hook_at_ms = w.start_ms + hook->every_ms;

	w.deadline_ms = wait_ms >= 0 ? w.start_ms + wait_ms : -1;
	if (lock_begin(lk, err) < 0)
		return LOCK_FAILED;
	waitline_init(&w.wl, p->name, p->verbose);
	r = wait_loop(&w, sig, signo, err);
	waitline_clear(&w.wl);
	unblock(&w);
	if (r != LOCK_ACQUIRED)
		lock_end_wait(lk, r);
	return r;
}
