/* wait.h - waiting for a lock: retries, push wake-ups, the wait line */
#pragma once
#include "lock.h"
#include "log.h"

/* Takes the lock, waiting as -n/-w say; gives back partial acquisitions
 * and leaves no subscription or queue entry behind unless it returns
 * LOCK_ACQUIRED. sigfd: a signalfd whose signals interrupt the wait
 * (*signo tells which). */
enum lock_result wait_acquire(struct lock *lk, int sigfd, int *signo,
			      struct error *err);
