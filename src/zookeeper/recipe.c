/* recipe.c - the ephemeral-sequential recipe, one round at a time (as
 * kazoo and Curator take a lock: names.h): our contender made or found,
 * the lock's children read, and either the lock ours or a watch set on
 * the one node whose deletion may let us in. lock.c's try() runs rounds
 * until one says. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "zk.h"

int zk_contenders(struct zk_contenders *out, struct zc *children)
{
	*out = (struct zk_contenders){ .req = children };
	if (children->rc != ZOK)
		return children->rc;
	out->c = calloc((size_t)children->n_kids + 1, sizeof *out->c);
	if (!out->c)
		return ZSYSTEMERROR;
	for (int i = 0; i < children->n_kids; i++)
		if (zk_contender_parse(children->kids[i], &out->c[out->n]) == 0)
			out->n++;
	zk_contenders_sort(out->c, out->n);
	return ZOK;
}

void zk_contenders_free(struct zk_contenders *cs)
{
	free(cs->c);
	zc_free(cs->req);
	*cs = (struct zk_contenders){ 0 };
}

/* The GUID of our node: the -k token, or the session's id and our random
 * part (so a create whose reply was lost is found again: look for it). */
static void make_guid(struct zk *z)
{
	const char *t = z->lk->p->token;

	if (t && strlen(t) >= ZK_GUID_LEN)
		snprintf(z->guid, sizeof z->guid, "%.*s", ZK_GUID_LEN, t);
	else
		snprintf(z->guid, sizeof z->guid, "%016" PRIx64 "%s",
			 (uint64_t)z->id.client_id, z->rand);
}

/* DLOCK_TOKEN: the GUID and the session's password, so that dlock
 * extend and dlock release (--token) can take the session over; the -k
 * token as it is. */
static void make_token(struct zk *z)
{
	const char *t = z->lk->p->token;
	char pw[33];

	if (t) {
		snprintf(z->lk->token, sizeof z->lk->token, "%s", t);
		return;
	}
	zk_hex((const unsigned char *)z->id.passwd, 16, pw);
	snprintf(z->lk->token, sizeof z->lk->token, "%s%s", z->guid, pw);
}

/* Sends our contender's create. With a history, in one multi with the
 * "acquired" event, so that a lock taken at once has it from that moment
 * at no cost of its own (one transaction, one write on the server, as a
 * plain create); a round that does not win deletes the event again
 * (zk_forget_event()). A create in a multi returns no stat: our node's
 * czxid, the fence, comes from the children's read behind it (czxid_of()). */
static struct zc *send_create(struct zk *z)
{
	const struct lock *lk = z->lk;
	char prefix[128], data[2 * LOCK_INFO_MAX + 256];
	char *path, *ev_path;
	struct zc *c;
	int len;

	make_guid(z);
	if (zk_name_prefix(z->guid, lk->p->limit, z->timeout_ms, prefix,
			   sizeof prefix) < 0 || !(path = zk_join(z->path, prefix)))
		return NULL;
	z->create_tried = true;
	if (lk->p->history <= 0 || !(ev_path = zk_join(z->hist, ZK_EVENT_PREFIX))) {
		c = zc_create(z->s, path, lk->info, (int)strlen(lk->info),
			      ZOO_EPHEMERAL_SEQUENTIAL);
		free(path);
		return c;
	}
	len = zk_event_data(data, sizeof data, "acquired", z->guid, ZK_FENCE_TXN,
			    -1, -1, lk->info, NULL);
	c = zc_multi_new(z->s);
	zc_multi_create(c, path, lk->info, (int)strlen(lk->info),
			ZOO_EPHEMERAL_SEQUENTIAL);
	zc_multi_create(c, ev_path, data, len, ZOO_PERSISTENT_SEQUENTIAL);
	if (c && c->n_ops != 2)
		c->n_ops = 0;	/* out of memory: not sent, an error */
	free(path);
	free(ev_path);
	return zc_multi_send(c);
}

/* Our create's answer: 0 our node made (own, czxid, and the event's path
 * into *event), else the library's code; *missing: the znode it needs
 * first (the lock's or the history's), or NULL. */
