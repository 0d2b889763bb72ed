/* wait.h - waiting for a lock: retries, push wake-ups, the wait line */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "lock.h"
#include "log.h"
#include "signals.h"

/* Takes the lock, waiting up to wait_ms (0: not at all, -1: for ever);
 * gives back partial acquisitions
 * and leaves no subscription or queue entry behind unless it returns
 * LOCK_ACQUIRED, and acquires only with more of the lease left than the
 * notice the command would get. A signal from sig interrupts the wait
 * (*signo tells which). */
enum lock_result wait_acquire(struct lock *lk, int64_t wait_ms,
			      const struct signals *sig, int *signo,
			      struct error *err);

/* Work to do every every_ms while waiting (-k: renew the keys held while
 * a later one is waited for), between tries, so that the waiter keeps its
 * place (its --fair ticket) meanwhile. fn returns 0, or -1 with err: the
 * wait then ends (LOCK_FAILED) with failed set. */
struct wait_hook {
	int64_t every_ms;
	int (*fn)(void *arg, struct error *err);
	void *arg;
	bool failed;
};

/* wait_acquire(), running hook (NULL: none) as it says. */
enum lock_result wait_acquire_hooked(struct lock *lk, int64_t wait_ms,
				     const struct signals *sig, int *signo,
				     struct wait_hook *hook, struct error *err);
