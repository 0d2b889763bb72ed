/* lock.h - Redis: acquire, extend and release a lock on one or several
 * servers (RedLock over several) */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "engine.h"
#include "log.h"
#include "conn.h"

/* Redis's part of a lock (struct lock's e): its keys, its servers and
 * what the last round said. The engine adapter (engine.c) copies what the
 * core reads (token, fence, valid_until_ms, held_by...) to struct lock. */
struct rlock {
	const struct lock_params *p;
	struct lock *core;		/* the core's: holder info, re-entry */
	struct node *nodes;		/* n_nodes of them */
	size_t n_nodes;
	struct error *why;		/* each server's part in the last failure */
	bool *granted;			/* which servers granted the last try */
	char *key, *fence_key, *owner_key, *mode_key;
	char *queue_key, *alive_key, *ticket_key, *slots_key, *wake_key;
	char *writers_key;		/* exclusive waiters, whom readers let by */
	char *wake_list;		/* what this waiter BLPOPs: wake_key[:token] */
	char *history_key;		/* a stream of the lock's events */
	char *notice_key;		/* notice_key:token: a holder is told there
					 * that its lock was released by another */
	char token[33];
	char fence[24];
	const char *reentry_token;	/* DLOCK_TOKEN when DLOCK_KEY is our key */
	int64_t ttl_ms, node_timeout_ms;
	int64_t valid_until_ms;		/* monotonic: ours at least until then */
	char ttl_arg[24], mode_arg[24], ticket[24], alive_arg[24];
	char slot_arg[24];	/* --limit: the slot to ask for, "" for any */
	char history_arg[24];
	int64_t acquired_ms;	/* monotonic: when the last acquisition began */
	/* what the last refusal said, for the wait line */
	char held_by[512];
	long queue_pos;
	long free_slot;		/* a slot a server said is free, or -1 */
	bool waited;		/* a server refused us and counts us a waiter */
	bool refused;		/* a server said the lock is held (since lock_init) */
};

int rlock_init(struct rlock *lk, struct lock *core, struct error *err);
void rlock_free(struct rlock *lk);
/* With several servers: one line for each that failed in the last
 * round without a majority (--verbose). */
void rlock_log_servers(const struct rlock *lk);

/* Starts an acquisition: a fresh token, and no --fair ticket yet. */
int rlock_begin(struct rlock *lk, struct error *err);
/* --fair: the acquisition's place in the queue, from a majority of the
 * servers; before the first try and after every rlock_begin(). */
int rlock_take_ticket(struct rlock *lk, struct error *err);
/* One try on every server. LOCK_HELD leaves in *retry_ms how long the
 * holder's lease still runs (-1: unknown); anything but LOCK_ACQUIRED
 * gives back what was partly taken. */
enum lock_result rlock_try(struct rlock *lk, int64_t *retry_ms, struct error *err);
/* Ends an acquisition's wait: leaves the waiters (and the --fair queue)
 * wherever it still stands among them. */
void rlock_end_wait(struct rlock *lk, enum lock_result r);
/* One renewal round, each server bounded by timeout_ms. */
enum extend_result rlock_extend(struct rlock *lk, int64_t timeout_ms,
			       struct error *err);
/* Releases on every server. Returns 0, 1 when a majority but not every
 * server confirmed (err says which did not), or -1 when no majority did:
 * the lock then lapses with its lease. A server in a passing state
 * (TRYAGAIN in a Cluster's slot migration, LOADING) is asked again while
 * the lease lasts, at most 5 s; one whose connection broke since the last
 * round (a restart), once more on a fresh connection. This gives back an
 * acquisition no command used: the history forgets it. */
int rlock_release(struct rlock *lk, struct error *err);
/* The same once a job ran under the lock: the history records it released
 * with exit_status (LOCK_EXIT_UNKNOWN when not known) and how long it was
 * held, or the lease lost when the lock was no longer ours. With min_hold
 * (the command ran, and its lease was not lost) and --min-hold not over
 * yet, the lock is kept instead: its lease shortened to what is left of
 * the minimum, never lengthened, its holder info marked finished. */
int rlock_release_job(struct rlock *lk, int exit_status, bool min_hold,
		     struct error *err);
/* rlock_release_job() returns LOCK_RELEASE_LOST (engine.h) when a
 * majority of the servers said the lock was not ours any more. */
/* -k: raises the lock's fencing counter to fence (a larger one, another
 * key's) on the servers that granted it, and makes it this holder's fence
 * (its info too). -1 with err when no majority stored it. */
int rlock_raise_fence(struct rlock *lk, const char *fence, struct error *err);
/* Whether the last round's failures were all passing states a server
 * answered with (TRYAGAIN, LOADING, BUSY...), none a server that could not
 * be reached. */
bool rlock_busy(const struct rlock *lk);

/* Between lock.c and unlock.c only. */
/* The release script on every server (not skip), where the lock is:
 * how is "job" (exit_status known, or LOCK_EXIT_UNKNOWN) or "undo" (see
 * script_release); min_hold keeps the lock for what is left of
 * --min-hold. Returns how many servers answered. */
size_t rlock_release_round(struct rlock *lk, const char *how, int exit_status,
			   bool min_hold, int64_t timeout_ms);
/* err: "N of M servers WHAT, K needed", with each failed server's words
 * (one server, or a clash of modes: its own words). */
void rlock_no_quorum(struct rlock *lk, size_t n_ok, struct error *err,
		     const char *what);
/* Every server in the next rounds again (none skip). */
void rlock_all_servers(struct rlock *lk);
