/* multi.c - several locks, all or none (-k), built on the single lock;
 * one lock is the case of one (run.c runs every job through here).
 *
 * The keys are taken one by one in the order of their Redis keys, the
 * classic remedy for deadlock: a job waits only for a key greater than
 * every key it holds, so no cycle of waiters can form whatever order two
 * jobs named the keys in. While it waits for a later key it holds the
 * earlier ones and renews them every TTL/3, between bounded waits. Any
 * failure (-n's conflict, -w's deadline, a signal, a server) gives back
 * every key taken. All keys share one token, so that a nested dlock
 * recognizes any of them (DLOCK_KEYS, DLOCK_TOKEN). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "multi.h"
#include "wait.h"

/* Tries of the whole acquisition when a key's lease ran short or was lost
 * while the later ones were waited for. */
#define MAX_ROUNDS 3

/* Opens the locks again, in the order of their keys. A lock is never
 * moved once open (an engine may keep a pointer to its struct lock:
 * ZooKeeper's session set another key's lease when qsort moved them), so
 * the order is learnt from a first opening, which is then closed. */
static int open_in_key_order(struct multi *m, struct error *err)
{
	size_t *by_key;
	bool sorted = true;

	if (!(by_key = calloc(m->n, sizeof *by_key))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < m->n; i++) {	/* insertion sort: a few keys */
		size_t j = i;

		for (; j > 0 && strcmp(m->locks[by_key[j - 1]].key, m->locks[i].key) > 0; j--)
			by_key[j] = by_key[j - 1];
		by_key[j] = i;
		sorted = sorted && j == i;
	}
	for (size_t i = 0; !sorted && i < m->n; i++)
		lock_free(&m->locks[i]);
	for (size_t i = 0; !sorted && i < m->n; i++)
		if (lock_init(&m->locks[i], &m->params[by_key[i]], err) < 0) {
			m->failed = i;	/* the others were closed */
			free(by_key);
			return -1;
		}
	free(by_key);
	return 0;
}

