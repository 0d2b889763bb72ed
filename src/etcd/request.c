/* request.c - the requests the etcd engine's rounds are made of: ranges,
 * txns, leases, the history's events (the keys they name: names.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "etcd.h"

struct etcd *etcd_of(const struct lock *lk)
{
	return lk->e;
}

int64_t etcd_deadline(const struct lock *lk)
{
	return clock_now_ms() + lk->node_timeout_ms;
}

/* ---- JSON requests ---------------------------------------------------- */

json_object *etcd_bytes(const char *s, size_t len)
{
	char *b = etcd_b64(s, len);
	json_object *o = b ? json_object_new_string(b) : NULL;

	free(b);
	return o;
}

json_object *etcd_int(int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof buf, "%" PRId64, v);
	return json_object_new_string(buf);
}

char *etcd_range_end(const char *s, size_t len, size_t *end_len)
{
	char *end = malloc(len + 1);

	if (!end)
		return NULL;
	memcpy(end, s, len);
	while (len > 0) {
		if ((unsigned char)end[len - 1] < 0xff) {
			end[len - 1]++;
			*end_len = len;
			return end;
		}
		len--;
	}
	end[0] = '\0';		/* every key */
	*end_len = 1;
	return end;
}

json_object *etcd_range_req(const char *key, size_t len, const char *end,
			    size_t end_len, int64_t limit, bool descend,
			    int64_t max_create, bool count_only, bool keys_only)
{
	json_object *r = json_object_new_object();

	json_object_object_add(r, "key", etcd_bytes(key, len));
	if (end)
		json_object_object_add(r, "range_end", etcd_bytes(end, end_len));
	if (limit > 0)
		json_object_object_add(r, "limit", etcd_int(limit));
	if (!count_only) {
		json_object_object_add(r, "sort_order",
				       json_object_new_string(descend ? "DESCEND" : "ASCEND"));
		json_object_object_add(r, "sort_target", json_object_new_string("CREATE"));
	}
	if (max_create > 0)
		json_object_object_add(r, "max_create_revision", etcd_int(max_create));
	if (count_only)
		json_object_object_add(r, "count_only", json_object_new_boolean(1));
	if (keys_only)
		json_object_object_add(r, "keys_only", json_object_new_boolean(1));
	return r;
}

json_object *etcd_op_range(const char *key, size_t len, const char *end,
			   size_t end_len, int64_t limit, bool descend,
			   int64_t max_create, bool count_only, bool keys_only)
{
	json_object *op = json_object_new_object();

	json_object_object_add(op, "request_range",
			       etcd_range_req(key, len, end, end_len, limit, descend,
					      max_create, count_only, keys_only));
	return op;
}

int etcd_range_call(struct etcd *e, json_object *req, int64_t deadline_ms,
		    struct etcd_range *r, int64_t *rev, struct error *err)
{
	json_object *reply;
	int code, n = etcd_call(&e->rpc, "/v3/kv/range", req, deadline_ms, &reply,
				&code, err);

	json_object_put(req);
	if (n < 0)
		return -1;
	if (etcd_range_parse(reply, r) < 0 || (rev && etcd_revision(reply, rev) < 0)) {
		error_set(err, EX_SOFTWARE, "%s: a range answer not understood",
			  e->cl.url->text);
		etcd_range_free(r);
		json_object_put(reply);
		return -1;
	}
	json_object_put(reply);
	return 0;
}

json_object *etcd_op_put(const char *key, size_t len, const char *value,
			 size_t vlen, int64_t lease)
{
	json_object *r = json_object_new_object(), *op = json_object_new_object();

	json_object_object_add(r, "key", etcd_bytes(key, len));
	json_object_object_add(r, "value", etcd_bytes(value, vlen));
	if (lease)
		json_object_object_add(r, "lease", etcd_int(lease));
	json_object_object_add(op, "request_put", r);
	return op;
}

