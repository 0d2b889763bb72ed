/* recipe.c - one round of concurrency.Mutex's recipe, for lock.c's try:
 * our key created on our lease if absent (the queue's end), in one txn
 * with a look at every key in the way; ours when it holds (etcd_holds()),
 * else the watch on the key in our way. An exclusive lock's first try is
 * one txn when nobody is there, and -n only reads while someone is. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "etcd.h"

/* Our key's value: who we are, for status and the waiters' line. */
static char *our_value(const struct lock *lk, size_t *len)
{
	const struct etcd *e = etcd_of(lk);

	return etcd_value_of(e->token, e->mode, lk->info, len);
}

static void describe(struct lock *lk, const struct etcd_kv *kv)
{
	struct etcd_value v;

	if (etcd_value_parse(kv->value, kv->value_len, &v))
		snprintf(lk->held_by, sizeof lk->held_by, "%.*s", (int)v.info_len, v.info);
	else
		lk->held_by[0] = '\0';
}

/* Ours: the fence, the job's variables. The history's 'acquired' is
 * written where the lock was taken in the same txn (the first try of an
 * exclusive lock nobody held); a waiter that came to hold found it in a
 * read, and its 'acquired' goes once the command runs: at the first
 * renewal, or in the release's txn when the command ended before that
 * (etcd_acquired_put()), or beside 'killed' (etcd_note_killed()). */
static enum lock_result acquired(struct lock *lk, int64_t rev, int64_t start_ms,
				 struct error *err)
{
	struct etcd *e = etcd_of(lk);

	snprintf(lk->token, sizeof lk->token, "%s", e->token);
	lk->fence[0] = '\0';
	if (!lk->p->no_fence)
		snprintf(lk->fence, sizeof lk->fence, "%" PRId64, e->my_rev);
	lk->acquired_ms = start_ms;
	etcd_set_valid(lk);
	snprintf(e->env_key, sizeof e->env_key, "ETCD_LOCK_KEY=%s", e->my_key);
	snprintf(e->env_rev, sizeof e->env_rev, "ETCD_LOCK_REV=%" PRId64, rev);
	lk->env[0] = e->env_key;
	lk->env[1] = e->env_rev;
	lk->env[2] = NULL;
	if (!e->acquired_logged)
		e->acquired_wall_ms = clock_wall_ms();
	(void)err;
	return LOCK_ACQUIRED;
}

json_object *etcd_acquired_put(struct lock *lk)
{
	struct etcd *e = etcd_of(lk);

	if (e->acquired_logged || !e->acquired_wall_ms || !e->my_rev)
		return NULL;
	return etcd_history_put_at(lk, "acquired", e->token, lk->info, e->my_rev, -1,
				   -1, NULL, e->acquired_wall_ms);
}

void etcd_log_acquired(struct lock *lk, int64_t deadline_ms)
{
	struct etcd *e = etcd_of(lk);
	json_object *ops, *op = etcd_acquired_put(lk), *reply = NULL;
	struct error err;
	bool ok;
	int r;

	if (!op)
		return;
	ops = json_object_new_array();
	json_object_array_add(ops, op);
	json_object_get(ops);
	r = etcd_txn(e, NULL, ops, NULL, deadline_ms, &reply, &ok, &err);
	if (r == -2 && etcd_history_lease(e, deadline_ms, &err) == 0)
		r = etcd_txn(e, NULL, json_object_get(ops), NULL, deadline_ms, &reply,
			     &ok, &err);
	json_object_put(ops);
	json_object_put(reply);
	/* a history that could not be written is no lock lost: once */
	e->acquired_logged = true;
}

/* A txn refused because a lease it names is not there (-2), once the
 * history's day lease was granted anew: ours, granted while etcd was too
 * busy to answer in time and gone since, or revoked by a give-back that
 * did reach it. A passing state (69): the next try grants it again. */
static void lease_vanished(struct lock *lk, struct error *err)
{
	struct etcd *e = etcd_of(lk);

	e->have_lease = false;
	e->my_rev = 0;
	error_set(err, EX_UNAVAILABLE, "%s: our lease %" PRIx64 " was not found (it lapsed, or a grant that did not answer in time was given back): a new one at the next try",
		  e->cl.url->text, (uint64_t)e->lease);
}