static int created(struct zk *z, const struct zc *c, char **event,
		   const char **missing)
{
	*event = NULL;
	*missing = NULL;
	if (c->kind != ZC_MULTI) {
		if (c->rc == ZNONODE)
			*missing = z->path;
		if (c->rc != ZOK || !c->path)
			return c->rc == ZOK ? ZSYSTEMERROR : c->rc;
		if (!(z->own = strdup(c->path)))
			return ZSYSTEMERROR;
		z->czxid = c->stat.czxid;
		return ZOK;
	}
	if (c->rc == ZNONODE)
		*missing = c->res[0].err == ZNONODE ? z->path : z->hist;
	if (c->rc != ZOK)
		return c->n_ops == 2 ? c->rc : ZSYSTEMERROR;
	/* a path not as asked is not one to take for ours, nor for
	 * another's: an unexpected answer (our node goes with the session) */
	if (!zc_made(c, 0) || !zc_made(c, 1))
		return ZMARSHALLINGERROR;
	if (!(z->own = strdup(zc_made(c, 0))) || !(*event = strdup(zc_made(c, 1)))) {
		zk_forget_own(z);
		return ZSYSTEMERROR;
	}
	z->czxid = -1;	/* czxid_of() */
	return ZOK;
}

/* Our node's czxid, from the lock's znode read right before its multi
 * (an exists) and right after it (the children's read), all three in one
 * round trip: a session's requests are served in order. A create or a
 * delete of a child counts the parent's cversion up by one (3.8 reports
 * creates and deletes, as DataNode.copyStat() says; older servers
 * creates alone) and sets its pzxid to the change's zxid. Exactly one
 * change between the reads (cversion one up), and that one a create
 * (one child more): it was ours, and pzxid is our create's zxid. Else -1,
 * left to an exists (won()). (The sequence number alone cannot say it:
 * it counts creates, and a delete of another contender right after ours
 * moves pzxid past our czxid.) */
static long long czxid_of(const struct zc *before, const struct zc *kids)
{
	if (!before || before->rc != ZOK || kids->rc != ZOK ||
	    (uint32_t)kids->stat.cversion != (uint32_t)before->stat.cversion + 1 ||
	    kids->stat.numChildren != before->stat.numChildren + 1)
		return -1;
	return kids->stat.pzxid;
}

/* Our index among cs, or -1. */
static long find_own(const struct zk *z, const struct zk_contenders *cs)
{
	const char *own = zk_base_name(z->own);

	for (size_t i = 0; i < cs->n; i++)
		if (strcmp(cs->c[i].name, own) == 0)
			return (long)i;
	return -1;
}

/* A create that may have succeeded unheard: ours is the one with our
 * GUID (its czxid asked for). */
static int adopt_unheard(struct zk *z, const struct zk_contenders *cs,
			 int64_t deadline_ms, struct error *err)
{
	struct Stat st;
	int rc;

	for (size_t i = 0; i < cs->n; i++) {
		if (!zk_name_has_guid(cs->c[i].name, z->guid))
			continue;
		if (!(z->own = zk_join(z->path, cs->c[i].name)))
			break;
		rc = zc_stat(z->s, z->own, deadline_ms, &st);
		if (rc == ZOK) {
			z->czxid = st.czxid;
			z->event_unheard = z->lk->p->history > 0;
			return 0;
		}
		zk_forget_own(z);
		if (rc == ZNONODE)
			return 0;
		zs_error(err, rc, z->u->text);
		return -1;
	}
	z->create_tried = false;
	return 0;
}

/* "shared", "with --limit N": how holders of mode (zk_contender_mode())
 * hold the lock, for messages. */
static const char *held_words(long mode, char *out, size_t len)
{
	if (mode < 0)
		snprintf(out, len, "shared");
	else
		snprintf(out, len, "with --limit %ld", mode);
	return out;
}

/* A request in another mode than the holders' (-s beside --limit 2,
 * --limit 3 beside --limit 2): a usage error, as Redis says it, never a
 * wait (the holders' mode stays as long as one of them holds). */
static enum lock_result mode_refused(struct zk *z, long held, struct error *err)
{
	char words[40];

	error_set(err, EX_USAGE, "%s: the lock is held %s", z->u->text,
		  held_words(held, words, sizeof words));
	return LOCK_FAILED;
}

/* DLOCK_TOKEN names a node of this lock that holds it: re-enter, when
 * that hold covers this request. An exclusive one covers any; a shared
 * one or a --limit N one only a request of its own mode: an exclusive
 * request would not exclude the other holders (no upgrade), and waiting
 * for them would wait for the outer job itself. */
