/* lock.c - an etcd v3 lock (the lock part of src/engine.h), with
 * the recipe of etcd's concurrency.Mutex, so that `etcdctl lock` and Go
 * services on the same name exclude dlock and the other way round:
 *
 * - a lease (--ttl, whole seconds) whose ID comes from the acquisition's
 *   token (etcd_lease_of), kept alive every TTL/3, also while waiting;
 * - the key PREFIX NAME "/" LEASE-IN-HEX, created in a txn if absent,
 *   on that lease, its value "dlock1 TOKEN MODE\nHOLDER-INFO";
 * - the holder is the key of lowest create revision under PREFIX NAME
 *   "/" (-s: every key with no lower exclusive one; --limit N: the first
 *   N, all --limit N); a waiter watches the key in its way for its
 *   deletion, from the revision it read: FIFO by nature;
 * - while the watch stands, nothing in our way changed: a waiter's try
 *   asks nothing then, but keeps its lease alive every TTL/3, so that a
 *   thousand waiters cost etcd a keepalive each per TTL/3, not a txn
 *   over all their keys every few seconds (issue 30);
 * - the fence is the create revision of our key;
 * - holding, a watch on our own key tells at once that it was deleted
 *   (release --force, etcdctl del, the lease revoked); each renewal
 *   checks the lease (a keepalive answering TTL 0 is lost) and the key.
 *
 * One connection per lock carries every round (HTTP/1.1 keep-alive), a
 * second the watch. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "clock.h"
#include "etcd.h"
#include "log.h"

int etcd_open(struct lock *lk, struct error *err)
{
	const struct lock_params *p = lk->p;
	const struct etcd_url *u = p->servers;
	struct etcd *e = engine_open_state(lk, sizeof *e, err);

	if (!e)
		return -1;
	e->trigger_fd = -1;
	if (p->password && !u->user[0] && !u->has_password) {
		error_set(err, EX_USAGE, "%s: etcd's users have names: give one in the URL (etcd://USER@host:port) for the password",
			  u->text);
		return -1;
	}
	etcd_cluster_init(&e->cl, u, p->tls, p->password);
	etcd_client_init(&e->rpc, &e->cl);
	etcd_client_init(&e->watch, &e->cl);
	e->name_key = etcd_name_key(p->prefix, p->name);
	e->pfx = etcd_contenders_of(p->prefix, p->name, &e->pfx_len);
	e->hist = etcd_history_of(p->prefix, p->name, &e->hist_len);
	if (!e->name_key || !e->pfx || !e->hist) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	if (p->limit == LOCK_SHARED)
		strcpy(e->mode, "s");
	else if (p->limit > 0)
		snprintf(e->mode, sizeof e->mode, "%ld", p->limit);
	else
		strcpy(e->mode, "x");
	e->lease_ttl_s = (lk->ttl_ms + 999) / 1000;
	lk->key = e->name_key;
	/* ETCD_LOCK_KEY: the contenders' prefix and a lease ID's 16 hex
	 * digits; ETCD_LOCK_REV: an int64 */
	lk->env_max = sizeof "ETCD_LOCK_KEY=" + e->pfx_len + 16 +
		      sizeof "ETCD_LOCK_REV=" + 20;
	return 0;
}

static void stop_watch(struct etcd *e)
{
	etcd_client_close(&e->watch);
	free(e->watch_key);
	free(e->watch_end);
	e->watch_key = e->watch_end = NULL;
}

void etcd_close(struct lock *lk)
{
	struct etcd *e = etcd_of(lk);

	/* held on past this process (`dlock acquire`): its 'acquired' now */
	if (e->have_lease)
		etcd_log_acquired(lk, etcd_deadline(lk));
	stop_watch(e);
	etcd_client_close(&e->rpc);
	etcd_cluster_free(&e->cl);
	if (e->trigger_fd >= 0)
		close(e->trigger_fd);
	free(e->my_key);
	free(e->name_key);
	free(e->pfx);
	free(e->hist);
	engine_close_state(lk);
}

