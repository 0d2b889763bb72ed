/* fuzz_etcd.c - libFuzzer target for what the etcd engine reads from
 * outside: etcd:// URLs, the gateway's HTTP/1.1 answers (heads, lengths,
 * chunked bodies fed in pieces, as a socket gives them), its JSON (ranges,
 * txns, errors and the exit status they map to, int64 fields as strings,
 * a delete's previous key), the values of lock keys as
 * other clients may have written them, and who holds by them. Byte 0
 * picks the scenario, byte 1 the piece size, the rest is the input. See
 * tests/fuzz/README.md.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "etcd/etcd.h"
#include "etcd/http.h"
#include "etcd/reply.h"
#include "etcd/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A reply's JSON as the engine reads it: a range, a txn's responses, an
 * error, leases; each range's holders by the lock's rules. */
static void json_reply(const char *s, size_t len)
{
	json_object *o = etcd_json_parse(s, len), *res, *stream_err;
	struct etcd_range r;
	const char *msg;
	int64_t v;
	bool b;
	int code;

	if (!o)
		return;
	etcd_revision(o, &v);
	etcd_i64(o, "TTL", &v);
	etcd_i64(o, "ID", &v);
	etcd_bool(o, "succeeded", &b);
	if (etcd_error_parse(o, &msg, &code) == 0)
		etcd_exit_of(code, msg);
	/* a stream's error: {"error": {"grpc_code": N, "message": ...}} */
	if (json_object_object_get_ex(o, "error", &stream_err) &&
	    etcd_error_parse(stream_err, &msg, &code) == 0)
		etcd_exit_of(code, msg);
	etcd_txn_deleted_lease(o, 0);
	if (json_object_object_get_ex(o, "result", &res)) {
		etcd_i64(res, "TTL", &v);
		etcd_bool(res, "canceled", &b);
	}
	for (size_t i = 0; i < 5; i++) {
		json_object *one = i == 4 ? o : etcd_txn_response(o, i, "response_range");

		if (etcd_range_parse(one, &r) < 0)
			continue;
		for (size_t k = 0; k < r.n; k++) {
			struct etcd_value val;
			long blocker;

			etcd_value_parse(r.kvs[k].value, r.kvs[k].value_len, &val);
			etcd_holds(r.kvs, r.n, k, &blocker);
		}
		etcd_range_free(&r);
	}
	json_object_put(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct etcd_url u;
	struct etcd_value val;
	struct http_resp r;
	char err[512], *text, *out;
	size_t piece, len, outlen, used;
	int64_t v;

	if (size < 2)
		return 0;
	len = size - 2;
	if (!(text = malloc(len + 1)))
		return 0;
	memcpy(text, data + 2, len);
	text[len] = '\0';
	piece = data[1] ? data[1] : 1;
	switch (data[0] % 6) {
	case 0:
		etcd_url_parse(text, &u, err, sizeof err);
		break;
	case 1: {
		/* an answer arriving piece by piece, each parse taking what it
		 * can of what has come, as http_parse_conn() does */
		size_t have = 0, start = 0;
		int done = 0;

		http_resp_init(&r);
		while (done == 0 && have < len) {
			have = have + piece < len ? have + piece : len;
			done = http_parse(&r, text + start, have - start, &used, err,
					  sizeof err);
			start += used;
		}
		if (done == 1 && r.body) {
			/* a stream's lines, then the whole body */
			for (char *line = r.body, *nl; (nl = strchr(line, '\n')); line = nl + 1)
				json_reply(line, (size_t)(nl - line));
			json_reply(r.body, r.body_len);
		}
		http_resp_free(&r);
		break;
	}
	case 2:
		json_reply(text, len);
		break;
	case 3:
		etcd_value_parse(text, len, &val);
		break;
	case 4:
		if (etcd_unb64(text, len, &out, &outlen) == 0)
			free(out);
		break;
	case 5:
		etcd_parse_i64(text, len, &v);
		break;
	}
	free(text);
	return 0;
}