json_object *etcd_op_delete(const char *key, size_t len)
{
	json_object *r = json_object_new_object(), *op = json_object_new_object();

	json_object_object_add(r, "key", etcd_bytes(key, len));
	json_object_object_add(op, "request_delete_range", r);
	return op;
}

json_object *etcd_op_delete_prev(const char *key, size_t len)
{
	json_object *op = etcd_op_delete(key, len), *r;

	if (json_object_object_get_ex(op, "request_delete_range", &r))
		json_object_object_add(r, "prev_kv", json_object_new_boolean(1));
	return op;
}

int64_t etcd_txn_deleted_lease(json_object *reply, size_t i)
{
	json_object *d = etcd_txn_response(reply, i, "response_delete_range"), *prev;
	int64_t lease;

	if (!d || !json_object_object_get_ex(d, "prev_kvs", &prev) ||
	    !json_object_is_type(prev, json_type_array) ||
	    json_object_array_length(prev) != 1 ||
	    etcd_i64(json_object_array_get_idx(prev, 0), "lease", &lease) < 0)
		return 0;
	return lease;
}

json_object *etcd_cmp_create(const char *key, size_t len, const char *end,
			     size_t end_len, const char *result, int64_t rev)
{
	json_object *c = json_object_new_object();

	json_object_object_add(c, "key", etcd_bytes(key, len));
	if (end)
		json_object_object_add(c, "range_end", etcd_bytes(end, end_len));
	json_object_object_add(c, "target", json_object_new_string("CREATE"));
	json_object_object_add(c, "result", json_object_new_string(result));
	json_object_object_add(c, "create_revision", etcd_int(rev));
	return c;
}

json_object *etcd_cmp_mod(const char *key, size_t len, int64_t rev)
{
	json_object *c = json_object_new_object();

	json_object_object_add(c, "key", etcd_bytes(key, len));
	json_object_object_add(c, "target", json_object_new_string("MOD"));
	json_object_object_add(c, "result", json_object_new_string("EQUAL"));
	json_object_object_add(c, "mod_revision", etcd_int(rev));
	return c;
}

int etcd_txn(struct etcd *e, json_object *cmp, json_object *ok, json_object *fail,
	     int64_t deadline_ms, json_object **reply, bool *succeeded,
	     struct error *err)
{
	json_object *body = json_object_new_object();
	int code, r;

	json_object_object_add(body, "compare", cmp ? cmp : json_object_new_array());
	json_object_object_add(body, "success", ok ? ok : json_object_new_array());
	json_object_object_add(body, "failure", fail ? fail : json_object_new_array());
	r = etcd_call(&e->rpc, "/v3/kv/txn", body, deadline_ms, reply, &code, err);
	json_object_put(body);
	if (r < 0)
		return code == GRPC_NOT_FOUND ? -2 : -1;	/* -2: a lease is missing */
	if (etcd_bool(*reply, "succeeded", succeeded) < 0) {
		error_set(err, EX_SOFTWARE, "%s: a txn answer not understood",
			  e->cl.url->text);
		json_object_put(*reply);
		*reply = NULL;
		return -1;
	}
	return 0;
}

int etcd_txn_range(json_object *reply, size_t i, struct etcd_range *r,
		   struct error *err)
{
	if (etcd_range_parse(etcd_txn_response(reply, i, "response_range"), r) == 0)
		return 0;
	error_set(err, EX_SOFTWARE, "etcd: a range answer not understood");
	return -1;
}

/* ---- leases ------------------------------------------------------------- */

static int lease_call(struct etcd *e, const char *path, int64_t id, int64_t ttl_s,
		      int64_t deadline_ms, json_object **reply, int *code,
		      struct error *err)
{
	json_object *body = json_object_new_object();
	int r;

	json_object_object_add(body, "ID", etcd_int(id));
	if (ttl_s)
		json_object_object_add(body, "TTL", etcd_int(ttl_s));
	r = etcd_call(&e->rpc, path, body, deadline_ms, reply, code, err);
	json_object_put(body);
	return r;
}