static void copy_out(struct lock *lk)
{
	/* a certificate or a server to fix, not an outage */
	lk->misconfigured |= etcd_of(lk)->cl.tls_refused || etcd_of(lk)->cl.too_old;
	/* a server that answered it cannot serve now (overloaded, no
	 * leader): busy, not down */
	lk->busy = etcd_of(lk)->cl.busy;
}

static int set_token(struct lock *lk, const char *token, struct error *err)
{
	struct etcd *e = etcd_of(lk);

	snprintf(e->token, sizeof e->token, "%s", token);
	e->lease = etcd_lease_of(e->token, e->name_key);
	free(e->my_key);
	if (!(e->my_key = etcd_contender_key(e->pfx, e->lease))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	return 0;
}

int etcd_begin(struct lock *lk, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	char token[33];

	if (lk->p->token) {
		snprintf(token, sizeof token, "%s", lk->p->token);
	} else {
		engine_random_hex(token, 16);
	}
	e->have_lease = false;
	e->my_rev = 0;
	e->acquired_logged = false;
	e->acquired_wall_ms = 0;
	e->ahead_exclusive = false;
	e->ahead_gone_rev = 0;
	return set_token(lk, token, err);
}

/* Gives back what this acquisition holds: revoking the lease deletes our
 * key with it, in one request. */
void etcd_give_back(struct lock *lk)
{
	struct etcd *e = etcd_of(lk);
	struct error ignored;

	if (e->have_lease)
		etcd_revoke(e, e->lease, etcd_deadline(lk), &ignored);
	e->have_lease = false;
	e->my_rev = 0;
}

/* A lease, or the one we have kept alive when due (waiting: every TTL/3).
 * -1 with err; *lost when etcd had let ours go. */
static int lease_ready(struct lock *lk, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	int64_t start_ms = clock_now_ms(), ttl_s;

	if (e->have_lease && start_ms - e->alive_ms < lk->ttl_ms / 3)
		return 0;
	if (e->have_lease) {
		if (etcd_keepalive(e, e->lease, etcd_deadline(lk), &ttl_s, err) < 0)
			return -1;
		if (ttl_s > 0) {
			e->alive_ms = start_ms;
			return 0;
		}
		/* expired while we waited (stopped, or cut off): start over,
		 * at the back */
		e->have_lease = false;
		e->my_rev = 0;
	}
	if (etcd_grant(e, e->lease, e->lease_ttl_s, etcd_deadline(lk),
		       &e->granted_ttl_s, err) < 0)
		return -1;
	e->have_lease = true;
	e->alive_ms = start_ms;
	return 0;
}

void etcd_set_valid(struct lock *lk)
{
	struct etcd *e = etcd_of(lk);
	int64_t ttl_ms = e->granted_ttl_s * 1000 < lk->ttl_ms ?
			 e->granted_ttl_s * 1000 : lk->ttl_ms;

	/* as RedLock allows for clocks that run at different rates */
	lk->valid_until_ms = e->alive_ms + ttl_ms - (lk->ttl_ms / 100 + 2);
}

/* The watch: deletions of [key, end) from rev on (end NULL: key alone).
 * Kept when it watches that already. */
int etcd_start_watch(struct lock *lk, const char *key, size_t len,
		     const char *end, size_t end_len, int64_t rev,
		     int64_t deadline_ms, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	json_object *body, *req, *filters;
	int r;

	if (e->watch.streaming && e->watch.conn.fd >= 0 && e->watch_key &&
	    e->watch_key_len == len && memcmp(e->watch_key, key, len) == 0 &&
	    (!end) == (!e->watch_end) &&
	    (!end || (e->watch_end_len == end_len &&
		      memcmp(e->watch_end, end, end_len) == 0)))
		return 0;
	stop_watch(e);
	body = json_object_new_object();
	req = json_object_new_object();
	filters = json_object_new_array();
	json_object_object_add(req, "key", etcd_bytes(key, len));
	if (end)
		json_object_object_add(req, "range_end", etcd_bytes(end, end_len));
	json_object_object_add(req, "start_revision", etcd_int(rev));
	json_object_array_add(filters, json_object_new_string("NOPUT"));
	json_object_object_add(req, "filters", filters);
	json_object_object_add(body, "create_request", req);
	r = etcd_stream_start(&e->watch, "/v3/watch", body, deadline_ms, err);
	json_object_put(body);
	if (r < 0)
		return -1;
	e->watch_key = malloc(len + 1);
	e->watch_end = end ? malloc(end_len + 1) : NULL;
	if (!e->watch_key || (end && !e->watch_end)) {
		stop_watch(e);
		return -1;
	}
	memcpy(e->watch_key, key, len);
	e->watch_key_len = len;
	if (end) {
		memcpy(e->watch_end, end, end_len);
		e->watch_end_len = end_len;
	}
	return 0;
}

/* What the watch said since: 1 something to look at (a deletion, a
 * compaction, the stream gone: it is closed then), 0 nothing. */
static int watch_news(struct etcd *e)
{
	for (;;) {
		json_object *msg = NULL, *res, *events = NULL;
		struct error err;
		bool canceled = false;
		int r = etcd_stream_next(&e->watch, &msg, &err);

		if (r == 0)
			return 0;
		if (r < 0 || !json_object_object_get_ex(msg, "result", &res) ||
		    etcd_bool(res, "canceled", &canceled) < 0 || canceled ||
		    (json_object_object_get_ex(res, "events", &events) &&
		     json_object_is_type(events, json_type_array) &&
		     json_object_array_length(events) > 0)) {
			json_object *kv;

			/* a deletion (NOPUT): the revision it came at */
			if (r >= 0 && !canceled && events &&
			    json_object_object_get_ex(json_object_array_get_idx(events, 0),
						      "kv", &kv))
				etcd_i64(kv, "mod_revision", &e->ahead_gone_rev);
			json_object_put(msg);
			stop_watch(e);
			return 1;
		}
		json_object_put(msg);	/* created, or a progress notice */
	}
}

/* ---- acquiring (a round: recipe.c) -------------------------------------- */

/* Re-entry: DLOCK_TOKEN names a key of ours that holds the lock. */
static enum lock_result reenter(struct lock *lk, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	int64_t lease = etcd_lease_of(lk->reentry_token, e->name_key);
	char *key = etcd_contender_key(e->pfx, lease), *end;
	size_t end_len;
	struct etcd_range all;
	enum lock_result res = LOCK_HELD;
	int64_t rev;
	long blocker;

	end = etcd_range_end(e->pfx, e->pfx_len, &end_len);
	if (!key || !end) {
		free(key);
		free(end);
		return LOCK_HELD;
	}
	if (etcd_range_call(e, etcd_range_req(e->pfx, e->pfx_len, end, end_len, 0,
					      false, 0, false, false),
			    etcd_deadline(lk), &all, &rev, err) < 0) {
		free(key);
		free(end);
		return LOCK_FAILED;
	}
	etcd_only_contenders(&all, e->pfx_len);
	for (size_t i = 0; i < all.n; i++) {
		struct etcd_value v;

		if (all.kvs[i].key_len != strlen(key) ||
		    memcmp(all.kvs[i].key, key, all.kvs[i].key_len) != 0)
			continue;
		if (etcd_value_parse(all.kvs[i].value, all.kvs[i].value_len, &v) &&
		    v.token_len == strlen(lk->reentry_token) &&
		    memcmp(v.token, lk->reentry_token, v.token_len) == 0 &&
		    /* its job over, --min-hold keeps it: the token's
		     * re-entry was the job's */
		    !engine_info_finished(v.info, v.info_len) &&
		    etcd_holds(all.kvs, all.n, i, &blocker)) {
			char held[40];

			/* Held shared or --limit by the outer dlock: an
			 * exclusive request would not keep the other holders
			 * out, and waiting for them would wait for the outer
			 * job itself. No upgrade; another mode is refused as
			 * it is without re-entry. An exclusive outer hold
			 * covers every mode. */
			if (etcd_mode_clash(&all.kvs[i], e->mode, held, sizeof held)) {
				if (strcmp(e->mode, "x") == 0)
					error_set(err, EX_USAGE, "%s: the outer dlock holds the lock %s: a nested exclusive request cannot re-enter it",
						  e->cl.url->text, held);
				else
					error_set(err, EX_USAGE, "%s: the lock is held %s",
						  e->cl.url->text, held);
				res = LOCK_FAILED;
				break;
			}
			snprintf(lk->token, sizeof lk->token, "%s", lk->reentry_token);
			if (!lk->p->no_fence)
				snprintf(lk->fence, sizeof lk->fence, "%" PRId64,
					 all.kvs[i].create_rev);
			res = LOCK_REENTERED;
		}
		break;
	}
	etcd_range_free(&all);
	free(key);
	free(end);
	return res;
}

/* Waiting with the watch on the key in our way still up, and nothing on
 * it: that key is there, and so is every key before it (a deletion of
 * the one we watch, or the stream's end, is news). The lock is as held
 * as the last round found it: no round is needed, only the lease kept
 * alive when due. The core still tries every few seconds, for stores
 * whose releases do not always wake (Redis); here those tries cost
 * etcd nothing. */
static bool quiet_wait(struct lock *lk)
{
	struct etcd *e = etcd_of(lk);

	return e->my_rev && e->have_lease && e->watch.streaming &&
	       e->watch.conn.fd >= 0 && watch_news(e) == 0;
}

enum lock_result etcd_try(struct lock *lk, int64_t *retry_ms,
			  struct error *err)
{
	struct etcd *e = etcd_of(lk);
	int64_t start_ms = clock_now_ms();
	enum lock_result res;

	err->exit = 0;
	e->cl.busy = false;
	if (quiet_wait(lk)) {
		if (lease_ready(lk, err) < 0) {
			copy_out(lk);
			return LOCK_FAILED;
		}
		/* the lease ran out meanwhile (my_rev cleared): a round */
		if (e->my_rev) {
			lk->refused = true;
			snprintf(lk->held_by, sizeof lk->held_by, "%s", e->held_by);
			lk->queue_pos = e->queue_pos;
			*retry_ms = e->alive_ms + lk->ttl_ms / 3 - clock_now_ms();
			if (*retry_ms < 0)
				*retry_ms = 0;
			return LOCK_HELD;
		}
	}
	if (lk->reentry_token && !e->reentry_checked) {
		e->reentry_checked = true;
		res = reenter(lk, err);
		if (res != LOCK_HELD) {
			copy_out(lk);
			return res;
		}
	}
	if (!lk->p->waits && lk->p->limit == 0 && !e->my_rev && !e->have_lease) {
		int held = etcd_held_already(lk, err);

		if (held != 0) {
			copy_out(lk);
			return held > 0 ? LOCK_HELD : LOCK_FAILED;
		}
	}
	for (int round = 0; round < 3; round++) {
		bool again = false;

		if (lease_ready(lk, err) < 0) {
			copy_out(lk);
			return LOCK_FAILED;
		}
		if (!e->my_rev && lk->p->limit == 0 &&
		    etcd_first_exclusive(lk, start_ms, &res, err)) {
			copy_out(lk);
			return res;
		}
		res = etcd_round_trip(lk, start_ms, retry_ms, &again, err);
		if (!again) {
			copy_out(lk);
			return res;
		}
	}
	error_set(err, EX_UNAVAILABLE, "%s: our key kept vanishing while we waited",
		  e->cl.url->text);
	return LOCK_FAILED;
}

size_t etcd_wait_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct etcd *e = etcd_of(lk);

	if (max == 0 || !e->watch.streaming || e->watch.conn.fd < 0)
		return 0;
	pfd[0] = (struct pollfd){ e->watch.conn.fd, POLLIN, 0 };
	return 1;
}

