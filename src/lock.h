/* lock.h - a lock as the core takes, holds and gives it back, whatever the
 * engine: the holder info, re-entry, the lease's notice, and each step
 * handed to the lock's engine (engine.h). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "engine.h"
#include "log.h"

/* The lock of p (its name, servers, mode...): the holder info, whether
 * DLOCK_KEY/DLOCK_TOKEN make it a re-entry, and the engine's own state.
 * Nothing is contacted yet. */
int lock_init(struct lock *lk, const struct lock_params *p, struct error *err);
void lock_free(struct lock *lk);
/* With several servers: one line for each that failed in the last
 * round without a majority (--verbose). */
void lock_log_servers(const struct lock *lk);

/* Starts an acquisition: a fresh token (or the -k one). */
int lock_begin(struct lock *lk, struct error *err);
/* One try. LOCK_HELD leaves in *retry_ms how long to wait at most before
 * the next (-1: the waiter's own pace); anything but LOCK_ACQUIRED gives
 * back what was partly taken. */
enum lock_result lock_try(struct lock *lk, int64_t *retry_ms, struct error *err);
/* Ends an acquisition's wait: leaves the waiters (and the --fair queue),
 * cancels what still waits in the store. */
void lock_end_wait(struct lock *lk, enum lock_result r);
/* One renewal round, each server bounded by timeout_ms. */
enum extend_result lock_extend(struct lock *lk, int64_t timeout_ms,
			       struct error *err);
/* Gives back an acquisition no command used (the history forgets it).
 * Returns 0, 1 when a majority but not every server confirmed (err says
 * which did not), or -1 when no majority did: the lock then lapses with
 * its lease. */
int lock_release(struct lock *lk, struct error *err);
/* The same once a job ran under the lock: the history records it released
 * with exit_status (LOCK_EXIT_UNKNOWN when not known) and how long it was
 * held, or the lease lost when the lock was no longer ours: then it
 * returns LOCK_RELEASE_LOST with err (75). With min_hold (the command ran, and its lease
 * was not lost) and --min-hold not over yet, the engine keeps the lock
 * for what is left of it, where it can (CAP_MIN_HOLD_KEPT); elsewhere
 * dlock keeps it, and a lock ended meanwhile (release --token, --force)
 * is 1 with err, not LOCK_RELEASE_LOST: the job ran under it to its end. */
int lock_release_job(struct lock *lk, int exit_status, bool min_hold,
		     struct error *err);
/* -k: the lock's fence raised to fence (a larger one, another key's), in
 * the store where its counter is the key's own. -1 with err. */
int lock_raise_fence(struct lock *lk, const char *fence, struct error *err);
/* Whether the last try's failures were all passing states a server
 * answered with (TRYAGAIN...), none a server that could not be reached. */
bool lock_busy(const struct lock *lk);
/* Whether enough of the lease is left to start the command: the notice it
 * would get before the lease ends, and a renewal round. -1 with err (69)
 * when not: the caller gives the lock back. */
int lock_check_left(const struct lock *lk, struct error *err);
/* --node-timeout for lk's tries: as given, but where the store granted a
 * shorter lease than --ttl asked (ZooKeeper's maxSessionTimeout) at most
 * a third of it, since it must be shorter than the TTL (config.c). */
int64_t lock_node_timeout_ms(const struct lock *lk);
/* The descriptors the locks lk[0..n-1] hold their lock by, where the
 * store frees a lock the moment its connection closes
 * (CAP_HELD_BY_CONNECTION), at most max: for the watchdog to hold. */
size_t lock_held_fds(const struct lock *lk, size_t n, int *fds, size_t max);
/* How long before the lease ends the command is told that it is gone: a
 * tenth of the TTL (at least 1 ms), time for it to stop while the lock is
 * still ours. A command starts only with more than this left. */
int64_t lock_notice_ms(int64_t ttl_ms);
/* How long the store may keep a lock that nobody renews or gives back
 * any more, from now: for "the lock lapses within" (lk->lapse_ms). */
int64_t lock_lapse_ms(const struct lock *lk);
