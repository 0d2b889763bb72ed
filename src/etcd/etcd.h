/* etcd.h - the etcd engine's own parts, shared by its files: a lock's
 * state, the layout of its keys, and the requests that make its rounds. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>
#include "client.h"
#include "engine.h"
#include "reply.h"

/* A dlock key's value: "dlock1 TOKEN MODE\nHOLDER-INFO", MODE "x", "s"
 * or the N of --limit N. Anything else (etcdctl's and concurrency.Mutex's
 * empty value) is a foreign exclusive holder. */
#define VALUE_TAG "dlock1 "

/* History: events under PREFIX "\0history/" NAME "\0", then TOKEN "/"
 * KIND. No lock name has a NUL, so no lock's contenders' range (PREFIX
 * NAME "/", for any NAME, dlock's or etcdctl lock's) holds them, and
 * neither does another lock's history (NAME "a" vs "a/b"); every one of
 * them sorts before PREFIX "\1", where the listing of locks starts. */
#define HISTORY_TOP "\0history/"
#define HISTORY_TOP_LEN 9
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
	bool reentry_checked;
	/* waiting or holding: the watch */
	char *watch_key, *watch_end;	/* what it watches */
	size_t watch_key_len, watch_end_len;
	bool watch_wanted;	/* holding: the supervisor looks */
	/* waiting: what the last round said, for the rounds the watch
	 * makes needless (quiet_wait()) */
	char held_by[LOCK_INFO_MAX];
	long queue_pos;
	int trigger_fd;		/* eventfd asking for a round that sets it up */
	bool triggered;
	/* for the job */
	char env_key[1100], env_rev[40];
};

struct etcd *etcd_of(const struct lock *lk);
int64_t etcd_deadline(const struct lock *lk);

/* The lease ID of a token for a lock: a hash of both, so that a token
 * names its lease and key (dlock release --token, extend, re-entry) and
 * -k's one token gives each key its own lease. Positive, non-zero. */
int64_t etcd_lease_of(const char *token, const char *name_key);
/* PREFIX NAME "/" + lease in hex, as concurrency.Mutex names its keys. */
char *etcd_key_of(const struct etcd *e, int64_t lease);

/* Keeps of r (a range of PREFIX NAME "/") the lock's own contenders,
 * PREFIX NAME "/" X with no '/' in X, in order: the others are the keys
 * of locks named NAME "/"..., whose range lies inside this one's
 * (PREFIX a/b/HEX under PREFIX a/). Returns how many it dropped. */
size_t etcd_only_contenders(struct etcd_range *r, size_t pfx_len);

/* A value's parts; false for a foreign one. */
struct etcd_value {
	bool ours;
	const char *token, *mode, *info;
	size_t token_len, mode_len, info_len;
};
bool etcd_value_parse(const char *v, size_t len, struct etcd_value *out);
/* Whether kvs[i] (sorted by create revision) holds: no lower key it is
 * incompatible with, and fewer lower keys than its limit. *blocker: the
 * highest lower key in its way, or -1. */
bool etcd_holds(const struct etcd_kv *kvs, size_t n, size_t i, long *blocker);

/* How kv holds, for messages: "shared", "with --limit N", or NULL for
 * exclusive (and foreign) keys. */
const char *etcd_held_as(const struct etcd_kv *kv, char *buf, size_t len);
/* Whether kv is shared or limited and in another mode than mode ("x",
 * "s", "N"); then held says how it holds (etcd_held_as). A shared or
 * limited request meeting such a holder is refused (64), as Redis's
 * mode record refuses it; an exclusive key is simply waited for. */
bool etcd_mode_clash(const struct etcd_kv *kv, const char *mode, char *held,
		     size_t len);

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
int etcd_history_lease(struct etcd *e, int64_t deadline_ms, struct error *err);
/* Trims the history to n events when it holds more than n and a quarter. */
void etcd_history_trim(struct lock *lk, int64_t count, int64_t deadline_ms);

/* Inspection (inspect.c). */
int etcd_status(struct lock *lk, struct status_lock *locks, size_t n,
		struct error *err);
int etcd_list(struct lock *lk, char ***names, size_t *n, struct error *err);
int etcd_history(struct lock *lk, long count, struct history_report *out,
		 struct error *err);
int etcd_release_token(struct lock *lk, const char *token, struct error *err);
int etcd_force(struct lock *lk, struct broken_holder **out, size_t *n,
	       struct error *err);
enum extend_result etcd_extend_token(struct lock *lk, struct error *err);