/* -n on an exclusive lock, nothing of ours there yet: whether anyone is.
 * A read: no lease granted, no key written, nothing to give back. When a
 * fleet's -n fire at once, every host but the first finds the lock held
 * this way, and etcd makes one write (a lease, a key) for none of them.
 * 1 held (*held_by set), 0 free (the write round follows), -1 err. */
int etcd_held_already(struct lock *lk, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	struct etcd_range all;
	size_t end_len;
	char *end = etcd_range_end(e->pfx, e->pfx_len, &end_len);
	int held;

	if (!end) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	if (etcd_range_call(e, etcd_range_req(e->pfx, e->pfx_len, end, end_len, 0,
					      false, 0, false, false),
			    etcd_deadline(lk), &all, NULL, err) < 0) {
		free(end);
		return -1;
	}
	free(end);
	etcd_only_contenders(&all, e->pfx_len);
	held = all.n > 0;
	if (held) {
		describe(lk, &all.kvs[0]);
		lk->refused = true;
	}
	etcd_range_free(&all);
	return held;
}

/* The first try of an exclusive lock: ours at once if nobody is there
 * (one txn, the history's 'acquired' in it), else in the queue (-n: not).
 * Returns 1 when it decided (*res), 0 when the general round must. */
int etcd_first_exclusive(struct lock *lk, int64_t start_ms,
			 enum lock_result *res, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	json_object *cmp = json_object_new_array(), *ok = json_object_new_array();
	json_object *fail = json_object_new_array(), *reply = NULL, *hist;
	size_t vlen, end_len, klen = strlen(e->my_key);
	char *value = our_value(lk, &vlen);
	char *end = etcd_range_end(e->pfx, e->pfx_len, &end_len);
	struct etcd_range lowest;
	bool succeeded;
	int r;

	if (!value || !end) {
		free(value);
		free(end);
		json_object_put(cmp);
		json_object_put(ok);
		json_object_put(fail);
		error_set(err, EX_OSERR, "out of memory");
		*res = LOCK_FAILED;
		return 1;
	}
	json_object_array_add(cmp, etcd_cmp_create(e->pfx, e->pfx_len, end, end_len,
						   "EQUAL", 0));
	json_object_array_add(ok, etcd_op_put(e->my_key, klen, value, vlen, e->lease));
	if ((hist = etcd_history_put(lk, "acquired", e->token, lk->info, -1, -1, -1,
				     NULL)))
		json_object_array_add(ok, hist);
	json_object_array_add(fail, etcd_op_range(e->pfx, e->pfx_len, end, end_len, 1,
						  false, 0, false, false));
	free(value);
	free(end);
	r = etcd_txn_history(lk, cmp, ok, fail, hist != NULL, &reply, &succeeded,
			     err);
	if (r == -2)
		lease_vanished(lk, err);
	if (r < 0) {
		*res = LOCK_FAILED;
		return 1;
	}
	if (succeeded) {
		int64_t rev;

		etcd_revision(reply, &rev);
		json_object_put(reply);
		e->my_rev = rev;
		e->acquired_logged = hist != NULL;
		*res = acquired(lk, rev, start_ms, err);
		return 1;
	}
	if (etcd_txn_range(reply, 0, &lowest, err) < 0) {
		json_object_put(reply);
		*res = LOCK_FAILED;
		return 1;
	}
	json_object_put(reply);
	if (etcd_only_contenders(&lowest, e->pfx_len) > 0) {
		/* a key of a lock named NAME "/"... failed the compare:
		 * the general round looks past those */
		etcd_range_free(&lowest);
		return 0;
	}
	if (lowest.n > 0 && lowest.kvs[0].key_len == klen &&
	    memcmp(lowest.kvs[0].key, e->my_key, klen) == 0) {
		/* ours: a try whose answer did not come in time (a busy
		 * etcd) made it; the general round finds it and holds */
		etcd_range_free(&lowest);
		return 0;
	}
	if (lowest.n > 0)
		describe(lk, &lowest.kvs[0]);
	etcd_range_free(&lowest);
	lk->refused = true;
	if (lk->p->waits)
		return 0;	/* into the queue */
	etcd_give_back(lk);
	*res = LOCK_HELD;
	return 1;
}

