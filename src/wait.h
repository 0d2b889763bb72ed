/* wait.h - waiting for a lock: retries, push wake-ups, the wait line */
#pragma once
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
