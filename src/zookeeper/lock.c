/* lock.c - ZooKeeper's lock operations (src/engine.h's lock_ops): a
 * lock opened and closed, acquired (try() runs recipe.c's rounds; the
 * wait on the session's eventfd), kept (extend() proves the session at
 * the leader; a watch on our node), given back, and the watchdog's
 * "killed" event. zk.h says how the recipe keeps a lock. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include "clock.h"
#include "lock.h"
#include "zk.h"

/* Rounds one try may take when nodes come and go under it. */
#define MAX_ROUNDS 8
/* A waiter with nothing to wake it asks again after this long anyway. */
#define RECHECK_MS 30000

/* ---- the lock ------------------------------------------------------------ */

static void send_acquired(struct zk *z);

int zk_open(struct lock *lk, struct error *err)
{
	const struct lock_params *p = lk->p;
	const struct zk_url *u = p->servers;
	struct zk *z = engine_open_state(lk, sizeof *z, err);
	const char *bad;

	if (!z)
		return -1;
	z->lk = lk;
	z->u = u;
	z->eval_ms = -1;
	if (u->user[0]) {
		const char *pw = u->has_password ? u->password : p->password;

		snprintf(z->digest, sizeof z->digest, "%s:%s", u->user, pw ? pw : "");
	}
	if (!(z->path = zk_lock_path(u->chroot, p->prefix, p->name)) ||
	    !(z->hist = zk_history_path(u->chroot, p->prefix, p->name))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	lk->key = z->path;
	/* status without KEY opens on "": the chroot itself */
	if (!p->name[0] && !p->prefix[0])
		return 0;
	if (!(bad = zk_path_invalid(z->path)))
		bad = zk_name_invalid(p->name);
	if (bad) {
		char shown[400];

		log_escape(z->path, shown, sizeof shown);
		error_set(err, EX_USAGE, "bad lock name for ZooKeeper ('%s'): %s",
			  shown, bad);
		return -1;
	}
	return 0;
}

void zk_close(struct lock *lk)
{
	struct zk *z = ZK(lk);

	/* dlock acquire: what acquiring left to write goes out before the
	 * process ends (its session is kept, and so never waits for it) */
	if (z->s && z->held && zs_pid(z->s) == getpid()) {
		struct zc *reqs[3];

		send_acquired(z);
		reqs[0] = z->acq_event;
		reqs[1] = z->set_req;
		reqs[2] = z->stale_req;
		zc_wait(reqs, 3, clock_now_ms() + lk->node_timeout_ms);
	}
	zk_drop_requests(z);
	free(z->acq_path);
	free(z->stale_event);
	/* Still held: dlock acquire, whose lock outlives it until the
	 * session's timeout (dlock extend, dlock release take the session
	 * over), or -F's parent after its exec failed (the helper releases).
	 * A session not ours (-F's parent's handle) is left as it is too. */
	if (z->s && (z->held || zs_pid(z->s) != getpid()))
		zs_keep(z->s);
	else
		zs_free(z->s, clock_now_ms() + z->lk->node_timeout_ms);
	free(z->own);
	free(z->path);
	free(z->hist);
	engine_close_state(lk);
}

int zk_begin(struct lock *lk, struct error *err)
{
	struct zk *z = ZK(lk);

	engine_random_hex(z->rand, 8);
	zk_forget_own(z);
	free(z->acq_path);
	z->acq_path = NULL;
	z->set_pending = false;
	z->reentry_asked = false;
	z->held = false;
	return 0;
}

int64_t zk_valid_from(const struct zk *z, int64_t t0)
{
	/* the server expires a session no sooner than the timeout after it
	 * last heard of it (rounded up to its tick); 1% + 2 ms for the rate
	 * of its clock against ours */
	return t0 + z->timeout_ms - (z->timeout_ms / 100 + 2);
}

/* The session alive at the ensemble's leader, and our node there: a sync
 * (the leader checks the session of every request it sees: a follower
 * cut off from the quorum cannot answer it from what it knew, and it
 * costs no write) and an exists behind it, which sees at least what the
 * leader had then; watch: the exists sets the watch on our node.
 * ZOK, ZNONODE (our node is gone), or the failure's code. */
int zk_prove(struct zk *z, const char *own, bool watch, int64_t deadline_ms)
{
	struct zc *reqs[2];
	int rc;

	reqs[0] = zc_sync(z->s, own);
	reqs[1] = zc_exists(z->s, own, watch);
	zc_wait(reqs, 2, deadline_ms);
	rc = zc_rc(reqs[0]);
	if (rc == ZOK)
		rc = zc_rc(reqs[1]);
	if (watch && reqs[1])
		z->own_watched = reqs[1]->rc == ZOK;
	if (rc == ZOK)
		z->czxid = reqs[1]->stat.czxid;
	zc_free(reqs[0]);
	zc_free(reqs[1]);
	return rc;
}

/* What acquiring after a wait leaves to write once the job runs: our
 * node's data, the holder info, whose since is then, not when we started
 * to wait (a waiter behind us watches that data: it wakes, and sleeps
 * again). Not waited for, but by close() (dlock acquire). */
static void send_acquired(struct zk *z)
{
	struct lock *lk = z->lk;

	if (!z->set_pending || !z->own)
		return;
	z->set_pending = false;
	zc_free(z->set_req);
	z->set_req = zc_set(z->s, z->own, lk->info, (int)strlen(lk->info), -1);
}

enum lock_result zk_try(struct lock *lk, int64_t *retry_ms,
			struct error *err)
{
	struct zk *z = ZK(lk);
	int64_t deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	struct zk_state st;
	enum lock_result r = LOCK_HELD;
	bool expired, again = false;

	lk->busy = false;
	if (zk_session(z, deadline_ms, true, &expired, err) < 0) {
		lk->busy = zs_turned_away(z->s);	/* full: tried again */
		return LOCK_FAILED;
	}
	zs_state(z->s, &st);
	/* Nothing changed since the last round (no watch fired, the session
	 * as it was): the answer is the same, and nobody is asked. */
	if (z->own && z->eval_ms >= 0 && st.changes == z->seen &&
	    clock_now_ms() - z->eval_ms < RECHECK_MS) {
		snprintf(lk->held_by, sizeof lk->held_by, "%s", z->held_by);
		lk->queue_pos = z->queue_pos;
		lk->refused = true;
		return LOCK_HELD;
	}
	for (int n = 0; n < MAX_ROUNDS; n++) {
		r = zk_round(z, &again, err);
		if (r != LOCK_HELD || !again)
			break;
	}
	if (r == LOCK_HELD) {
		snprintf(lk->held_by, sizeof lk->held_by, "%s", z->held_by);
		lk->queue_pos = z->queue_pos;
		if (again)
			*retry_ms = 50;	/* still moving after MAX_ROUNDS: soon */
	}
	return r;
}

/* Woken: a watch fired, or the session changed (reconnected, expired). */
size_t zk_wait_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct zk *z = ZK(lk);

	if (!z->s || zs_event_fd(z->s) < 0 || max == 0)
		return 0;
	pfd[0] = (struct pollfd){ zs_event_fd(z->s), POLLIN, 0 };
	return 1;
}

