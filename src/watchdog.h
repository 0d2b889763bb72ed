/* watchdog.h - a process that stops the job when dlock no longer can */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "lock.h"
#include "log.h"
#include "engine.h"

struct watch_page;

#define WATCHDOG_MAX_HOLD 8

/* The watchdog's name in ps (comm): without "dlock" in it, so that a
 * `pkill -9 dlock` meant for dlock leaves the watchdog to stop the job
 * (pkill matches comm anywhere). Its arguments say "dlock watchdog". */
#define WATCHDOG_COMM "dlk-watchdog"

struct watchdog {
	struct watch_page *page;	/* shared with the watchdog process */
	int page_fd;		/* its memfd, for a watchdog started again */
	pid_t pid;
	int fd;			/* a pipe's write end: EOF says dlock is gone */
	int hold[WATCHDOG_MAX_HOLD];	/* the lock's connections it holds */
	size_t n_hold;
};

/* Starts the watchdog before the command starts: from then on, if dlock
 * dies, or is stalled past deadline_ms (SIGSTOP, a debugger), the job's
 * process group gets on_lost_signal and SIGCONT at once, SIGKILL after
 * kill_after_ms or at end_ms (just before the lease runs out), whichever
 * is first. hold[0..n_hold-1]: the lock's connections where the store
 * frees the lock when its connection closes (CAP_HELD_BY_CONNECTION): the
 * watchdog keeps them open until it is done, so that a dlock killed does
 * not hand the lock on while its job still runs.
 * Returns 0, or -1 with err (71). */
int watchdog_start(struct watchdog *wd, int on_lost_signal,
		   int64_t kill_after_ms, int64_t deadline_ms, int64_t end_ms,
		   const int *hold, size_t n_hold, struct error *err);
/* The watchdog process itself: main() of "dlock watchdog", which finds
 * the shared page on fd 3 and dlock's pipe on fd 4. Returns only when it
 * was not started by dlock (64). */
int watchdog_main(void);
/* The job's process group, published by the command's own process before
 * it execs (async-signal-safe: a plain atomic store). */
void watchdog_job(struct watchdog *wd, pid_t pgid);
/* dlock reaped the command: the job's group number may be another's. */
void watchdog_command_reaped(struct watchdog *wd);
/* What the watchdog needs, should dlock be killed, to say so on dlock's
 * stderr (naming the lock as name) and to record it in the history of
 * each of lks[0..n-1], as dlock would have: their servers, keys, token,
 * fence and holder info, and the TLS settings. A lock that does not fit
 * the watchdog's page is not recorded. */
void watchdog_record(struct watchdog *wd, const char *name,
		     const struct lock *lks, size_t n,
		     const struct tls_options *tls);
/* dlock's children that are not the job's: those it inherited. */
void watchdog_skip(struct watchdog *wd, const pid_t *pids, size_t n);
/* The lease was renewed: the new deadline and end. */
void watchdog_deadline(struct watchdog *wd, int64_t deadline_ms, int64_t end_ms);
/* Whoever claims first sends the --on-lost signal: true for the first
 * caller, whether dlock or its watchdog, so that the job gets it once. */
bool watchdog_claim(struct watchdog *wd);
/* Whether the --on-lost signal was sent, by either. */
bool watchdog_fired(const struct watchdog *wd);
/* The watchdog process ended while the job runs (somebody killed it):
 * starts another, with the same page, unless it ended after it acted.
 * Returns 0 or -1 (err). */
int watchdog_restart(struct watchdog *wd, struct error *err);
/* The job is over: the watchdog exits without touching it. */
void watchdog_end(struct watchdog *wd);
