/* names.h - the Redis keys of a lock: the lock key (PREFIX NAME, as
 * redis-py, redsync and node-redlock name theirs) and the side keys dlock
 * keeps beside it, all in one Redis Cluster hash slot; and which lock keys
 * are refused because they would be, or share, another lock's side keys
 * (pure: see REDIS KEYS in dlock(1)) */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* A key beside the lock key, in its Redis Cluster hash slot:
 * "{key}suffix", or key + suffix when key has a {hash tag}. suffix is one
 * of keys_side_tail()'s. malloc'd; NULL: no memory. */
char *keys_derived(const char *key, const char *suffix);

/* Whether k[0..n-1] has a hash tag as Redis Cluster reads one: the first
 * '{', then the first '}' after it, something between them. */
bool keys_has_tag(const char *k, size_t n);

/* Whether t[0..n-1] is the tail of a side key: ":fence", ":slots:3"... */
bool keys_side_tail(const char *t, size_t n);

/* Whether k[0..n-1] is a side key of a lock whose key starts with prefix
 * ("" for any lock). */
bool keys_is_side(const char *k, size_t n, const char *prefix);

/* Whether key may be a lock key: 0, or -1 with the reason in why. No
 * lock key accepted here is another lock's side key, no two accepted
 * locks share a side key, and each one's side keys share its Cluster
 * slot. */
int keys_check(const char *key, char *why, size_t whylen);