static enum lock_result reentry(struct zk *z, const struct zk_contenders *cs,
				int64_t deadline_ms, struct error *err)
{
	const char *t = z->lk->reentry_token;
	long want = z->lk->p->limit;
	char guid[ZK_GUID_LEN + 1];

	if (strlen(t) < ZK_GUID_LEN)
		return LOCK_HELD;
	snprintf(guid, sizeof guid, "%.*s", ZK_GUID_LEN, t);
	for (size_t i = 0; i < cs->n; i++) {
		struct zc *get;
		char *path;
		long long timeout_ms, czxid = 0;
		long held;
		bool finished;
		int rc;

		if (!zk_name_has_guid(cs->c[i].name, guid) ||
		    !zk_holds(cs->c, cs->n, i))
			continue;
		if (!(path = zk_join(z->path, cs->c[i].name)))
			continue;
		get = zc_get(z->s, path, false);
		free(path);
		zc_wait(&get, 1, deadline_ms);
		rc = zc_rc(get);
		if (rc == ZOK)
			czxid = get->stat.czxid;
		/* its job over, --min-hold keeps it: the token's re-entry
		 * was the job's */
		finished = rc == ZOK && get->data_len > 0 &&
			   engine_info_finished(get->data,
						zk_node_info(get->data, get->data_len, &timeout_ms));
		zc_free(get);
		if (finished)
			return LOCK_HELD;
		held = zk_contender_mode(&cs->c[i]);
		if (held != 0 && want == 0) {
			char words[40];

			error_set(err, EX_USAGE, "%s: the outer dlock holds the lock %s: a nested exclusive request cannot re-enter it",
				  z->u->text, held_words(held, words, sizeof words));
			return LOCK_FAILED;
		}
		if (held != 0 && want != held)
			return mode_refused(z, held, err);
		if (rc == ZOK) {
			snprintf(z->lk->token, sizeof z->lk->token, "%s", t);
			snprintf(z->lk->fence, sizeof z->lk->fence, "%lld",
				 czxid);
			return LOCK_REENTERED;
		}
		if (rc != ZNONODE) {
			zs_error(err, rc, z->u->text);
			return LOCK_FAILED;
		}
	}
	return LOCK_HELD;
}

/* Acquired in a round that started at t0: what the core reads. event:
 * the "acquired" event this round's multi made with our node. */
static enum lock_result won(struct zk *z, int64_t t0, char *event,
			    struct error *err)
{
	struct lock *lk = z->lk;
	struct Stat st;
	int rc = ZOK;

	if (!z->fresh) {
		/* a read said so, maybe a follower's: the leader has the
		 * last word on the session (our create, a write, had it) */
		t0 = clock_now_ms();
		rc = zk_prove(z, z->own, false, t0 + lk->node_timeout_ms);
	} else if (z->czxid < 0) {
		/* children changed right after our create: its czxid asked */
		rc = zc_stat(z->s, z->own, t0 + lk->node_timeout_ms, &st);
		if (rc == ZOK)
			z->czxid = st.czxid;
	}
	if (rc == ZNONODE)
		return LOCK_HELD;	/* gone: the caller starts over */
	if (rc != ZOK) {
		zs_error(err, rc, z->u->text);
		return LOCK_FAILED;
	}
	z->held = true;
	lk->acquired_ms = t0;
	lk->valid_until_ms = zk_valid_from(z, t0);
	make_token(z);
	lk->fence[0] = '\0';
	if (!lk->p->no_fence)
		snprintf(lk->fence, sizeof lk->fence, "%lld", z->czxid);
	zs_watch_own(z->s, z->own);
	free(z->acq_path);
	z->acq_path = event;
	/* The "acquired" event, when the multi that made our node did not
	 * make it (a wait since, or its answer lost: zk_find_event() then):
	 * now, before the job starts, not waited for (the release, behind
	 * it on the session, reads its answer). */
	if (!event && !z->event_unheard && lk->p->history > 0) {
		zc_free(z->acq_event);
		z->acq_event = zk_send_event(z, "acquired", -1, -1);
	}
	z->set_pending = z->waited;
	/* the job starts next: nothing of the library's may leak into it */
	zs_cloexec();
	return LOCK_ACQUIRED;
}

/* Our create failed for a missing znode: it and its ancestors made, and
 * the history's too when the lock's was missing (a name's first use). */
static int make_missing(struct zk *z, const char *missing, int64_t deadline_ms,
			struct error *err)
{
	const char *paths[2] = { missing, z->hist };
	size_t n = missing == z->path && z->lk->p->history > 0 ? 2 : 1;

	z->create_tried = false;
	return zc_ensure(z->s, paths, n, deadline_ms, err);
}

/* One round's state, passed down its steps. A step returns ROUND_ON to
 * go on to the next, or the round's result. */