bool zk_wait_events(struct lock *lk, const struct pollfd *pfd, size_t n)
{
	struct zk *z = ZK(lk);
	struct zk_state st;

	zs_event_clear(z->s);
	zs_state(z->s, &st);
	return st.changes != z->seen || st.expired;
}

/* Given up (-n, -w, a signal, a failure): our node goes, so that nobody
 * waits behind it; if the ensemble cannot be reached now, it goes with
 * the session, which close() ends. */
void zk_end_wait(struct lock *lk, enum lock_result r)
{
	struct zk *z = ZK(lk);
	struct zc *reqs[2];

	if (r == LOCK_ACQUIRED || !z->s)
		return;
	reqs[0] = z->own ? zc_delete(z->s, z->own) : NULL;
	reqs[1] = z->stale_req;	/* the event of a round that did not win */
	zc_wait(reqs, 2, clock_now_ms() + lk->node_timeout_ms);
	zc_free(reqs[0]);
	zk_forget_own(z);
}

/* ---- holding ------------------------------------------------------------ */

enum extend_result zk_extend(struct lock *lk, int64_t timeout_ms,
			     struct error *err)
{
	struct zk *z = ZK(lk);
	int64_t t0 = clock_now_ms(), deadline_ms = t0 + timeout_ms;
	struct zk_state st;
	bool expired;
	int rc;