/* The lock's contenders in full, where a range limited to the first
 * (or, descend, to the last below max_create) met keys of locks named
 * NAME "/"... instead: a later revision's answer (*rev) is as good, as
 * a key created since sorts after ours. */
static int all_contenders(struct lock *lk, const char *end, size_t end_len,
			  bool descend, int64_t max_create, struct etcd_range *r,
			  int64_t *rev, struct error *err)
{
	struct etcd *e = etcd_of(lk);

	etcd_range_free(r);
	if (etcd_range_call(e, etcd_range_req(e->pfx, e->pfx_len, end, end_len, 0,
					      descend, max_create, false, descend),
			    etcd_deadline(lk), r, rev, err) < 0)
		return -1;
	etcd_only_contenders(r, e->pfx_len);
	return 0;
}

/* What one general round reads. */
struct round {
	char *end;		/* the end of the contenders' range */
	size_t end_len;
	int64_t limit;		/* how many keys count: --limit N, 1; 0 all */
	bool exclusive;
	bool had_rev;		/* our key was there before the round */
	bool asks;		/* the compares ask whether we hold */
	int64_t rev;		/* the revision the reads are at */
	struct etcd_range all;	/* the contenders, oldest first */
	struct etcd_range ahead;	/* exclusive: the one just before ours */
};

/* The round's txn: our key created if absent, or still ours (then, for an
 * exclusive lock, the key just before it); our key and the contenders
 * read. A waiter of an exclusive lock whose key is there asks in the
 * compares whether it holds now (no key in the range older than ours):
 * a txn of reads only, which etcd answers without a write (no raft
 * entry, no fsync), so that a hand-off is the release's one write (issue
 * 30); the history's 'acquired' follows once the command runs. 0
 * (*reply, *succeeded: the compares held), or -1 with err. */
static int round_txn(struct lock *lk, struct round *rd,
		     json_object **reply, bool *succeeded, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	json_object *cmp, *ok, *fail;
	size_t vlen = 0, klen = strlen(e->my_key);
	char *value = e->my_rev ? NULL : our_value(lk, &vlen);
	int rc;

	if (!e->my_rev && !value) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	cmp = json_object_new_array();
	ok = json_object_new_array();
	fail = json_object_new_array();
	json_object_array_add(cmp, etcd_cmp_create(e->my_key, klen, NULL, 0, "EQUAL",
						   e->my_rev));
	if (rd->exclusive && e->my_rev) {
		/* every key of the range is ours or younger: keys of locks
		 * named NAME "/"... that are older fail it, and the reads
		 * below decide as without it */
		json_object_array_add(cmp, etcd_cmp_create(e->pfx, e->pfx_len, rd->end,
							   rd->end_len, "GREATER",
							   e->my_rev - 1));
		rd->asks = true;
	}
	if (!e->my_rev)
		json_object_array_add(ok, etcd_op_put(e->my_key, klen, value, vlen,
						      e->lease));
	json_object_array_add(ok, etcd_op_range(e->my_key, klen, NULL, 0, 0, false, 0,
						false, false));
	/* The contenders, and the key just before ours; not when the
	 * compares say we hold (our key is the first then): etcd 3.4 walks
	 * every contender for a range, and reads each for one sorted or
	 * bounded by revision (a thousand waiters, a thousand reads). */
	if (!rd->asks)
		json_object_array_add(ok, etcd_op_range(e->pfx, e->pfx_len, rd->end,
							rd->end_len, rd->limit, false, 0,
							false, false));
	if (rd->exclusive && e->my_rev && !rd->asks)
		json_object_array_add(ok, etcd_op_range(e->pfx, e->pfx_len, rd->end,
							rd->end_len, 1, true,
							e->my_rev - 1, false, false));
	if (!e->my_rev || rd->asks) {
		/* our key is there: a round whose answer was lost made it;
		 * or (rd->asks) it is there but not the oldest yet */
		json_object_array_add(fail, etcd_op_range(e->my_key, klen, NULL, 0, 0,
							  false, 0, false, false));
		json_object_array_add(fail, etcd_op_range(e->pfx, e->pfx_len, rd->end,
							  rd->end_len, rd->limit, false,
							  0, false, false));
	}
	if (rd->asks)
		json_object_array_add(fail, etcd_op_range(e->pfx, e->pfx_len, rd->end,
							  rd->end_len, 1, true,
							  e->my_rev - 1, false, false));
	free(value);
	rc = etcd_txn_history(lk, cmp, ok, fail, false, reply, succeeded, err);
	if (rc == -2)
		lease_vanished(lk, err);
	return rc < 0 ? -1 : 0;
}