#define ROUND_ON (-1)
struct round {
	struct zk *z;
	int64_t t0, deadline_ms;
	struct zc *before;	/* the lock's znode read before the create */
	struct zc *create;	/* our contender's, when sent this round */
	struct zc *kids;	/* the lock's children, read behind it */
	struct zk_contenders cs;	/* kids as contenders (owns kids) */
	char *event;		/* the "acquired" event the create's multi
				 * made: the lock's if the round wins, else
				 * deleted at its end */
	bool *again;		/* another round now */
};

/* "URL: /the/lock: what rc says" */
static void path_error(const struct zk *z, int rc, struct error *err)
{
	char what[2048];

	snprintf(what, sizeof what, "%s: %s", z->u->text, z->path);
	zs_error(err, rc, what);
}

/* The round's requests: our contender's create, unless it is made, may
 * have been made unheard, or re-entry is to be asked first (no node of
 * ours queued behind our caller's), between an exists of the lock's
 * znode and the children's read (czxid_of()). */
static void send_round(struct round *rd)
{
	struct zk *z = rd->z;
	const struct lock *lk = z->lk;
	struct zc *reqs[3];
	struct zk_state st;

	zk_check_stale(z);
	zs_state(z->s, &st);
	z->seen = st.changes;	/* before anything is asked: see wait_events */
	if (!z->own && !z->create_tried &&
	    (!lk->reentry_token || z->reentry_asked)) {
		/* a multi's create has no stat (czxid_of()) */
		if (lk->p->history > 0)
			rd->before = zc_exists(z->s, z->path, false);
		if (!(rd->create = send_create(z))) {
			zc_free(rd->before);	/* out of memory */
			rd->before = NULL;
		}
	}
	rd->kids = zc_children(z->s, z->path, false);
	reqs[0] = rd->before;
	reqs[1] = rd->create;
	reqs[2] = rd->kids;
	zc_wait(reqs, 3, rd->deadline_ms);
}

/* The create's answer: ROUND_ON with our node made, else the round ends
 * (the missing znodes made, or a create to send again). */
static int take_create(struct round *rd, struct error *err)
{
	struct zk *z = rd->z;
	const char *missing;
	int rc;

	z->event_unheard = false;
	rc = created(z, rd->create, &rd->event, &missing);
	if (rc == ZOK) {
		z->fresh = true;
		z->waited = false;
		if (z->czxid < 0)
			z->czxid = czxid_of(rd->before, rd->kids);
	}
	zc_free(rd->before);
	zc_free(rd->create);
	rd->before = rd->create = NULL;
	if (rc == ZOK)
		return ROUND_ON;
	zc_free(rd->kids);
	rd->kids = NULL;
	if (missing) {
		/* the lock's znode (or the chroot), or the history's, is
		 * not there yet */
		if (make_missing(z, missing, rd->deadline_ms, err) < 0)
			return LOCK_FAILED;
	} else if (rc != ZNODEEXISTS) {
		path_error(z, rc, err);
		return LOCK_FAILED;
	} else {
		z->create_tried = false;
	}
	*rd->again = true;
	return LOCK_HELD;
}

/* The children could not be read: not there (nobody holds the lock, and
 * our node, if any, went with it), or the failure. */
static enum lock_result no_contenders(struct round *rd, int rc,
				      struct error *err)
{
	struct zk *z = rd->z;

	if (rc != ZNONODE) {
		path_error(z, rc, err);
		return LOCK_FAILED;
	}
	if (z->own)
		zk_forget_own(z);
	*rd->again = true;
	return LOCK_HELD;
}

/* Our place among the contenders, after re-entry (DLOCK_TOKEN) is asked
 * and a create whose answer was lost is looked for: ROUND_ON with our
 * index in *i, else the round ends (re-entered, or our node to make). */
static int find_place(struct round *rd, long *i, struct error *err)
{
	struct zk *z = rd->z;
	enum lock_result r;

	if (z->lk->reentry_token && !z->reentry_asked) {
		z->reentry_asked = true;
		r = reentry(z, &rd->cs, rd->deadline_ms, err);
		if (r != LOCK_HELD)
			return r;
	}
	if (!z->own && z->create_tried &&
	    adopt_unheard(z, &rd->cs, rd->deadline_ms, err) < 0)
		return LOCK_FAILED;
	if (!z->own) {
		*rd->again = true;	/* not made: make it */
		return LOCK_HELD;
	}
	if ((*i = find_own(z, &rd->cs)) < 0) {
		/* deleted (release --force on a waiter, an operator): queue
		 * again, at the end */
		zk_forget_own(z);
		*rd->again = true;
		return LOCK_HELD;
	}
	return ROUND_ON;
}

/* Held by another, we are contender i. What keeps the lock from us: the
 * node whose deletion may let us in, watched (or the children, for
 * --limit); and who holds it, for the wait line. */