	if (!z->own) {
		error_set(err, EX_TEMPFAIL, "%s: our node is gone", z->u->text);
		return EXTEND_LOST;
	}
	if (zk_session(z, deadline_ms, false, &expired, err) < 0) {
		if (expired)
			error_set(err, EX_TEMPFAIL, "%s: session expired (the ensemble did not hear from us for %.3g s): our node is gone",
				  z->u->text, (double)z->timeout_ms / 1000);
		return expired ? EXTEND_LOST : EXTEND_FAILED;
	}
	if (z->adopted) {
		z->adopted = false;
		zs_watch_own(z->s, z->own);
	}
	send_acquired(z);
	t0 = clock_now_ms();
	rc = zk_prove(z, z->own, !z->own_watched, deadline_ms);
	zs_state(z->s, &st);
	if (rc == ZOK) {
		lk->valid_until_ms = zk_valid_from(z, t0);
		return EXTEND_OK;
	}
	if (rc == ZNONODE) {
		error_set(err, EX_TEMPFAIL, "%s: our node %s was deleted (dlock release --force, or another client)",
			  z->u->text, z->own);
		return EXTEND_LOST;
	}
	if (rc == ZSESSIONEXPIRED || st.expired) {
		error_set(err, EX_TEMPFAIL, "%s: session expired: our node is gone",
			  z->u->text);
		return EXTEND_LOST;
	}
	zs_error(err, rc, z->u->text);
	return EXTEND_FAILED;
}

/* The watch on our node, the session's changes. */
size_t zk_watch_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct zk *z = ZK(lk);

	/* -F's helper before its first round took the session over */
	if (!z->s || zs_pid(z->s) != getpid() || max == 0 || !z->own)
		return 0;
	send_acquired(z);
	if (!z->own_watched && !z->watch_req)
		z->watch_req = zc_exists(z->s, z->own, true);
	if (zs_event_fd(z->s) < 0)
		return 0;
	pfd[0] = (struct pollfd){ zs_event_fd(z->s), POLLIN, 0 };
	return 1;
}

bool zk_watch_events(struct lock *lk, const struct pollfd *pfd, size_t n,
		     char *note, size_t notelen)
{
	struct zk *z = ZK(lk);
	struct zk_state st;
	bool again = false;

	zs_event_clear(z->s);
	zs_state(z->s, &st);
	/* a watch fires once: whatever fired (our node's data set, the
	 * session back), set it again */
	if (st.changes != z->seen) {
		z->seen = st.changes;
		z->own_watched = false;
	}
	if (z->watch_req) {
		size_t answered = zc_wait(&z->watch_req, 1, 0);

		if (answered) {
			z->own_watched = z->watch_req->rc == ZOK;
			again = z->watch_req->rc == ZNONODE;
			zc_free(z->watch_req);
			z->watch_req = NULL;
		}
	}
	if (st.own_deleted || again) {
		snprintf(note, notelen, "%s: our node %s was deleted (dlock release --force, or another client)",
			 z->u->text, z->own);
		return true;
	}
	if (st.expired) {
		snprintf(note, notelen, "%s: session expired: our node is gone",
			 z->u->text);
		return true;
	}
	/* connected again after a break: is our node still there? */
	again = st.state == ZOO_CONNECTED_STATE && z->last_state != ZOO_CONNECTED_STATE &&
		z->last_state != 0;
	z->last_state = st.state;
	return again;
}

