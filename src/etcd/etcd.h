/* etcd.h - the etcd engine (src/engine.h): etcd v3's leases and
 * revisions with the recipe of its concurrency.Mutex (lock.c says how),
 * over its JSON gateway. Its state for one lock and what its files
 * share; included by no other folder.
 *
 *   engine.c      the struct engine: its settings over url.c, the rest
 *                 wired to the functions below
 *   url.c/.h      etcd:// and etcds:// URLs: pure, fuzzed
 *   conn.c/.h     calls to a cluster's members, each bounded by a
 *                 deadline, etcd's answers sorted into exit codes
 *   names.c/.h    a lock's NAME as etcd's keys (contenders, history,
 *                 leases), the values and who holds: pure, unit-tested
 *                 against collisions
 *   lock.c        the lock operations: try, the wait, extend, the
 *                 watch, release
 *   recipe.c      one round of the recipe, for lock.c's try
 *   request.c     the requests rounds are made of: ranges, txns,
 *                 leases, the history's events
 *   inspect.c     status, the list of locks, history, release --token
 *                 and --force, extend --token
 *   http.c/.h     HTTP/1.1 of its own (TLS through libcurl, loaded
 *                 only for etcds://)
 *   reply.c/.h    etcd's JSON answers read strictly: pure, fuzzed */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>
#include "conn.h"
#include "engine.h"
#include "names.h"
#include "reply.h"

/* Each day's events share a lease of 8 days: they lapse a week or so
 * after, as Redis's history stream does 7 days after its last event. */
#define HISTORY_TTL_S (8 * 86400)

struct etcd {
	struct etcd_cluster cl;
	struct etcd_client rpc;		/* every round */
	struct etcd_client watch;	/* the watch stream */
	char *name_key;		/* PREFIX NAME, lk->key */
	char *pfx;		/* PREFIX NAME "/": the contenders */
	size_t pfx_len;
	char *hist;		/* PREFIX "\0history/" NAME "\0" */
	size_t hist_len;
	char mode[24];		/* "x", "s", "N" */
	/* this acquisition */
	char token[LOCK_TOKEN_MAX + 1];
	int64_t lease;		/* derived from token and key */
	bool have_lease;	/* granted, as far as we know */
	int64_t lease_ttl_s;	/* asked for */
	int64_t granted_ttl_s;	/* what etcd says it is */
	int64_t alive_ms;	/* start of the last grant or keepalive */
	char *my_key;		/* pfx + lease in hex */
	int64_t my_rev;		/* its create revision; 0: not created */
	bool acquired_logged;	/* the history has our 'acquired' */
	int64_t acquired_wall_ms;	/* when we came to hold, if not */
	bool reentry_checked;
	/* waiting or holding: the watch */
	char *watch_key, *watch_end;	/* what it watches */
	size_t watch_key_len, watch_end_len;
	bool watch_wanted;	/* holding: the supervisor looks */
	/* waiting: what the last round said, for the rounds the watch
	 * makes needless (quiet_wait()) */
	char held_by[LOCK_INFO_MAX];
	long queue_pos;
	/* waiting, exclusive: the key ahead, an exclusive dlock contender's
	 * (its token), and the revision of its deletion (the watch said) */
	char ahead_token[LOCK_TOKEN_MAX + 1];
	bool ahead_exclusive;
	int64_t ahead_gone_rev;
	int trigger_fd;		/* eventfd asking for a round that sets it up */
	bool triggered;
	/* for the job */
	char env_key[1100], env_rev[40];
};

struct etcd *etcd_of(const struct lock *lk);
int64_t etcd_deadline(const struct lock *lk);

/* JSON pieces of requests. */
json_object *etcd_bytes(const char *s, size_t len);
json_object *etcd_int(int64_t v);
/* The end of the range of keys that start with s: s with its last byte
 * that is not 0xff plus one; "\0" for every key. */
char *etcd_range_end(const char *s, size_t len, size_t *end_len);
json_object *etcd_range_req(const char *key, size_t len, const char *end,
			    size_t end_len, int64_t limit, bool descend,
			    int64_t max_create, bool count_only, bool keys_only);
/* A range call; takes req. *rev: the header's revision (NULL: not
 * wanted). */
int etcd_range_call(struct etcd *e, json_object *req, int64_t deadline_ms,
		    struct etcd_range *r, int64_t *rev, struct error *err);
json_object *etcd_op_range(const char *key, size_t len, const char *end,
			   size_t end_len, int64_t limit, bool descend,
			   int64_t max_create, bool count_only, bool keys_only);
json_object *etcd_op_put(const char *key, size_t len, const char *value,
			 size_t vlen, int64_t lease);
json_object *etcd_op_delete(const char *key, size_t len);
/* The same, its answer holding the key as it was (its lease). */
json_object *etcd_op_delete_prev(const char *key, size_t len);
/* The lease of the key a txn's response i (an etcd_op_delete_prev)
 * deleted; 0: none, or nothing deleted. */
