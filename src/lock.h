/* lock.h - acquire, extend and release a lock on one or several servers */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "log.h"
#include "node.h"

#define LOCK_SHARED (-1)	/* lock_params.limit of a shared lock */
/* The longest a waiter sleeps between two tries (wait.c): its liveness
 * among the lock's waiters is this, 2 s and two --node-timeouts. */
#define LOCK_RETRY_MAX_MS 4000

/* What the lock is and how this caller takes it: built once, by main, from
 * the command line and the settings. */
struct lock_params {
	const char *name;	/* the lock's name as given, for messages */
	const char *prefix;	/* the Redis key is prefix + name */
	struct url *urls;	/* n_urls servers; one: single, more: RedLock */
	size_t n_urls;
	const char *password;	/* for URLs that carry none */
	int64_t ttl_ms, node_timeout_ms;
	long limit;		/* 0 exclusive, LOCK_SHARED, or N holders */
	bool fair;		/* waiters take the lock in arrival order */
	bool waits;		/* a refusal counts the caller among waiters */
	int wait_replicas;	/* an acquisition counts once N replicas have it */
	const char *command;	/* the holder's command, for the holder info */
	int holder_pid;		/* the holder info's pid; 0: ours */
	long history;		/* events the lock's history keeps; 0: none */
	int64_t min_hold_ms;	/* --min-hold: kept that long at least; 0: off */
	bool verbose;
	const char *token;	/* -k: the token of every acquisition, one
				 * for all the keys; NULL: a fresh one each */
};

enum lock_result {
	LOCK_ACQUIRED,
	LOCK_REENTERED,		/* our caller's lock: run without acquiring */
	LOCK_HELD,		/* someone else has it */
	LOCK_FAILED,		/* err says why: 69, 70 or 77 */
	LOCK_INTERRUPTED,	/* a signal arrived while waiting */
};

enum extend_result { EXTEND_OK, EXTEND_FAILED, EXTEND_LOST };

struct lock {
	const struct lock_params *p;
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
	char info[512];		/* "host\tpid\tuser\tsince_ms\tcommand" */
	int64_t acquired_ms;	/* monotonic: when the last acquisition began */
	/* what the last refusal said, for the wait line */
	char held_by[512];
	long queue_pos;
	long free_slot;		/* a slot a server said is free, or -1 */
	bool waited;		/* a server refused us and counts us a waiter */
	bool refused;		/* a server said the lock is held (since lock_init) */
};

int lock_init(struct lock *lk, const struct lock_params *p, struct error *err);
void lock_free(struct lock *lk);
/* With several servers: one line for each that failed in the last
 * round without a majority (--verbose). */
void lock_log_servers(const struct lock *lk);

/* Starts an acquisition: a fresh token, and no --fair ticket yet. */
int lock_begin(struct lock *lk, struct error *err);
/* --fair: the acquisition's place in the queue, from a majority of the
 * servers; before the first try and after every lock_begin(). */
int lock_take_ticket(struct lock *lk, struct error *err);
/* One try on every server. LOCK_HELD leaves in *retry_ms how long the
 * holder's lease still runs (-1: unknown); anything but LOCK_ACQUIRED
 * gives back what was partly taken. */
enum lock_result lock_try(struct lock *lk, int64_t *retry_ms, struct error *err);
/* Ends an acquisition's wait: leaves the waiters (and the --fair queue)
 * wherever it still stands among them. */
void lock_end_wait(struct lock *lk, enum lock_result r);
/* One renewal round, each server bounded by timeout_ms. */
enum extend_result lock_extend(struct lock *lk, int64_t timeout_ms,
			       struct error *err);
/* Releases on every server. Returns 0, 1 when a majority but not every
 * server confirmed (err says which did not), or -1 when no majority did:
 * the lock then lapses with its lease. A server in a passing state
 * (TRYAGAIN in a Cluster's slot migration, LOADING) is asked again while
 * the lease lasts, at most 5 s; one whose connection broke since the last
 * round (a restart), once more on a fresh connection. This gives back an
 * acquisition no command used: the history forgets it. */
int lock_release(struct lock *lk, struct error *err);
#define LOCK_EXIT_UNKNOWN (-1)
/* The same once a job ran under the lock (or LOCK_RELEASE_LOST, below): the history records it released
 * with exit_status (LOCK_EXIT_UNKNOWN when not known) and how long it was
 * held, or the lease lost when the lock was no longer ours. With min_hold
 * (the command ran, and its lease was not lost) and --min-hold not over
 * yet, the lock is kept instead: its lease shortened to what is left of
 * the minimum, never lengthened, its holder info marked finished. */
int lock_release_job(struct lock *lk, int exit_status, bool min_hold,
		     struct error *err);
/* lock_release_job(): a majority of the servers said the lock was not ours
 * any more (deleted, lapsed, taken over): the lease was lost while the job
 * ran, unnoticed between two renewals. err says so (75). */
#define LOCK_RELEASE_LOST 2
/* -k: raises the lock's fencing counter to fence (a larger one, another
 * key's) on the servers that granted it, and makes it this holder's fence
 * (its info too). -1 with err when no majority stored it. */
int lock_raise_fence(struct lock *lk, const char *fence, struct error *err);
/* A key beside the lock key, in its Redis Cluster hash slot:
 * "{key}suffix", or key + suffix when key has a {hash tag}. malloc'd. */
char *lock_derived_key(const char *key, const char *suffix);
/* Whether the last round's failures were all passing states a server
 * answered with (TRYAGAIN, LOADING, BUSY...), none a server that could not
 * be reached. */
bool lock_busy(const struct lock *lk);
/* Whether enough of the lease is left to start the command: the notice it
 * would get before the lease ends, and a renewal round. -1 with err (69)
 * when not: the caller gives the lock back. */
int lock_check_left(const struct lock *lk, struct error *err);