bool etcd_wait_events(struct lock *lk, const struct pollfd *pfd, size_t n)
{
	return n > 0 && pfd[0].revents && watch_news(etcd_of(lk)) > 0;
}

void etcd_end_wait(struct lock *lk, enum lock_result r)
{
	struct etcd *e = etcd_of(lk);

	stop_watch(e);
	if (r != LOCK_ACQUIRED && r != LOCK_REENTERED)
		etcd_give_back(lk);
}

/* ---- holding ------------------------------------------------------------- */

enum extend_result etcd_extend(struct lock *lk, int64_t timeout_ms,
			       struct error *err)
{
	struct etcd *e = etcd_of(lk);
	int64_t start_ms = clock_now_ms(), deadline_ms = start_ms + timeout_ms;
	int64_t ttl_s, rev;
	struct etcd_range mine;

	if (etcd_keepalive(e, e->lease, deadline_ms, &ttl_s, err) < 0)
		return EXTEND_FAILED;
	if (etcd_range_call(e, etcd_range_req(e->my_key, strlen(e->my_key), NULL, 0,
					      0, false, 0, false, true),
			    deadline_ms, &mine, &rev, err) < 0)
		return EXTEND_FAILED;
	if (mine.n == 1 && mine.kvs[0].create_rev == e->my_rev &&
	    mine.kvs[0].lease && mine.kvs[0].lease != e->lease) {
		/* `dlock extend -t` moved our key to a longer lease (the
		 * job's own, with our token): that one is ours to keep alive */
		e->lease = mine.kvs[0].lease;
		if (etcd_keepalive(e, e->lease, deadline_ms, &ttl_s, err) < 0) {
			etcd_range_free(&mine);
			return EXTEND_FAILED;
		}
	}
	if (ttl_s <= 0) {
		etcd_range_free(&mine);
		error_set(err, EX_TEMPFAIL, "%s: our lease %" PRIx64 " expired or was revoked",
			  e->cl.url->text, (uint64_t)e->lease);
		return EXTEND_LOST;
	}
	if (mine.n != 1 || mine.kvs[0].create_rev != e->my_rev) {
		char key[512];

		etcd_range_free(&mine);
		log_escape(e->my_key, key, sizeof key);	/* the name's newlines */
		error_set(err, EX_TEMPFAIL, "%s: our key %s was deleted (the lock broken, or its lease revoked)",
			  e->cl.url->text, key);
		return EXTEND_LOST;
	}
	etcd_range_free(&mine);
	e->alive_ms = start_ms;
	e->granted_ttl_s = ttl_s;
	etcd_set_valid(lk);
	/* the command runs: the history's 'acquired' of a waiter that came
	 * to hold, off the hand-off's path (after the renewal: a slow write
	 * does not hold it up) */
	etcd_log_acquired(lk, deadline_ms);
	/* the watch the supervisor asked for, or again after it broke */
	if (e->watch_wanted && !e->watch.streaming) {
		struct error ignored;

		etcd_start_watch(lk, e->my_key, strlen(e->my_key), NULL, 0, rev + 1,
			    deadline_ms, &ignored);
	}
	return EXTEND_OK;
}