/* The txn's reads: our key's create revision (e->my_rev), the contenders
 * and the key ahead, in full where a range met the keys of locks named
 * NAME "/"... 0, or -1 with err. */
static int round_read(struct lock *lk, struct round *rd, json_object *reply,
		      bool succeeded, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	struct etcd_range mine = { 0 };
	/* a put first: our key's */
	size_t at = succeeded && !e->my_rev ? 1 : 0;
	/* holding by the compares (rd->asks): our key is all that counts */
	bool held = succeeded && rd->asks;

	etcd_revision(reply, &rd->rev);
	if (etcd_txn_range(reply, at, &mine, err) < 0 ||
	    etcd_txn_range(reply, held ? at : at + 1, &rd->all, err) < 0 ||
	    (rd->exclusive && e->my_rev && !held &&
	     etcd_txn_range(reply, at + 2, &rd->ahead, err) < 0)) {
		etcd_range_free(&mine);
		return -1;
	}
	if (mine.n != 1) {
		etcd_range_free(&mine);
		error_set(err, EX_SOFTWARE, "%s: our key is not there after its txn",
			  e->cl.url->text);
		return -1;
	}
	e->my_rev = mine.kvs[0].create_rev;
	etcd_range_free(&mine);
	lk->refused = false;
	if (etcd_only_contenders(&rd->all, e->pfx_len) > 0 && rd->limit > 0 &&
	    all_contenders(lk, rd->end, rd->end_len, false, 0, &rd->all, &rd->rev,
			   err) < 0)
		return -1;
	if (rd->exclusive && rd->had_rev &&
	    etcd_only_contenders(&rd->ahead, e->pfx_len) > 0 &&
	    all_contenders(lk, rd->end, rd->end_len, true, e->my_rev - 1, &rd->ahead,
			   &rd->rev, err) < 0)
		return -1;
	return 0;
}

/* A txn of a waiter whose compares failed: whether only the one that asks
 * if it holds did (our key is there, as we made it). */
static bool still_ours(struct lock *lk, const struct round *rd,
		       json_object *reply)
{
	struct etcd *e = etcd_of(lk);
	struct etcd_range mine = { 0 };
	struct error ignored;
	bool there;

	if (!rd->asks || etcd_txn_range(reply, 0, &mine, &ignored) < 0)
		return false;
	there = mine.n == 1 && mine.kvs[0].create_rev == e->my_rev;
	etcd_range_free(&mine);
	return there;
}

/* The key ahead of an exclusive waiter: whose, if an exclusive dlock
 * contender's (handed_over()). */
static void note_ahead(struct etcd *e, const struct etcd_kv *kv)
{
	struct etcd_value v;

	e->ahead_exclusive = kv && etcd_value_parse(kv->value, kv->value_len, &v) &&
			     v.mode_len == 1 && v.mode[0] == 'x' &&
			     v.token_len > 0 && v.token_len < sizeof e->ahead_token;
	if (e->ahead_exclusive)
		snprintf(e->ahead_token, sizeof e->ahead_token, "%.*s",
			 (int)v.token_len, v.token);
	e->ahead_gone_rev = 0;
}

/* The history event kv is the 'released' that token's own dlock wrote
 * as it let go (no "by": not dlock release --token's). */
static bool own_release(const struct etcd_kv *kv, const char *token)
{
	json_object *o = etcd_json_parse(kv->value, kv->value_len), *v;
	bool own = o && json_object_object_get_ex(o, "event", &v) &&
		   strcmp(json_object_get_string(v), "released") == 0 &&
		   json_object_object_get_ex(o, "token", &v) &&
		   strcmp(json_object_get_string(v), token) == 0 &&
		   !json_object_object_get_ex(o, "by", NULL);

	json_object_put(o);
	return own;
}