int etcd_grant(struct etcd *e, int64_t id, int64_t ttl_s, int64_t deadline_ms,
	       int64_t *granted_s, struct error *err)
{
	json_object *reply;
	int code;

	*granted_s = ttl_s;
	if (lease_call(e, "/v3/lease/grant", id, ttl_s, deadline_ms, &reply, &code,
		       err) < 0)
		/* ours already: a grant whose answer was lost */
		return code == GRPC_FAILED_PRECONDITION &&
		       strstr(err->msg, "lease already exists") ? 1 : -1;
	if (etcd_i64(reply, "TTL", granted_s) < 0 || *granted_s <= 0) {
		error_set(err, EX_SOFTWARE, "%s: a lease grant answer not understood",
			  e->cl.url->text);
		json_object_put(reply);
		return -1;
	}
	json_object_put(reply);
	return 0;
}

int etcd_keepalive(struct etcd *e, int64_t id, int64_t deadline_ms,
		   int64_t *ttl_s, struct error *err)
{
	json_object *reply, *result;
	int code;

	/* a stream: one request, one answer, then the gateway ends it */
	if (lease_call(e, "/v3/lease/keepalive", id, 0, deadline_ms, &reply, &code,
		       err) < 0)
		return -1;
	if (!json_object_object_get_ex(reply, "result", &result) ||
	    etcd_i64(result, "TTL", ttl_s) < 0) {
		const char *msg = NULL;
		json_object *error;
		int c;

		if (json_object_object_get_ex(reply, "error", &error))
			etcd_error_parse(error, &msg, &c);
		if (msg && etcd_exit_of(c, msg) == EX_UNAVAILABLE) {
			/* the member could not renew (no leader): the next one,
			 * next time */
			e->cl.busy = true;
			http_close(&e->rpc.conn);
			e->cl.cur = (e->rpc.ep + 1) % e->cl.url->n_ep;
		}
		error_set(err, msg ? etcd_exit_of(c, msg) : EX_SOFTWARE, "%s: keepalive: %s",
			  e->cl.url->text, msg ? msg : "an answer not understood");
		json_object_put(reply);
		return -1;
	}
	json_object_put(reply);
	return 0;
}

int etcd_revoke(struct etcd *e, int64_t id, int64_t deadline_ms,
		struct error *err)
{
	json_object *reply;
	int code;

	if (lease_call(e, "/v3/lease/revoke", id, 0, deadline_ms, &reply, &code,
		       err) < 0)
		return code == GRPC_NOT_FOUND ? 0 : -1;	/* gone already */
	json_object_put(reply);
	return 0;
}

int etcd_timetolive(struct etcd *e, int64_t id, int64_t deadline_ms,
		    int64_t *ttl_s, struct error *err)
{
	json_object *reply;
	int code;

	if (lease_call(e, "/v3/lease/timetolive", id, 0, deadline_ms, &reply, &code,
		       err) < 0)
		return -1;
	if (etcd_i64(reply, "TTL", ttl_s) < 0) {
		json_object_put(reply);
		error_set(err, EX_SOFTWARE, "%s: a lease answer not understood",
			  e->cl.url->text);
		return -1;
	}
	json_object_put(reply);
	return 0;
}

/* ---- history ------------------------------------------------------------ */

json_object *etcd_history_put(struct lock *lk, const char *kind,
			      const char *token, const char *holder,
			      int64_t fence, int exit_status, int64_t held_ms,
			      const char *by)
{
	return etcd_history_put_at(lk, kind, token, holder, fence, exit_status,
				   held_ms, by, clock_wall_ms());
}