/* Our key's watch; until a round has set it up, an eventfd that asks for
 * that round (the supervisor must not block on a connection). */
size_t etcd_watch_fds(struct lock *lk, struct pollfd *pfd, size_t max)
{
	struct etcd *e = etcd_of(lk);
	uint64_t one = 1;

	if (max == 0)
		return 0;
	if (e->watch.streaming && e->watch.conn.fd >= 0) {
		pfd[0] = (struct pollfd){ e->watch.conn.fd, POLLIN, 0 };
		return 1;
	}
	if (e->watch_wanted || e->triggered)
		return 0;
	if (e->trigger_fd < 0 &&
	    (e->trigger_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return 0;
	(void)!write(e->trigger_fd, &one, sizeof one);
	e->triggered = true;
	pfd[0] = (struct pollfd){ e->trigger_fd, POLLIN, 0 };
	return 1;
}

bool etcd_watch_events(struct lock *lk, const struct pollfd *pfd, size_t n,
		       char *note, size_t notelen)
{
	struct etcd *e = etcd_of(lk);
	char key[512];
	uint64_t v;

	if (n == 0 || !pfd[0].revents)
		return false;
	if (pfd[0].fd == e->trigger_fd) {
		(void)!read(e->trigger_fd, &v, sizeof v);
		e->watch_wanted = true;
		return true;
	}
	if (watch_news(e) == 0)
		return false;
	log_escape(e->my_key, key, sizeof key);	/* the name's newlines */
	snprintf(note, notelen, "%s: our key %s was deleted, or its watch ended",
		 e->cl.url->text, key);
	return true;
}

/* dlock was killed (kill -9): its watchdog, in a process of its own,
 * writes the 'killed' event as release writes 'released'; the lock
 * lapses with its lease. */
void etcd_note_killed(struct lock *lk, int64_t held_ms)
{
	struct etcd *e = etcd_of(lk);
	json_object *cmp, *ok, *fail, *op, *acq, *c, *reply = NULL;
	struct error err;
	int64_t fence = 0, now_ms = clock_wall_ms();
	size_t klen;
	char *akey;
	bool succeeded;

	etcd_parse_i64(lk->fence, strlen(lk->fence), &fence);
	if (!(op = etcd_history_put(lk, "killed", lk->token, lk->info, fence, -1,
				    held_ms, NULL)))
		return;
	ok = json_object_new_array();
	fail = json_object_new_array();
	cmp = json_object_new_array();
	json_object_array_add(fail, json_object_get(op));
	/* A waiter that came to hold writes its 'acquired' once the command
	 * runs (recipe.c): killed before that, it is written here, beside
	 * 'killed', unless this acquisition's is there (its key written at
	 * or after our key's create revision, the fence; --no-fence: no
	 * revision known here, so its key there at all, the token being
	 * this acquisition's own). */
	akey = etcd_event_key(e->hist, e->hist_len, lk->token, "acquired", &klen);
	if (akey && (acq = etcd_history_put_at(lk, "acquired", lk->token, lk->info,
					       fence, -1, -1, NULL,
					       now_ms - held_ms))) {
		c = json_object_new_object();
		json_object_object_add(c, "key", etcd_bytes(akey, klen));
		if (fence > 0) {
			json_object_object_add(c, "target", json_object_new_string("MOD"));
			json_object_object_add(c, "result", json_object_new_string("LESS"));
			json_object_object_add(c, "mod_revision", etcd_int(fence));
		} else {
			json_object_object_add(c, "target", json_object_new_string("VERSION"));
			json_object_object_add(c, "result", json_object_new_string("EQUAL"));
			json_object_object_add(c, "version", etcd_int(0));
		}
		json_object_array_add(cmp, c);
		json_object_array_add(ok, acq);
	}
	free(akey);
	json_object_array_add(ok, op);
	etcd_txn_history(lk, cmp, ok, fail, true, &reply, &succeeded, &err);
	json_object_put(reply);
}

size_t etcd_fds(const struct lock *lk, int *out, size_t max)
{
	const struct etcd *e = etcd_of(lk);
	size_t n = 0;

	if (n < max && e->rpc.conn.fd >= 0)
		out[n++] = e->rpc.conn.fd;
	if (n < max && e->watch.conn.fd >= 0)
		out[n++] = e->watch.conn.fd;
	if (n < max && e->trigger_fd >= 0)
		out[n++] = e->trigger_fd;
	return n;
}

/* --min-hold kept by dlock after the job: our key's value says the
 * command finished (lk->info), while the key is still ours. */
int etcd_finished(struct lock *lk, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	json_object *cmp = json_object_new_array(), *ok = json_object_new_array();
	json_object *reply = NULL;
	size_t vlen = 0, klen = strlen(e->my_key);
	char *value = etcd_value_of(e->token, e->mode, lk->info, &vlen);
	bool succeeded = false;
	int rc;

	if (!value) {
		json_object_put(cmp);
		json_object_put(ok);
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	json_object_array_add(cmp, etcd_cmp_create(e->my_key, klen, NULL, 0, "EQUAL",
						   e->my_rev));
	json_object_array_add(ok, etcd_op_put(e->my_key, klen, value, vlen, e->lease));
	rc = etcd_txn(e, cmp, ok, NULL, etcd_deadline(lk), &reply, &succeeded, err);
	free(value);
	json_object_put(reply);
	if (rc == 0 && !succeeded)
		error_set(err, EX_TEMPFAIL, "%s: our key is gone", e->cl.url->text);
	return rc == 0 && succeeded ? 0 : -1;
}

int etcd_release(struct lock *lk, const struct release_how *how,
		 struct error *err)
{
	struct etcd *e = etcd_of(lk);
	json_object *cmp = json_object_new_array(), *ok = json_object_new_array();
	json_object *fail = json_object_new_array(), *reply = NULL, *op;
	size_t klen = strlen(e->my_key);
	int64_t held_ms = clock_now_ms() - lk->acquired_ms, count = 0;
	bool succeeded = false, counted = false;
	int r;

	stop_watch(e);
	if (!e->have_lease)
		return 0;
	json_object_array_add(cmp, etcd_cmp_create(e->my_key, klen, NULL, 0, "EQUAL",
						   e->my_rev));
	json_object_array_add(ok, etcd_op_delete_prev(e->my_key, klen));
	if (how->job && (op = etcd_history_put(lk, "released", e->token, lk->info,
					      e->my_rev, how->exit_status, held_ms,
					      NULL))) {
		size_t end_len;
		char *end = etcd_range_end(e->hist, e->hist_len, &end_len);

		json_object_array_add(ok, op);
		/* the count walks every event in etcd's index (count_only
		 * too: 0.3 ms at the default N), so only now and then;
		 * reply index 2 (before the 'acquired' below) */
		if (end && engine_history_trim_due(lk->p->history, e->my_rev)) {
			json_object_array_add(ok, etcd_op_range(e->hist, e->hist_len, end,
								end_len, 0, false, 0,
								true, false));
			counted = true;
		}
		free(end);
		if ((op = etcd_history_put(lk, "lost", e->token, lk->info, e->my_rev,
					   how->exit_status, held_ms, NULL)))
			json_object_array_add(fail, op);
		/* a command over before the first renewal: its 'acquired'
		 * here, in the one write (after the count) */
		if ((op = etcd_acquired_put(lk))) {
			json_object_array_add(ok, op);
			json_object_array_add(fail, etcd_acquired_put(lk));
		}
	} else if (!how->job && lk->p->history > 0) {
		/* given back unused: the history forgets it */
		size_t ev_len;
		char *k = etcd_event_key(e->hist, e->hist_len, e->token, "acquired",
					 &ev_len);

		if (k) {
			json_object_array_add(ok, etcd_op_delete(k, ev_len));
			free(k);
		}
	}
	r = etcd_txn_history(lk, cmp, ok, fail, true, &reply, &succeeded, err);
	if (r == 0) {
		struct etcd_range c;
		int64_t moved_to = succeeded ? etcd_txn_deleted_lease(reply, 0) : 0;

		/* moved to another lease by `dlock extend -t` since our last
		 * renewal: that one goes too */
		if (moved_to && moved_to != e->lease)
			etcd_revoke(e, moved_to, etcd_deadline(lk), &(struct error){ 0 });
		lk->lost_at_release = !succeeded;
		if (succeeded && counted && etcd_txn_range(reply, 2, &c, err) == 0) {
			count = c.count;
			etcd_range_free(&c);
		}
		json_object_put(reply);
	}
	/* the lease, with whatever else it holds: where the txn failed, this
	 * deletes our key all the same */
	if (etcd_revoke(e, e->lease, etcd_deadline(lk), &(struct error){ 0 }) == 0)
		r = 0;
	if (r < 0 && how->job && clock_now_ms() >= lk->valid_until_ms) {
		/* No renewal got through before the lease could have run
		 * out: the lock lapsed on our own clock, and the job was told
		 * (or is now: 75). A release that cannot reach etcd after
		 * that is no second failure to report. */
		char why[sizeof err->msg];

		snprintf(why, sizeof why, "%s", err->msg);
		error_set(err, EX_TEMPFAIL, "the lease ran out before the release (%s)", why);
		lk->lost_at_release = true;
	}
	e->have_lease = false;
	if (r == 0 && count > 0)
		etcd_history_trim(lk, count, etcd_deadline(lk));
	e->my_rev = 0;
	return r < 0 ? -1 : 0;
}
