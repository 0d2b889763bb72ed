/* names.h - where a lock's NAME becomes etcd's keys, what a key's value
 * says of its holder, and who of the contenders holds (pure: no I/O, no
 * client library; unit-tested against collisions, fuzzed).
 *
 *   PREFIX NAME "/" LEASE-IN-HEX     a contender: concurrency.Mutex's
 *                                    layout, so etcdctl lock and Go
 *                                    services exclude dlock and back
 *   PREFIX "\0history/" NAME "\0" TOKEN "/" KIND
 *                                    an event of the lock's history
 *   PREFIX "\1" ...                  where the listing of locks starts
 *
 * No lock name has a NUL, so no lock's contenders' range (PREFIX NAME
 * "/", for any NAME, dlock's or etcdctl lock's) holds a history's key,
 * and no history's range holds another lock's (NAME "a" vs "a/b"); every
 * history key sorts before PREFIX "\1". A range of PREFIX "a/" holds the
 * contenders of the locks named "a/..." too: etcd_only_contenders()
 * keeps the lock's own. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "reply.h"

/* A dlock key's value: "dlock1 TOKEN MODE\nHOLDER-INFO", MODE "x", "s"
 * or the N of --limit N. Anything else (etcdctl's and concurrency.Mutex's
 * empty value) is a foreign exclusive holder. */
#define VALUE_TAG "dlock1 "

#define HISTORY_TOP "\0history/"
#define HISTORY_TOP_LEN 9

/* PREFIX NAME: the lock's name as dlock shows it (lk->key). */
char *etcd_name_key(const char *prefix, const char *name);
/* PREFIX NAME "/": the start of its contenders' keys (*len its length). */
char *etcd_contenders_of(const char *prefix, const char *name, size_t *len);
/* PREFIX "\0history/" NAME "\0": the start of its history's keys. */
char *etcd_history_of(const char *prefix, const char *name, size_t *len);
/* PREFIX "\1": the first key the listing of locks reads. */
char *etcd_listing_from(const char *prefix, size_t *len);
/* An event's key: the history's start (etcd_history_of()) TOKEN "/"
 * KIND. */
char *etcd_event_key(const char *hist, size_t hist_len, const char *token,
		     const char *kind, size_t *len);

/* The lease ID of a token for a lock (name_key: etcd_name_key()): a hash
 * of both, so that a token names its lease and key (dlock release
 * --token, extend, re-entry) and -k's one token gives each key its own
 * lease. Positive, non-zero. */
int64_t etcd_lease_of(const char *token, const char *name_key);
/* The lease the lock's history events of one day (days since the epoch)
 * share. */
int64_t etcd_history_lease_of(const char *name_key, int64_t day);
/* A contender's key: pfx (etcd_contenders_of()) and the lease in hex, as
 * concurrency.Mutex names its keys. */
char *etcd_contender_key(const char *pfx, int64_t lease);

/* Keeps of r (a range of PREFIX NAME "/") the lock's own contenders,
 * PREFIX NAME "/" X with no '/' in X, in order: the others are the keys
 * of locks named NAME "/"..., whose range lies inside this one's
 * (PREFIX a/b/HEX under PREFIX a/). Returns how many it dropped. */
size_t etcd_only_contenders(struct etcd_range *r, size_t pfx_len);

/* Our key's value (VALUE_TAG): *len its length; NULL: out of memory. */
char *etcd_value_of(const char *token, const char *mode, const char *info,
		    size_t *len);
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