int64_t etcd_txn_deleted_lease(json_object *reply, size_t i);
json_object *etcd_cmp_create(const char *key, size_t len, const char *end,
			     size_t end_len, const char *result, int64_t rev);
/* key's mod revision is rev: the key exactly as it was read. */
json_object *etcd_cmp_mod(const char *key, size_t len, int64_t rev);
/* A txn; *reply and *succeeded. The arrays are taken (put). */
int etcd_txn(struct etcd *e, json_object *cmp, json_object *ok, json_object *fail,
	     int64_t deadline_ms, json_object **reply, bool *succeeded,
	     struct error *err);
/* The range at a txn's response i. */
int etcd_txn_range(json_object *reply, size_t i, struct etcd_range *r,
		   struct error *err);

/* Lease calls. grant: 0, or 1 when the lease existed already (a grant
 * whose answer was lost: its time left may be less than ttl_s).
 * keepalive: *ttl_s, the lease's granted TTL, <= 0 when it is gone. */
int etcd_grant(struct etcd *e, int64_t id, int64_t ttl_s, int64_t deadline_ms,
	       int64_t *granted_s, struct error *err);
int etcd_keepalive(struct etcd *e, int64_t id, int64_t deadline_ms,
		   int64_t *ttl_s, struct error *err);
int etcd_revoke(struct etcd *e, int64_t id, int64_t deadline_ms,
		struct error *err);
int etcd_timetolive(struct etcd *e, int64_t id, int64_t deadline_ms,
		    int64_t *ttl_s, struct error *err);

/* History: an event's put (NULL when the history is off), and the day's
 * lease it needs, granted when etcd says it is missing. */
json_object *etcd_history_put(struct lock *lk, const char *kind,
			      const char *token, const char *holder,
			      int64_t fence, int exit_status, int64_t held_ms,
			      const char *by);
/* The same, of an event at now_ms (wall clock) rather than now. */
json_object *etcd_history_put_at(struct lock *lk, const char *kind,
				 const char *token, const char *holder,
				 int64_t fence, int exit_status, int64_t held_ms,
				 const char *by, int64_t now_ms);
/* The history's 'acquired' of a waiter that came to hold, not written in
 * the round that found it holds (a read, so that the hand-off is the
 * release's one write): its put, NULL when there is none to write. */
json_object *etcd_acquired_put(struct lock *lk);
/* That put written now, on its own (the first renewal, the close of a
 * lock held on by a keeper or `dlock acquire`). */
void etcd_log_acquired(struct lock *lk, int64_t deadline_ms);
int etcd_history_lease(struct etcd *e, int64_t deadline_ms, struct error *err);
/* etcd_txn() of a txn that may write a history event (hist): where etcd
 * says a lease is missing, the day's lease of the history granted and the
 * txn sent once more. The arrays are taken (put), NULL for none. */
int etcd_txn_history(struct lock *lk, json_object *cmp, json_object *ok,
		     json_object *fail, bool hist, json_object **reply,
		     bool *succeeded, struct error *err);
/* Trims the history to n events when it holds more than n and a quarter. */
void etcd_history_trim(struct lock *lk, int64_t count, int64_t deadline_ms);

/* recipe.c: a round, for etcd_try(). -n on an exclusive lock, nothing of
 * ours there yet: whether anyone is (a read, nothing written): 1 held
 * (lk->held_by set), 0 free, -1 err. */
int etcd_held_already(struct lock *lk, struct error *err);
/* The first try of an exclusive lock: ours at once if nobody is there
 * (one txn), else in the queue (-n: not). Returns 1 when it decided
 * (*res), 0 when the general round must. */
int etcd_first_exclusive(struct lock *lk, int64_t start_ms,
			 enum lock_result *res, struct error *err);
/* The general round: our key created if absent (the queue's end), then
 * every key in the way; waiting, the watch on the one in our way. *again:
 * our key went meanwhile, a round again. */
enum lock_result etcd_round_trip(struct lock *lk, int64_t start_ms,
				 int64_t *retry_ms, bool *again,
				 struct error *err);

/* lock.c, for recipe.c: gives back what this acquisition holds (the
 * lease revoked, our key with it); the loss clock from the last proof
 * of life; the watch on deletions of [key, end) (end NULL: key alone)
 * from rev on, kept when it watches that already. */
void etcd_give_back(struct lock *lk);
void etcd_set_valid(struct lock *lk);
int etcd_start_watch(struct lock *lk, const char *key, size_t len,
		     const char *end, size_t end_len, int64_t rev,
		     int64_t deadline_ms, struct error *err);

/* lock.c and recipe.c: the lock part of struct engine (src/engine.h);
 * inspect.c: its inspection part. */
ENGINE_DECLARE(etcd);