static enum lock_result wait_behind(struct round *rd, long i,
				    struct error *err)
{
	struct zk *z = rd->z;
	const struct lock_params *p = z->lk->p;
	const struct zk_contenders *cs = &rd->cs;
	struct zc *watch = NULL, *holder = NULL, *reqs[2];
	char *wpath = NULL, *hpath = zk_join(z->path, cs->c[0].name);
	enum lock_result r = LOCK_HELD;
	long w = zk_waits_for(cs->c, cs->n, (size_t)i);
	/* a shared waiter behind a --limit one: the exclusive head gone,
	 * that one holds, and we are refused (mode_refused()), not left
	 * waiting for it; the head watched too */
	bool watch_head = p->waits && p->limit < 0 && w > 0;

	z->lk->refused = true;
	z->queue_pos = i;
	z->held_by[0] = '\0';
	z->waited = true;
	/* not ours yet: the event our node's multi made goes, on the way of
	 * the watch (no round trip of its own) */
	zk_forget_event(z, rd->event);
	rd->event = NULL;
	if (z->event_unheard) {
		z->event_unheard = false;
		zk_forget_event(z, zk_find_event(z, rd->deadline_ms));
	}
	if (p->waits) {
		if (w >= 0 && (wpath = zk_join(z->path, cs->c[w].name)))
			watch = zc_get(z->s, wpath, true);
		else if (w < 0)
			watch = zc_children(z->s, z->path, true);
	}
	/* who holds it, for the wait line (-n: for --verbose) */
	if (hpath && (w != 0 || !watch || watch->kind != ZC_GET) &&
	    (p->waits || p->verbose))
		holder = zc_get(z->s, hpath, watch_head);
	reqs[0] = watch;
	reqs[1] = holder;
	zc_wait(reqs, 2, rd->deadline_ms);
	if (watch && watch->kind == ZC_GET && watch->rc == ZOK && w == 0 &&
	    watch->data)
		snprintf(z->held_by, sizeof z->held_by, "%s", watch->data);
	if (holder && holder->rc == ZOK && holder->data)
		snprintf(z->held_by, sizeof z->held_by, "%s", holder->data);
	if ((watch && watch->rc == ZNONODE) ||
	    (watch_head && holder && holder->rc == ZNONODE))
		*rd->again = true;	/* gone already: look again */
	else if (watch && watch->rc != ZOK) {
		zs_error(err, watch->rc, z->u->text);
		r = LOCK_FAILED;
	}
	zc_free(watch);
	zc_free(holder);
	free(wpath);
	free(hpath);
	return r;
}

/* The contenders read: re-entered, ours, refused, or a wait behind
 * another. */
static enum lock_result decide(struct round *rd, struct error *err)
{
	struct zk *z = rd->z;
	const struct lock_params *p = z->lk->p;
	long i, head;
	int r;

	if ((r = find_place(rd, &i, err)) != ROUND_ON)
		return r;
	/* Held in another non-exclusive mode than ours: the first holder's
	 * (all hold in its mode). No race between two first contenders of
	 * different modes: the sequence numbers order them, and the second
	 * sees the first here (its children read follows its create). */
	head = zk_contender_mode(&rd->cs.c[0]);
	if (p->limit != 0 && head != 0 && head != p->limit)
		return mode_refused(z, head, err);
	if (zk_holds(rd->cs.c, rd->cs.n, (size_t)i)) {
		r = won(z, rd->t0, rd->event, err);
		if (r == LOCK_ACQUIRED)
			rd->event = NULL;	/* the lock's now */
		if (r == LOCK_HELD) {
			zk_forget_own(z);
			*rd->again = true;
		}
		return r;
	}
	r = wait_behind(rd, i, err);
	z->eval_ms = clock_now_ms();
	return r;
}

enum lock_result zk_round(struct zk *z, bool *again, struct error *err)
{
	struct round rd = { .z = z, .again = again };
	int rc, r;

	*again = false;
	z->fresh = false;
	rd.t0 = clock_now_ms();
	rd.deadline_ms = rd.t0 + z->lk->node_timeout_ms;
	send_round(&rd);
	if (rd.create && (r = take_create(&rd, err)) != ROUND_ON)
		return r;
	if ((rc = zk_contenders(&rd.cs, rd.kids)) != ZOK)
		r = no_contenders(&rd, rc, err);
	else
		r = decide(&rd, err);
	/* not won in this round (refused, deleted, failed) */
	zk_forget_event(z, rd.event);
	zk_contenders_free(&rd.cs);
	return r;
}