int multi_init(struct multi *m, const struct lock_params *base,
	       const char *const *names, size_t n, struct error *err)
{
	size_t len = 0;

	*m = (struct multi){ .n = n };
	m->locks = calloc(n, sizeof *m->locks);
	m->params = calloc(n, sizeof *m->params);
	m->got = calloc(n, sizeof *m->got);
	if (!m->locks || !m->params || !m->got) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	/* One token for all the keys; one key keeps the engine's own. */
	if (n > 1)
		engine_random_hex(m->token, 16);
	for (size_t i = 0; i < n; i++) {
		m->params[i] = *base;
		m->params[i].name = names[i];
		if (n > 1)
			m->params[i].token = m->token;
		if (lock_init(&m->locks[i], &m->params[i], err) < 0) {
			m->failed = i;
			return -1;
		}
		len += strlen(m->locks[i].key) + 1;
	}
	/* the engine's key, which may be more than prefix and name (a
	 * ZooKeeper chroot and path) */
	if (!(m->keys = calloc(1, len + 1))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		strcat(m->keys, i ? " " : "");
		strcat(m->keys, m->locks[i].key);
	}
	if (open_in_key_order(m, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (m->locks[i].p == &m->params[0])
			m->first_key = m->locks[i].key;
	return 0;
}

const char *multi_failed_name(const struct multi *m)
{
	return m->locks[m->failed].p->name;
}

static void give_back(struct multi *m)
{
	struct error ignored;

	while (m->n_taken > 0) {
		struct lock *lk = &m->locks[--m->n_taken];

		if (m->got[m->n_taken] == LOCK_ACQUIRED)
			lock_release(lk, &ignored);
	}
}

/* Renews the locks held while a later one is waited for. */
static int renew_taken(struct multi *m, struct error *err)
{
	for (size_t i = 0; i < m->n_taken; i++) {
		struct lock *lk = &m->locks[i];

		if (m->got[i] == LOCK_ACQUIRED &&
		    lock_extend(lk, lk->node_timeout_ms, err) != EXTEND_OK) {
			m->failed = i;
			return -1;
		}
	}
	return 0;
}

static int renew_hook(void *arg, struct error *err)
{
	return renew_taken(arg, err);
}

/* One pass over every key. *again: a held key was lost or not renewed
 * while a later one was waited for; all was given back, and the caller
 * may start over. The keys held are renewed every TTL/3 from within the
 * wait for the next (a hook between its tries): one wait per key, so a
 * --fair waiter keeps its ticket, its place in the queue, all along. */
static enum lock_result take_all(struct multi *m, int64_t deadline_ms,
				 const struct signals *sig, int *signo,
				 bool *again, struct error *err)
{
	for (size_t i = 0; i < m->n; i++) {
		struct lock *lk = &m->locks[i];
		struct wait_hook hook = { lk->ttl_ms / 3, renew_hook, m, false };
		int64_t wait_ms = deadline_ms < 0 ? -1 : deadline_ms - clock_now_ms();
		enum lock_result r;

		if (wait_ms < -1 || (deadline_ms >= 0 && wait_ms < 0))
			wait_ms = 0;
		r = wait_acquire_hooked(lk, wait_ms, sig, signo,
					m->n_taken > 0 ? &hook : NULL, err);
		if (r == LOCK_FAILED && hook.failed) {
			give_back(m);
			*again = true;
			return LOCK_FAILED;
		}
		if (r != LOCK_ACQUIRED && r != LOCK_REENTERED) {
			m->failed = i;
			give_back(m);
			return r;
		}
		m->got[i] = r;
		m->n_taken = i + 1;
	}
	return LOCK_ACQUIRED;
}

/* The one fence of all the keys: the largest, as its engine wrote it
 * ("" with --no-fence: none to hand on). */
static void largest_fence(struct multi *m)
{
	size_t largest = 0;

	for (size_t i = 1; i < m->n; i++)
		if (strtoll(m->locks[i].fence, NULL, 10) >
		    strtoll(m->locks[largest].fence, NULL, 10))
			largest = i;
	snprintf(m->fence, sizeof m->fence, "%s", m->locks[largest].fence);
}

/* Every key taken: the job gets one fence, the largest of the keys'. Each
 * key's counter is raised to it (and its holder info says it), so that the
 * next holder of any one key gets a larger one: a resource that remembers
 * the last fence it accepted for that key never refuses it. */
static int raise_fences(struct multi *m, struct error *err)
{
	largest_fence(m);
	for (size_t i = 0; i < m->n; i++) {
		m->failed = i;
		if (strcmp(m->locks[i].fence, m->fence) != 0 &&
		    lock_raise_fence(&m->locks[i], m->fence, err) < 0)
			return -1;
	}
	return 0;
}

/* Every key taken: the earlier ones may have aged while the later ones
 * were waited for. Renew those older than a renewal period, so that the
 * lease starts from a fresh bound, then check each as a single lock is. */
static int check_all(struct multi *m, struct error *err)
{
	for (size_t i = 0; i < m->n; i++) {
		struct lock *lk = &m->locks[i];
		int64_t left_ms = lk->valid_until_ms - clock_now_ms();

		if (m->got[i] != LOCK_ACQUIRED)
			continue;
		m->failed = i;
		if (left_ms < lk->ttl_ms - lk->ttl_ms / 3 &&
		    lock_extend(lk, lk->node_timeout_ms, err) != EXTEND_OK)
			return -1;
		if (lock_check_left(lk, err) < 0)
			return -1;
	}
	return 0;
}

static enum lock_result reentered(struct multi *m, struct error *err)
{
	size_t n_in = 0;

	for (size_t i = 0; i < m->n; i++)
		n_in += m->got[i] == LOCK_REENTERED;
	if (n_in == 0)
		return LOCK_ACQUIRED;
	if (n_in == m->n) {
		/* the outer dlock's fence, as the servers keep it for each
		 * key (the same on every key: see raise_fences), never the
		 * caller's DLOCK_FENCE */
		snprintf(m->token, sizeof m->token, "%s", m->locks[0].token);
		largest_fence(m);
		return LOCK_REENTERED;
	}
	/* Which token would the command get, which keys would we renew and
	 * release? A nested dlock takes all its keys from the outer one, or
	 * none. */
	for (size_t i = 0; i < m->n; i++)
		if (m->got[i] == LOCK_ACQUIRED)
			m->failed = i;
	error_set(err, EX_USAGE, "%s is not held by the outer dlock, which holds others of these keys: a nested dlock re-enters only keys the outer one holds",
		  m->locks[m->failed].key);
	give_back(m);
	return LOCK_FAILED;
}

enum lock_result multi_acquire(struct multi *m, int64_t wait_ms,
			       const struct signals *sig, int *signo,
			       struct error *err)
{
	int64_t deadline_ms = wait_ms >= 0 ? clock_now_ms() + wait_ms : -1;
	enum lock_result r;

	for (int round = 1;; round++) {
		bool again = false;

		r = take_all(m, deadline_ms, sig, signo, &again, err);
		if (r == LOCK_ACQUIRED && (r = reentered(m, err)) == LOCK_ACQUIRED &&
		    m->n > 1 && (raise_fences(m, err) < 0 || check_all(m, err) < 0)) {
			give_back(m);
			r = LOCK_FAILED;
			again = true;
		}
		if (!again || round >= MAX_ROUNDS ||
		    (deadline_ms >= 0 && clock_now_ms() >= deadline_ms))
			break;
	}
	/* One key: no other aged while it was waited for, no fence to raise
	 * (the job's start checks it as it checks every key); its token and
	 * fence are the engine's. */
	if (r == LOCK_ACQUIRED && m->n == 1) {
		snprintf(m->token, sizeof m->token, "%s", m->locks[0].token);
		largest_fence(m);
	}
	return r;
}

void multi_free(struct multi *m)
{
	for (size_t i = 0; m->locks && i < m->n; i++)
		if (m->locks[i].p)
			lock_free(&m->locks[i]);
	free(m->locks);
	free(m->params);
	free(m->got);
	free(m->keys);
	*m = (struct multi){ 0 };	/* freed once, whoever calls it again */
}
