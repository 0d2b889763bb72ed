/* inspect.c - etcd: dlock status (holders, their leases' time left, the
 * waiters in order), the listing of every lock under the prefix, the
 * history, and the repairs: release --token, release --force (deletes
 * the holders' keys: a dlock holder's watch sees it, and it exits 75),
 * extend --token. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "etcd.h"

/* The lock's contenders, oldest first: the keys under PREFIX NAME "/",
 * but for those of locks named NAME "/"... */
static int contenders(struct lock *lk, const char *name, struct etcd_range *all,
		      char **pfx_out, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	size_t pfx_len, end_len;
	char *pfx = etcd_contenders_of(lk->p->prefix, name, &pfx_len), *end;
	int r;

	if (!pfx) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	if (!(end = etcd_range_end(pfx, pfx_len, &end_len))) {
		free(pfx);
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	r = etcd_range_call(e, etcd_range_req(pfx, pfx_len, end, end_len, 0,
					      false, 0, false, false),
			    etcd_deadline(lk), all, NULL, err);
	free(end);
	if (r == 0)
		etcd_only_contenders(all, pfx_len);
	if (pfx_out && r == 0)
		*pfx_out = pfx;
	else
		free(pfx);
	return r;
}

static void who(const struct etcd_kv *kv, char **token, size_t *token_len,
		char **info, size_t *info_len)
{
	struct etcd_value v;

	if (etcd_value_parse(kv->value, kv->value_len, &v)) {
		*token = engine_dup(v.token, v.token_len);
		*token_len = v.token_len;
		*info = engine_dup(v.info, v.info_len);
		*info_len = v.info_len;
	} else {
		/* etcdctl lock, concurrency.Mutex: the key says who */
		*token = engine_dup(kv->key, kv->key_len);
		*token_len = kv->key_len;
		*info = NULL;
		*info_len = 0;
	}
}

static int one_status(struct lock *lk, struct status_lock *m, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	struct etcd_range all;
	long blocker;

	if (contenders(lk, m->name, &all, NULL, err) < 0)
		return -1;
	if (asprintf(&m->key, "%s%s", lk->p->prefix, m->name) < 0)
		m->key = NULL;
	m->state = all.n ? ST_HELD : ST_FREE;
	m->ttl_ms = -2;
	m->fence = -1;
	m->n_agree = 1;
	m->holders = calloc(all.n ? all.n : 1, sizeof *m->holders);
	m->waiters = calloc(all.n ? all.n : 1, sizeof *m->waiters);
	if (!m->holders || !m->waiters) {
		etcd_range_free(&all);
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < all.n; i++) {
		const struct etcd_kv *kv = &all.kvs[i];

		if (etcd_holds(all.kvs, all.n, i, &blocker)) {
			struct status_holder *h = &m->holders[m->n_holders++];
			struct etcd_value v;
			int64_t ttl_s = -1;
			struct error ignored;

			who(kv, &h->token, &h->token_len, &h->info, &h->info_len);
			h->left_ms = -2;
			if (!kv->lease)
				h->left_ms = -1;
			else if (etcd_timetolive(e, kv->lease, etcd_deadline(lk), &ttl_s,
						 &ignored) == 0)
				h->left_ms = ttl_s > 0 ? ttl_s * 1000 : 0;
			h->fence = kv->create_rev;
			h->slot = -1;
			/* --limit N: its place among the holders, 1..N, oldest
			 * first (it moves up as those before it leave) */
			if (etcd_value_parse(kv->value, kv->value_len, &v) &&
			    v.mode[0] != 'x' && v.mode[0] != 's')
				h->slot = (long)m->n_holders;
			h->n_servers = 1;
			if (asprintf(&h->note, "lease %" PRIx64, (uint64_t)kv->lease) < 0)
				h->note = NULL;
			if (h->left_ms > m->ttl_ms)
				m->ttl_ms = h->left_ms;
			if (kv->create_rev > m->fence)
				m->fence = kv->create_rev;
			if (m->n_holders == 1) {
				m->foreign = !h->info;
				if (etcd_value_parse(kv->value, kv->value_len, &v) &&
				    v.mode[0] != 'x')
					snprintf(m->mode, sizeof m->mode, "%.*s",
						 (int)v.mode_len, v.mode);
			}
		} else {
			struct status_waiter *w = &m->waiters[m->n_waiters++];

			who(kv, &w->token, &w->token_len, &w->info, &w->info_len);
			w->ticket = -1;
		}
	}
	m->n_waiting = (long long)m->n_waiters;
	etcd_range_free(&all);
	return 0;
}

int etcd_status(struct lock *lk, struct status_lock *locks, size_t n,
		struct error *err)
{
	for (size_t i = 0; i < n; i++) {
		struct error e = { 0 };

		if (one_status(lk, &locks[i], &e) < 0) {
			locks[i].state = ST_UNKNOWN;
			locks[i].err = e;
			if (i == 0 && n == 1) {
				*err = e;
				return -1;
			}
		}
	}
	return 0;
}

int etcd_list(struct lock *lk, char ***names, size_t *n, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	const char *prefix = lk->p->prefix;
	size_t plen = strlen(prefix), end_len, from_len, k = 0;
	char *end = etcd_range_end(prefix, plen, &end_len);
	char *from = etcd_listing_from(prefix, &from_len);
	struct etcd_range all;
	char **out;
	int r;

	*names = NULL;
	*n = 0;
	if (!end || !from) {
		free(end);
		free(from);
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	/* from PREFIX "\1": past the histories (PREFIX "\0history/"...);
	 * with no prefix, the end "\0" is every key */
	r = etcd_range_call(e, etcd_range_req(from, from_len, end, end_len, 0, false,
					      0, false, true),
			    etcd_deadline(lk), &all, NULL, err);
	free(end);
	free(from);
	if (r < 0)
		return -1;
	if (!(out = calloc(all.n + 1, sizeof *out))) {
		etcd_range_free(&all);
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < all.n; i++) {
		const char *key = all.kvs[i].key, *slash;
		size_t len = all.kvs[i].key_len, hex;

		/* PREFIX NAME "/" HEX, as no history's key is */
		if (len <= plen || memchr(key, '\0', len) ||
		    !(slash = memrchr(key, '/', len)) || slash < key + plen + 1)
			continue;
		hex = len - (size_t)(slash + 1 - key);
		if (hex == 0 || hex > 16 || strspn(slash + 1, "0123456789abcdef") != hex)
			continue;
		if (!(out[k] = engine_dup(key + plen, (size_t)(slash - key) - plen)))
			break;
		k++;
	}
	etcd_range_free(&all);
	*n = engine_sort_names(out, k);
	*names = out;
	return 0;
}

/* as enum history_kind */
static const char *const kinds[] = { "acquired", "broken", "released", "lost", "killed" };

static char *json_text(json_object *o, const char *key, size_t *len)
{
	json_object *v;

	*len = 0;
	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	*len = (size_t)json_object_get_string_len(v);
	return engine_dup(json_object_get_string(v), *len);
}

static bool is_acquired(const struct etcd_kv *kv)
{
	static const char tail[] = "/acquired";

	return kv->key_len >= sizeof tail - 1 &&
	       memcmp(kv->key + kv->key_len - (sizeof tail - 1), tail,
		      sizeof tail - 1) == 0;
}

/* The events newest first: an 'acquired' written in the txn of the
 * event that ended it (a command over before its first renewal: the
 * release's txn; killed before it: the watchdog's) has that event's
 * revision, and etcd orders ties as it likes: it goes after. */
static void acquired_after(struct etcd_range *all)
{
	for (size_t i = 0; i + 1 < all->n; i++)
		if (all->kvs[i].create_rev == all->kvs[i + 1].create_rev &&
		    is_acquired(&all->kvs[i]) && !is_acquired(&all->kvs[i + 1])) {
			struct etcd_kv t = all->kvs[i];

			all->kvs[i] = all->kvs[i + 1];
			all->kvs[i + 1] = t;
		}
}

static long long json_num(json_object *o, const char *key)
{
	json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return -1;
	n = json_object_get_int64(v);
	return n >= 0 ? n : -1;
}

int etcd_history(struct lock *lk, long count, struct history_report *out,
		 struct error *err)
{
	struct etcd *e = etcd_of(lk);
	struct etcd_range all;
	size_t end_len, shown;
	char *end = etcd_range_end(e->hist, e->hist_len, &end_len);

	*out = (struct history_report){ .n_servers = 1 };
	if (!end) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	/* one more than asked: an 'acquired' tied with the event after it
	 * (acquired_after()) may come first from etcd, the newest one cut */
	if (etcd_range_call(e, etcd_range_req(e->hist, e->hist_len, end, end_len,
					      count > 0 ? count + 1 : 0, true, 0, false,
					      false),
			    etcd_deadline(lk), &all, NULL, err) < 0) {
		free(end);
		return -1;
	}
	free(end);
	acquired_after(&all);
	shown = count > 0 && all.n > (size_t)count ? (size_t)count : all.n;
	out->n_ok = 1;
	out->events = calloc(all.n ? all.n : 1, sizeof *out->events);
	for (size_t i = 0; out->events && i < shown; i++) {
		json_object *o = etcd_json_parse(all.kvs[i].value, all.kvs[i].value_len);
		struct history_event *ev = &out->events[out->n_events];
		char *kind;
		size_t len;
		int k = -1;

		if (!o)
			continue;
		if ((kind = json_text(o, "event", &len)))
			for (int j = 0; j < (int)(sizeof kinds / sizeof *kinds); j++)
				if (strcmp(kind, kinds[j]) == 0)
					k = j;
		free(kind);
		if (k < 0 || json_num(o, "time_ms") < 0) {
			json_object_put(o);
			continue;
		}
		*ev = (struct history_event){
			.kind = (enum history_kind)k,
			.time_ms = json_num(o, "time_ms"),
			.fence = json_num(o, "fence"),
			.exit = json_num(o, "exit"),
			.held_ms = json_num(o, "held_ms"),
			.n_servers = 1,
		};
		/* written in the txn that took the lock: its revision */
		if (ev->fence < 0 && k == EV_ACQUIRED)
			ev->fence = all.kvs[i].create_rev;
		ev->id = engine_dup(all.kvs[i].key + e->hist_len, all.kvs[i].key_len - e->hist_len);
		ev->token = json_text(o, "token", &ev->token_len);
		if (!ev->token)
			ev->token = strdup("");
		ev->holder = json_text(o, "holder", &ev->holder_len);
		ev->by = json_text(o, "by", &ev->by_len);
		out->n_events++;
		json_object_put(o);
	}
	etcd_range_free(&all);
	if (!out->events) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	return 0;
}

/* The key of token, if it is there and carries it: 0 with *kv (free it),
 * 1 not there, -1 err. */
static int find_token(struct lock *lk, const char *token, struct etcd_range *r,
		      char **key, int64_t *lease, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	struct etcd_value v;

	*lease = etcd_lease_of(token, e->name_key);
	if (!(*key = etcd_contender_key(e->pfx, *lease))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	if (etcd_range_call(e, etcd_range_req(*key, strlen(*key), NULL, 0, 0, false, 0,
					      false, false),
			    etcd_deadline(lk), r, NULL, err) < 0)
		return -1;
	if (r->n != 1 || !etcd_value_parse(r->kvs[0].value, r->kvs[0].value_len, &v) ||
	    v.token_len != strlen(token) || memcmp(v.token, token, v.token_len) != 0)
		return 1;
	return 0;
}

int etcd_release_token(struct lock *lk, const char *token, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	struct etcd_range r = { 0 };
	json_object *cmp, *ok, *reply = NULL, *hist;
	struct etcd_value v;
	char *key = NULL, *info = NULL;
	int64_t lease;
	bool succeeded;
	int found = find_token(lk, token, &r, &key, &lease, err);

	if (found != 0) {
		etcd_range_free(&r);
		free(key);
		return found < 0 ? err->exit : 1;
	}
	etcd_value_parse(r.kvs[0].value, r.kvs[0].value_len, &v);
	info = engine_dup(v.info, v.info_len);
	if (r.kvs[0].lease)	/* the one it moved to, if extended */
		lease = r.kvs[0].lease;
	cmp = json_object_new_array();
	ok = json_object_new_array();
	json_object_array_add(cmp, etcd_cmp_create(key, strlen(key), NULL, 0, "EQUAL",
						   r.kvs[0].create_rev));
	json_object_array_add(ok, etcd_op_delete(key, strlen(key)));
	/* by: who released it (this dlock release --token), as Redis's */
	if ((hist = etcd_history_put(lk, "released", token, info, r.kvs[0].create_rev,
				     -1, -1, lk->info)))
		json_object_array_add(ok, hist);
	etcd_range_free(&r);
	free(info);
	found = etcd_txn_history(lk, cmp, ok, NULL, true, &reply, &succeeded, err);
	json_object_put(reply);
	free(key);
	if (found < 0)
		return err->exit;
	etcd_revoke(e, lease, etcd_deadline(lk), &(struct error){ 0 });
	return succeeded ? 0 : 1;
}

int etcd_force(struct lock *lk, struct broken_holder **out, size_t *n,
	       struct error *err)
{
	struct etcd *e = etcd_of(lk);
	struct etcd_range all;
	long blocker;

	*out = NULL;
	*n = 0;
	if (contenders(lk, lk->p->name, &all, NULL, err) < 0)
		return err->exit;
	if (!(*out = calloc(all.n ? all.n : 1, sizeof **out))) {
		etcd_range_free(&all);
		error_set(err, EX_OSERR, "out of memory");
		return EX_OSERR;
	}
	for (size_t i = 0; i < all.n; i++) {
		const struct etcd_kv *kv = &all.kvs[i];
		struct broken_holder *b = &(*out)[*n];
		json_object *cmp, *ok, *reply = NULL, *hist;
		bool succeeded;
		int64_t ttl_s = -1;
		int r;

		if (!etcd_holds(all.kvs, all.n, i, &blocker))
			continue;
		who(kv, &b->token, &b->token_len, &b->info, &b->info_len);
		b->n_servers = 1;
		if (b->info)
			b->fence = kv->create_rev;	/* DLOCK_FENCE */
		b->left_ms = -2;
		if (kv->lease && etcd_timetolive(e, kv->lease, etcd_deadline(lk), &ttl_s,
						 &(struct error){ 0 }) == 0)
			b->left_ms = ttl_s > 0 ? ttl_s * 1000 : 0;
		cmp = json_object_new_array();
		ok = json_object_new_array();
		json_object_array_add(cmp, etcd_cmp_create(kv->key, kv->key_len, NULL, 0,
							   "EQUAL", kv->create_rev));
		json_object_array_add(ok, etcd_op_delete(kv->key, kv->key_len));
		if ((hist = etcd_history_put(lk, "broken", b->token, b->info,
					     kv->create_rev, -1, -1, lk->info)))
			json_object_array_add(ok, hist);
		r = etcd_txn_history(lk, cmp, ok, NULL, true, &reply, &succeeded, err);
		json_object_put(reply);
		if (r < 0) {
			free(b->token);
			free(b->info);
			*b = (struct broken_holder){ 0 };
			etcd_range_free(&all);
			return err->exit;
		}
		if (succeeded)
			(*n)++;
		else {
			free(b->token);
			free(b->info);
			*b = (struct broken_holder){ 0 };
		}
	}
	etcd_range_free(&all);
	return *n ? 0 : 1;
}

/* The lease a lock moves to when extended past its lease's TTL: derived
 * from the token and the lease it leaves, so that a move whose grant
 * answer was lost, tried again, finds the same lease. */
static int64_t next_lease(const struct etcd *e, const char *token, int64_t from,
			  int64_t ttl_s)
{
	char salt[LOCK_TOKEN_MAX + 64];

	snprintf(salt, sizeof salt, "%s moved from %" PRIx64 " for %" PRId64,
		 token, (uint64_t)from, ttl_s);
	return etcd_lease_of(salt, e->name_key);
}

/* Moves kv (the token's key, as read) onto a new lease of ttl_s: one txn
 * that puts it again, value unchanged, if nothing wrote it since; its
 * create revision (its place in the queue, the fence) stays, and so does
 * its name, so the token still names it. Then the old lease goes.
 * 0 moved, 1 the key changed meanwhile, -1 err. */
static int move_lease(struct lock *lk, const struct etcd_kv *kv, int64_t ttl_s,
		      struct error *err)
{
	struct etcd *e = etcd_of(lk);
	int64_t to = next_lease(e, lk->token, kv->lease, ttl_s), granted, ttl_now;
	json_object *cmp, *ok, *reply = NULL;
	bool moved = false;
	int existed = etcd_grant(e, to, ttl_s, etcd_deadline(lk), &granted, err);

	if (existed < 0)
		return -1;
	cmp = json_object_new_array();
	ok = json_object_new_array();
	json_object_array_add(cmp, etcd_cmp_mod(kv->key, kv->key_len, kv->mod_rev));
	json_object_array_add(ok, etcd_op_put(kv->key, kv->key_len, kv->value,
					      kv->value_len, to));
	if (etcd_txn(e, cmp, ok, NULL, etcd_deadline(lk), &reply, &moved, err) < 0) {
		etcd_revoke(e, to, etcd_deadline(lk), &(struct error){ 0 });
		return -1;
	}
	json_object_put(reply);
	if (!moved) {
		etcd_revoke(e, to, etcd_deadline(lk), &(struct error){ 0 });
		return 1;
	}
	/* a lease granted by an earlier try: its full TTL again */
	if (existed && etcd_keepalive(e, to, etcd_deadline(lk), &ttl_now, err) < 0)
		return -1;
	/* the key is off the old lease: revoking it deletes nothing of
	 * ours, and a revoke that fails only lets it lapse */
	etcd_revoke(e, kv->lease, etcd_deadline(lk), &(struct error){ 0 });
	return 0;
}

/* Whether kv, dlock's, says its command finished (--min-hold keeps it). */
static bool finished(const struct etcd_kv *kv)
{
	struct etcd_value v;

	return etcd_value_parse(kv->value, kv->value_len, &v) &&
	       engine_info_finished(v.info, v.info_len);
}

/* extend --token: the lease ends --ttl from now at the earliest. A
 * lease's TTL cannot change: a keepalive renews it to the TTL it was
 * granted; a longer --ttl moves the key to a lease of its own. */
enum extend_result etcd_extend_token(struct lock *lk, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	int64_t want_s = (lk->ttl_ms + 999) / 1000;

	/* dlock's tokens are 32 hex digits: no lock is held with another,
	 * a setting to fix, told before asking */
	if (strlen(lk->token) != 32 || strspn(lk->token, "0123456789abcdef") != 32) {
		error_set(err, EX_USAGE, "bad --token '%s': an etcd token is 32 hex digits",
			  lk->token);
		return EXTEND_FAILED;
	}
	for (int round = 0; round < 3; round++) {
		struct etcd_range r = { 0 };
		char *key = NULL;
		int64_t lease, ttl_s;
		int found = find_token(lk, lk->token, &r, &key, &lease, err);

		free(key);
		/* a lock --min-hold keeps after its job is never lengthened */
		if (found != 0 || !r.kvs[0].lease || finished(&r.kvs[0])) {
			etcd_range_free(&r);
			return found < 0 ? EXTEND_FAILED : EXTEND_LOST;
		}
		/* the lease the key is on: the token's own, or one it moved to */
		if (etcd_keepalive(e, r.kvs[0].lease, etcd_deadline(lk), &ttl_s, err) < 0) {
			etcd_range_free(&r);
			return EXTEND_FAILED;
		}
		if (ttl_s <= 0 || ttl_s >= want_s) {
			etcd_range_free(&r);
			return ttl_s > 0 ? EXTEND_OK : EXTEND_LOST;
		}
		found = move_lease(lk, &r.kvs[0], want_s, err);
		etcd_range_free(&r);
		if (found <= 0)
			return found < 0 ? EXTEND_FAILED : EXTEND_OK;
		/* written meanwhile (another extend moved it, or it went):
		 * look again */
	}
	error_set(err, EX_UNAVAILABLE, "%s: the lock's key kept changing while we extended it",
		  e->cl.url->text);
	return EXTEND_FAILED;
}
