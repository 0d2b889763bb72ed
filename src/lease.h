/* lease.h - when to renew and when the lease is gone; the renewal thread */
#pragma once
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "lock.h"
#include "log.h"

/* -k: the most keys one lease renews */
#define MAX_LEASE_LOCKS 64
/* The most descriptors the lease gives the supervisor's poll() */
#define MAX_LEASE_FDS 64

/* The supervisor keeps the time; a thread of the lease's own runs each
 * renewal round, since a round blocks for up to --node-timeout. */
struct lease {
	struct lock *lk;	/* the thread's while a round runs (busy) */
	size_t n_locks;		/* -k: lk[0..n_locks-1], one round renews all */
	int64_t period_ms, notice_ms, retry_ms;
	int64_t valid_until_ms;	/* the lock is ours at least until then */
	int64_t renew_at_ms;	/* the next round starts then */
	bool halted;		/* no more rounds: lost, --max-hold, the end */
	bool busy;		/* a round runs */
	struct error last;	/* why the last round failed */
	int notify_fd;		/* eventfd the thread writes after each round;
				 * -1 until the thread starts */
	/* the thread, and what it hands over under mutex */
	pthread_t thread;
	pthread_mutex_t mutex;
	pthread_cond_t kick;
	bool started, go, stop;
	int64_t round_timeout_ms;
	enum extend_result result;
	int64_t result_valid_ms;
	struct error result_err;
	/* Told early when the lock may be gone (another process released
	 * or broke it, the server closed the session): from watch_at_ms on,
	 * each lock's engine gives descriptors for the supervisor's poll()
	 * (watch_fds); an event there asks for a renewal round at once,
	 * which decides. */
	int64_t watch_at_ms;	/* -1: none (started, or no need) */
	bool watching;
	size_t watch_n[MAX_LEASE_LOCKS];	/* each lock's share of the
						 * pollfds given out */
	bool recheck;		/* a notice came while a round ran */
	char notice[256];	/* what the last notice said */
	/* Told of each round's result, on the supervisor's thread (noticed:
	 * a notice came first); NULL: nobody. */
	void (*on_round)(void *arg, enum extend_result r, bool noticed,
			 const struct error *err);
	void *on_round_arg;
};

/* The lease of a freshly acquired lk; nothing runs yet. */
void lease_init(struct lease *ls, struct lock *lk);
/* The same for n locks held together (-k): a round extends every one, the
 * lease lasts as long as the first to run out, and is lost when any is.
 * Each lock's engine watches its own (a release notice of any key). */
void lease_init_locks(struct lease *ls, struct lock *lks, size_t n);
/* Takes the descriptor the renewals need before the command starts, so
 * that a low ulimit -n fails the run (71), not the first renewal. */
int lease_reserve(struct lease *ls, struct error *err);
/* The command must have stopped by then: the validity bound less a tenth
 * of the TTL, so that it is told while the lock is still ours. */
int64_t lease_deadline_ms(const struct lease *ls);
/* The validity bound itself: the lease may run out on a server then. */
int64_t lease_end_ms(const struct lease *ls);
/* When lease_tick() must run next; -1 when halted. */
int64_t lease_next_ms(const struct lease *ls);
/* At lease_next_ms(): starts a round when one is due (and the thread with
 * the first: a command that ends sooner never pays for a thread). Returns
 * -1 with err when the lease is gone: the deadline passed (75) or the
 * thread could not start (71); the lease is halted then. */
int lease_tick(struct lease *ls, int64_t now_ms, struct error *err);
/* When notify_fd is readable: takes the round's result. Returns -1 with
 * err (75) when the servers said the lock is no longer ours. */
int lease_collect(struct lease *ls, int64_t now_ms, struct error *err);
/* What the engines watch (at most MAX_LEASE_FDS pollfds), for the
 * supervisor's poll(); none while a renewal round runs, which has the
 * locks' connections. Returns how many. */
size_t lease_watch_fds(struct lease *ls, struct pollfd *pfd);
/* Their poll() results: a notice asks for a renewal round at once. */
void lease_watch_events(struct lease *ls, const struct pollfd *pfd, size_t n);
/* No more rounds; the one running, if any, is left to finish. */
void lease_halt(struct lease *ls);
/* Halts and joins the thread (a round ends within --node-timeout):
 * lk is the caller's again. */
void lease_stop(struct lease *ls);
void lease_free(struct lease *ls);