json_object *etcd_history_put_at(struct lock *lk, const char *kind,
				 const char *token, const char *holder,
				 int64_t fence, int exit_status, int64_t held_ms,
				 const char *by, int64_t now_ms)
{
	struct etcd *e = etcd_of(lk);
	json_object *v, *op;
	char *key;
	const char *text;
	size_t klen;

	if (lk->p->history <= 0 ||
	    !(key = etcd_event_key(e->hist, e->hist_len, token, kind, &klen)))
		return NULL;
	v = json_object_new_object();
	json_object_object_add(v, "event", json_object_new_string(kind));
	json_object_object_add(v, "time_ms", json_object_new_int64(now_ms));
	json_object_object_add(v, "token", json_object_new_string(token));
	if (holder)
		json_object_object_add(v, "holder", json_object_new_string(holder));
	if (fence > 0)
		json_object_object_add(v, "fence", json_object_new_int64(fence));
	if (exit_status >= 0)
		json_object_object_add(v, "exit", json_object_new_int(exit_status));
	if (held_ms >= 0)
		json_object_object_add(v, "held_ms", json_object_new_int64(held_ms));
	if (by)
		json_object_object_add(v, "by", json_object_new_string(by));
	text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
	op = etcd_op_put(key, klen, text, strlen(text),
			 etcd_history_lease_of(e->name_key, now_ms / 86400000));
	json_object_put(v);
	free(key);
	return op;
}

int etcd_history_lease(struct etcd *e, int64_t deadline_ms, struct error *err)
{
	int64_t granted;

	return etcd_grant(e, etcd_history_lease_of(e->name_key, clock_wall_ms() / 86400000),
			  HISTORY_TTL_S, deadline_ms, &granted, err) < 0 ? -1 : 0;
}

int etcd_txn_history(struct lock *lk, json_object *cmp, json_object *ok,
		     json_object *fail, bool hist, json_object **reply,
		     bool *succeeded, struct error *err)
{
	struct etcd *e = etcd_of(lk);
	int r;

	/* kept for a second send: etcd_txn() puts them */
	json_object_get(cmp);
	json_object_get(ok);
	json_object_get(fail);
	r = etcd_txn(e, cmp, ok, fail, etcd_deadline(lk), reply, succeeded, err);
	if (r == -2 && hist && etcd_history_lease(e, etcd_deadline(lk), err) == 0) {
		json_object_get(cmp);
		json_object_get(ok);
		json_object_get(fail);
		r = etcd_txn(e, cmp, ok, fail, etcd_deadline(lk), reply, succeeded,
			     err);
	}
	json_object_put(cmp);
	json_object_put(ok);
	json_object_put(fail);
	return r;
}

void etcd_history_trim(struct lock *lk, int64_t count, int64_t deadline_ms)
{
	struct etcd *e = etcd_of(lk);
	int64_t keep = lk->p->history;
	size_t end_len;
	char *end;

	if (keep <= 0 || count <= keep + keep / 4)
		return;
	if (!(end = etcd_range_end(e->hist, e->hist_len, &end_len)))
		return;
	/* etcd takes at most 128 operations in a txn (--max-txn-ops) */
	for (int round = 0; round < 4 && count > keep; round++) {
		int64_t drop = count - keep > 128 ? 128 : count - keep;
		json_object *ops, *reply = NULL;
		struct etcd_range r;
		struct error err;
		bool ok;

		if (etcd_range_call(e, etcd_range_req(e->hist, e->hist_len, end, end_len,
						      drop, false, 0, false, true),
				    deadline_ms, &r, NULL, &err) < 0)
			break;
		ops = json_object_new_array();
		for (size_t i = 0; i < r.n; i++)
			json_object_array_add(ops, etcd_op_delete(r.kvs[i].key, r.kvs[i].key_len));
		count -= (int64_t)r.n;
		etcd_range_free(&r);
		reply = NULL;
		if (etcd_txn(e, NULL, ops, NULL, deadline_ms, &reply, &ok, &err) < 0)
			break;
		json_object_put(reply);
	}
	free(end);
}