/* dlock was killed while its job ran: its watchdog, in a process of its
 * own, writes the "killed" event in a session of its own (the holder's
 * node goes with the holder's session). */
void zk_note_killed(struct lock *lk, int64_t held_ms)
{
	struct zk *z = ZK(lk);
	int64_t deadline_ms = clock_now_ms() + lk->node_timeout_ms;
	long long fence = lk->fence[0] ? strtoll(lk->fence, NULL, 10) : -1;
	struct error err;
	bool expired;

	if (lk->p->history <= 0 ||
	    zk_session(z, deadline_ms, false, &expired, &err) < 0)
		return;
	zk_write_event(z, "killed", lk->token, fence, held_ms, NULL, NULL,
		       deadline_ms);
}

size_t zk_fds(const struct lock *lk, int *out, size_t max)
{
	/* -F's helper takes the session over with a connection of its own */
	return 0;
}

/* ---- releasing ------------------------------------------------------------ */

/* Our node deleted, with the history's event in the same multi (one
 * round trip, one write); late_acq: the "acquired" event too, which
 * found no history's znode when it was sent. */
static struct zc *send_release(struct zk *z, bool late_acq, const char *kind,
			       long long exit, long long held_ms,
			       const char *acq_path)
{
	const struct lock *lk = z->lk;
	char data[2][2 * LOCK_INFO_MAX + 256];
	char *ev_path = zk_join(z->hist, ZK_EVENT_PREFIX);
	struct zc *m = zc_multi_new(z->s);
	int len;

	zc_multi_delete(m, z->own);
	if (kind && ev_path) {
		if (late_acq) {
			len = zk_event_data(data[0], sizeof data[0], "acquired",
					    z->guid, z->czxid, -1, -1, lk->info, NULL);
			zc_multi_create(m, ev_path, data[0], len,
					ZOO_PERSISTENT_SEQUENTIAL);
		}
		len = zk_event_data(data[1], sizeof data[1], kind, z->guid,
				    z->czxid, exit, held_ms, lk->info, NULL);
		zc_multi_create(m, ev_path, data[1], len, ZOO_PERSISTENT_SEQUENTIAL);
	} else if (acq_path) {
		zc_multi_delete(m, acq_path);	/* no command used it */
	}
	free(ev_path);
	return zc_multi_send(m);
}

/* The release found the lock no longer ours without a word from the
 * ensemble about our node: the session expired (the server deleted it),
 * or the lease ran out before the release and the ensemble cannot be
 * reached now (it deletes the node once the session expires). The loss,
 * not a failed release: the core says it once (75), or not again when it
 * stopped the job for it already. */
static int released_lost(struct zk *z, bool expired, struct error *err)
{
	struct lock *lk = z->lk;

	if (expired)
		error_set(err, EX_TEMPFAIL, "%s: session expired: our node is gone",
			  z->u->text);
	else
		error_set(err, EX_TEMPFAIL, "%s: the lease ran out, and the ensemble could not be reached to give the lock back: our node goes with the session",
			  z->u->text);
	lk->lost_at_release = true;
	zk_forget_own(z);
	z->held = false;
	return 0;
}

/* A release's state, passed down its steps. */
struct release {
	struct zk *z;
	int64_t deadline_ms;
	const char *kind;	/* the history's event, "released"; NULL none */
	long long exit, held_ms;
	/* the loss clock at its notice before the release: the core told
	 * the job that the lease is lost (75), or the job ended right then */
	bool lapsed;
};

/* send_release() of no "acquired" event, waited for: its code; *m the
 * multi (its ops' results). */