/* A waiter of an exclusive lock woken by the deletion of the key ahead
 * (at revision gone): when that was an exclusive dlock holder letting go
 * (its dlock's release writes 'released' in the txn that deletes its
 * key: the same revision), nobody older than us is left. The holder was
 * the oldest contender, and between it and us there was nobody when we
 * read it (a key made later is younger than ours). One read of two keys
 * (ours, that event) says so, where the general round's compare reads
 * every contender (etcd 3.4 reads each key of a range it compares): a
 * thousand waiters, a thousand keys read at every hand-off. 1 ours
 * (*res), 0 the general round decides, -1 err. */
static int handed_over(struct lock *lk, int64_t start_ms, enum lock_result *res,
		       struct error *err)
{
	struct etcd *e = etcd_of(lk);
	int64_t gone = e->ahead_gone_rev, rev = 0;
	json_object *cmp, *ok, *reply = NULL;
	struct etcd_range mine = { 0 }, ev = { 0 };
	struct error ignored;
	size_t klen = strlen(e->my_key), hlen;
	bool succeeded, held;
	char *hkey;

	e->ahead_gone_rev = 0;
	if (!gone || !e->ahead_exclusive || lk->p->history <= 0 ||
	    !(hkey = etcd_event_key(e->hist, e->hist_len, e->ahead_token, "released",
				    &hlen)))
		return 0;
	cmp = json_object_new_array();
	ok = json_object_new_array();
	json_object_array_add(cmp, etcd_cmp_create(e->my_key, klen, NULL, 0, "EQUAL",
						   e->my_rev));
	json_object_array_add(cmp, etcd_cmp_mod(hkey, hlen, gone));
	json_object_array_add(ok, etcd_op_range(e->my_key, klen, NULL, 0, 0, false, 0,
						false, false));
	json_object_array_add(ok, etcd_op_range(hkey, hlen, NULL, 0, 0, false, 0,
						false, false));
	free(hkey);
	if (etcd_txn(e, cmp, ok, NULL, etcd_deadline(lk), &reply, &succeeded, err) < 0)
		return -1;
	held = succeeded && etcd_txn_range(reply, 0, &mine, &ignored) == 0 &&
	       etcd_txn_range(reply, 1, &ev, &ignored) == 0 && mine.n == 1 &&
	       mine.kvs[0].create_rev == e->my_rev && ev.n == 1 &&
	       ev.kvs[0].mod_rev == gone && own_release(&ev.kvs[0], e->ahead_token) &&
	       etcd_revision(reply, &rev) == 0;
	etcd_range_free(&mine);
	etcd_range_free(&ev);
	json_object_put(reply);
	if (!held)
		return 0;
	lk->refused = false;
	*res = acquired(lk, rev, start_ms, err);
	return 1;
}

/* Waiting behind contender i: the next try when the lease is due
 * (*retry_ms), the watch on the key in our way (--limit: any of them).
 * 0, or -1 with err when a waiter's first round could not read who is
 * just ahead. */
static int wait_behind(struct lock *lk, struct round *rd, size_t i,
		       long blocker, int64_t *retry_ms, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	const struct etcd_kv *in_way = NULL;
	int watched = 0;

	*retry_ms = e->alive_ms + lk->ttl_ms / 3 - clock_now_ms();
	if (*retry_ms < 0)
		*retry_ms = 0;
	if (rd->exclusive && !rd->had_rev) {
		/* the first round of a waiter: who is just ahead */
		etcd_range_free(&rd->ahead);
		if (etcd_range_call(e, etcd_range_req(e->pfx, e->pfx_len, rd->end,
						      rd->end_len, 1, true,
						      e->my_rev - 1, false, false),
				    etcd_deadline(lk), &rd->ahead, &rd->rev, err) < 0 ||
		    (etcd_only_contenders(&rd->ahead, e->pfx_len) > 0 &&
		     all_contenders(lk, rd->end, rd->end_len, true, e->my_rev - 1,
				    &rd->ahead, &rd->rev, err) < 0))
			return -1;
	}
	if (rd->exclusive) {
		in_way = rd->ahead.n ? &rd->ahead.kvs[0] : NULL;
		note_ahead(e, in_way);
	}
	else if (i < rd->all.n && blocker >= 0)
		in_way = &rd->all.kvs[blocker];
	if (rd->exclusive && !in_way)
		*retry_ms = 0;	/* it went meanwhile: look again */
	else if (in_way)
		watched = etcd_start_watch(lk, in_way->key, in_way->key_len, NULL, 0,
					   rd->rev + 1, etcd_deadline(lk), err);
	else
		watched = etcd_start_watch(lk, e->pfx, e->pfx_len, rd->end,
					   rd->end_len, rd->rev + 1,
					   etcd_deadline(lk), err);
	/* no watch: timed tries until one works */
	if (watched < 0 && *retry_ms > 500)
		*retry_ms = 500;
	err->exit = 0;
	return 0;
}

