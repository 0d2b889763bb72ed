/* multi.h - several locks taken all or none (-k KEY -k KEY...); one lock
 * is a multi-lock of one */
#pragma once
#include <stdint.h>
#include "lock.h"
#include "log.h"
#include "signals.h"

struct multi {
	struct lock *locks;	/* n, sorted by key: the order taken */
	struct lock_params *params;	/* each lock's: base, with its name */
	enum lock_result *got;	/* what each lock's acquisition gave */
	size_t n, n_taken;	/* locks[0..n_taken-1] are acquired or re-entered */
	size_t failed;		/* the lock the last failure is about */
	char token[LOCK_TOKEN_MAX + 1];	/* one token for every key (one
					 * key: the engine's, once taken) */
	char fence[24];		/* the largest of their fences */
	char *keys;		/* DLOCK_KEYS: the keys, as given, by ' ' */
	const char *first_key;	/* DLOCK_KEY: the key given first */
};

/* The locks of names[0..n-1] (distinct, as clicheck.c makes sure). */
int multi_init(struct multi *m, const struct lock_params *base,
	       const char *const *names, size_t n, struct error *err);
/* Takes every lock in the order of their Redis keys, each waiting while
 * the ones before it are held (renewed meanwhile): two jobs naming the same
 * keys in any order cannot deadlock. wait_ms as wait_acquire() has it, for
 * all of them together. Anything but LOCK_ACQUIRED (or LOCK_REENTERED, when
 * every key is the outer dlock's) gives back what was taken; m->failed is
 * then the lock err is about. Before it returns LOCK_ACQUIRED, the earlier
 * locks are renewed where waiting for the later ones aged them, and every
 * one has more left than the command's notice. */
enum lock_result multi_acquire(struct multi *m, int64_t wait_ms,
			       const struct signals *sig, int *signo,
			       struct error *err);
/* The name of the lock m->failed, for messages. */
const char *multi_failed_name(const struct multi *m);
/* Frees what multi_init() made; again, nothing. */
void multi_free(struct multi *m);