static int release_round(struct release *rl, bool late_acq, const char *kind,
			 struct zc **m)
{
	*m = send_release(rl->z, late_acq, kind, rl->exit, rl->held_ms, NULL);
	zc_wait(m, 1, rl->deadline_ms);
	return zc_rc(*m);
}

/* No command ran: the "acquired" event goes too, where it was made. Its
 * path, or NULL; *found: what to free after. */
static const char *acq_to_forget(struct release *rl, bool job, char **found)
{
	struct zk *z = rl->z;

	*found = NULL;
	if (job || z->lk->p->history <= 0)
		return NULL;
	if (z->acq_event && zc_wait(&z->acq_event, 1, rl->deadline_ms) &&
	    z->acq_event->rc == ZOK && z->acq_event->path)
		*found = strdup(z->acq_event->path);
	else if (!z->acq_path && z->event_unheard)
		*found = zk_find_event(z, rl->deadline_ms);
	return *found ? *found : z->acq_path;
}

/* The first multi m (code rc) failed on an event, not on our node: the
 * history's znode is missing (its first event, or someone deleted it):
 * made, and the whole again, the "acquired" event too if it failed for
 * that (acq, its create); or the "acquired" event to forget went
 * meanwhile (trimmed): our node alone. The last code. */
static int release_retry(struct release *rl, int rc, const struct zc *m,
			 const struct zc *acq, struct error *err)
{
	const char *hist = rl->z->hist;
	bool late_acq = acq && acq->rc == ZNONODE;
	struct zc *again = NULL;

	/* (res is read only once the multi is answered) */
	if (!m || rc == ZOK || zs_transient(rc) || m->res[0].err != ZOK)
		return rc;
	if (rc == ZNONODE && rl->kind &&
	    zc_ensure(rl->z->s, &hist, 1, rl->deadline_ms, err) == 0)
		rc = release_round(rl, late_acq, rl->kind, &again);
	else
		rc = release_round(rl, false, NULL, &again);
	zc_free(again);
	return rc;
}

/* The connection broke under the multi, which may have been applied:
 * once the library has connected again (or heard that the session
 * expired), the whole once more, and our node missing then may be that
 * first one's doing. The last code. */
static int release_again(struct release *rl, int rc, struct error *err)
{
	struct zc *m;
	bool expired;

	if (rc == ZOK || rc == ZSESSIONEXPIRED || !zs_transient(rc) ||
	    clock_now_ms() >= rl->deadline_ms)
		return rc;
	if (zk_session(rl->z, rl->deadline_ms, false, &expired, err) < 0)
		return expired ? ZSESSIONEXPIRED : rc;
	rc = release_round(rl, false, rl->kind, &m);
	if (rc == ZNONODE && m->res[0].err == ZOK) {
		/* the history's znode missing: our node alone */
		zc_free(m);
		rc = release_round(rl, false, NULL, &m);
	}
	zc_free(m);
	if (rc == ZNONODE && !rl->lapsed)
		rc = ZOK;
	return rc;
}

/* The server refused to delete our node (an ACL on the lock's znode that
 * lets anyone create but not delete, say): ending the session deletes it
 * all the same, at once, where keeping the session would keep the lock
 * from everyone until its timeout. Said in one line, as a release that
 * failed would be; the exit status stays the job's. 0 done, -1 the close
 * did not reach the server either: the lock lapses with the session. */
static int release_by_close(struct zk *z, int rc, struct error *err)
{
	if (zk_end_session(z, rc, err) < 0)
		return -1;
	free(z->acq_path);
	z->acq_path = NULL;
	z->held = false;
	return 0;
}

/* What the release's last code rc says: lost (the session over, or our
 * node gone), failed, or done; kids: the history's children, to trim. */
static int release_done(struct release *rl, int rc, struct zc *kids,
			struct error *err)
{
	struct zk *z = rl->z;
	struct zk_state st;