/* The general round: our key created if absent (the queue's end), then
 * every key in the way. */
enum lock_result etcd_round_trip(struct lock *lk, int64_t start_ms,
				 int64_t *retry_ms, bool *again,
				 struct error *err)
{
	struct etcd *e = etcd_of(lk);
	const struct lock_params *p = lk->p;
	struct round rd = {
		.limit = p->limit > 0 ? p->limit : p->limit == LOCK_SHARED ? 0 : 1,
		.exclusive = p->limit == 0,
		.had_rev = e->my_rev != 0,
	};
	json_object *reply = NULL;
	enum lock_result res = LOCK_FAILED;
	bool succeeded;
	size_t i;
	long blocker;
	char held[40];

	*again = false;
	if (!(rd.end = etcd_range_end(e->pfx, e->pfx_len, &rd.end_len))) {
		error_set(err, EX_OSERR, "out of memory");
		goto out;
	}
	if (rd.exclusive && e->my_rev) {
		int r = handed_over(lk, start_ms, &res, err);

		if (r != 0) {
			if (r < 0)
				res = LOCK_FAILED;
			goto out;
		}
	}
	if (round_txn(lk, &rd, &reply, &succeeded, err) < 0)
		goto out;
	if (e->my_rev && !succeeded && !still_ours(lk, &rd, reply)) {
		/* our key went while we waited: the lease lapsed (we were
		 * stopped), or someone deleted it; again, at the back */
		e->my_rev = 0;
		e->alive_ms = 0;	/* a keepalive first */
		*again = true;
		goto out;
	}
	if (round_read(lk, &rd, reply, succeeded, err) < 0)
		goto out;
	/* Shared and --limit holders agree on the mode: the lowest key
	 * holds, whatever else does, and says it. etcd runs txns one after
	 * the other, so of two first requests in different modes the later
	 * one sees the other's key below its own: refused here, never both
	 * holding (etcd_holds() would not let it hold either). */
	if (!rd.exclusive && rd.all.n > 0 && rd.all.kvs[0].create_rev != e->my_rev &&
	    etcd_mode_clash(&rd.all.kvs[0], e->mode, held, sizeof held)) {
		etcd_give_back(lk);
		error_set(err, EX_USAGE, "%s: the lock is held %s", e->cl.url->text,
			  held);
		goto out;
	}
	for (i = 0; i < rd.all.n && rd.all.kvs[i].create_rev != e->my_rev; i++)
		;
	if (i < rd.all.n && etcd_holds(rd.all.kvs, rd.all.n, i, &blocker)) {
		res = acquired(lk, rd.rev, start_ms, err);
		goto out;
	}
	lk->refused = true;
	if (rd.all.n > 0)
		describe(lk, &rd.all.kvs[0]);
	lk->queue_pos = i < rd.all.n ? (long)i : 0;
	snprintf(e->held_by, sizeof e->held_by, "%s", lk->held_by);
	e->queue_pos = lk->queue_pos;
	res = LOCK_HELD;
	if (!p->waits)
		etcd_give_back(lk);
	else if (wait_behind(lk, &rd, i, blocker, retry_ms, err) < 0)
		res = LOCK_FAILED;
out:
	json_object_put(reply);
	etcd_range_free(&rd.all);
	etcd_range_free(&rd.ahead);
	free(rd.end);
	return res;
}