	zs_state(z->s, &st);
	if (rc != ZOK && rc != ZNONODE &&
	    (rc == ZSESSIONEXPIRED || st.expired || (rl->lapsed && zs_transient(rc)))) {
		zc_free(kids);
		return released_lost(z, rc == ZSESSIONEXPIRED || st.expired, err);
	}
	if (rc == ZNONODE) {
		/* not ours any more: the lease was lost */
		z->lk->lost_at_release = true;
		if (rl->kind)
			zc_free(zk_send_event(z, "lost", rl->exit, rl->held_ms));
	} else if (rc != ZOK) {
		zc_free(kids);
		if (!zs_transient(rc))
			return release_by_close(z, rc, err);
		zs_error(err, rc, z->u->text);
		return -1;	/* it lapses with the session */
	}
	if (kids)
		zk_trim_history(z, kids);
	zc_free(kids);
	zk_forget_own(z);
	free(z->acq_path);
	z->acq_path = NULL;
	z->held = false;
	return 0;
}

/* --min-hold kept by dlock after the job: our node's data says the
 * command finished (lk->info). */
int zk_finished(struct lock *lk, struct error *err)
{
	struct zk *z = ZK(lk);
	struct zc *c;
	int rc;

	if (!z->own) {
		error_set(err, EX_TEMPFAIL, "%s: our node is gone", z->u->text);
		return -1;
	}
	c = zc_set(z->s, z->own, lk->info, (int)strlen(lk->info), -1);
	zc_wait(&c, 1, clock_now_ms() + lk->node_timeout_ms);
	rc = zc_rc(c);
	zc_free(c);
	if (rc != ZOK)
		zs_error(err, rc, z->u->text);
	return rc == ZOK ? 0 : -1;
}

int zk_release(struct lock *lk, const struct release_how *how,
	       struct error *err)
{
	struct zk *z = ZK(lk);
	struct release rl = {
		.z = z,
		.deadline_ms = clock_now_ms() + lk->node_timeout_ms,
		.kind = lk->p->history > 0 && how->job ? "released" : NULL,
		.exit = how->exit_status >= 0 ? how->exit_status : -1,
		.held_ms = clock_now_ms() - lk->acquired_ms,
		.lapsed = clock_now_ms() >= lk->valid_until_ms -
					    lock_notice_ms(lk->ttl_ms),
	};
	struct zc *reqs[3] = { NULL, NULL, NULL };
	const char *acq_path;
	char *found;
	bool expired;
	int rc;

	lk->lost_at_release = false;
	zc_free(z->watch_req);
	z->watch_req = NULL;
	if (!z->own) {
		lk->lost_at_release = true;
		z->held = false;
		return 0;
	}
	if (zk_session(z, rl.deadline_ms, false, &expired, err) < 0) {
		if (!expired && !rl.lapsed)
			return -1;	/* it lapses with the session */
		return released_lost(z, expired, err);
	}
	z->set_pending = false;
	acq_path = acq_to_forget(&rl, how->job, &found);
	/* our node and the event in one multi; behind it the history's
	 * children (to trim it), and the "acquired" event's answer */
	reqs[0] = send_release(z, false, rl.kind, rl.exit, rl.held_ms, acq_path);
	reqs[2] = z->acq_event;
	z->acq_event = NULL;
	zc_wait(reqs, 3, rl.deadline_ms);
	rc = zc_rc(reqs[0]);
	/* the history's children, to trim it, when its event's number says */
	if (rl.kind && rc == ZOK && zk_trim_due(z, reqs[0])) {
		reqs[1] = zc_children(z->s, z->hist, false);
		zc_wait(&reqs[1], 1, rl.deadline_ms);
	}
	rc = release_retry(&rl, rc, reqs[0], reqs[2], err);
	zc_free(reqs[0]);
	zc_free(reqs[2]);
	free(found);
	rc = release_again(&rl, rc, err);
	return release_done(&rl, rc, reqs[1], err);
}
