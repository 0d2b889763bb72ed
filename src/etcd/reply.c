/* reply.c - etcd's JSON answers, read strictly (see reply.h). Fuzzed
 * (tests/fuzz/fuzz_etcd.c). json-c rather than jansson: it keeps a JSON
 * integer as an int64 without a detour through double, its tokener
 * parses a buffer with its length (a watch's stream is cut into lines
 * here), and Debian's libjson-c5 is already on most systems (systemd's
 * cryptsetup, ...). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "reply.h"

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *etcd_b64(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)u[i] << 16;

		if (i + 1 < len)
			v |= (unsigned)u[i + 1] << 8;
		if (i + 2 < len)
			v |= u[i + 2];
		*o++ = b64chars[v >> 18 & 63];
		*o++ = b64chars[v >> 12 & 63];
		*o++ = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
		*o++ = i + 2 < len ? b64chars[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

static int b64val(char c)
{
	const char *p = c ? strchr(b64chars, c) : NULL;

	return p ? (int)(p - b64chars) : -1;
}

int etcd_unb64(const char *in, size_t inlen, char **out, size_t *outlen)
{
	size_t n = 0;
	char *o;

	if (inlen % 4)
		return -1;
	if (!(o = malloc(inlen / 4 * 3 + 1)))
		return -1;
	for (size_t i = 0; i < inlen; i += 4) {
		int v[4];
		int pad = 0;

		for (int k = 0; k < 4; k++) {
			if (in[i + k] == '=' && i + 4 == inlen && k >= 2) {
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad || (v[k] = b64val(in[i + k])) < 0) {
				free(o);
				return -1;
			}
		}
		o[n++] = (char)(v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			o[n++] = (char)((v[1] & 15) << 4 | v[2] >> 2);
		if (pad < 1)
			o[n++] = (char)((v[2] & 3) << 6 | v[3]);
	}
	o[n] = '\0';
	*out = o;
	*outlen = n;
	return 0;
}

int etcd_parse_i64(const char *s, size_t len, int64_t *out)
{
	bool neg = len > 0 && s[0] == '-';
	uint64_t v = 0, max = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	size_t i = neg;

	if (len == i || len - i > 19)
		return -1;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (max - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	return 0;
}

/* o's member key (*v): 1; 0 absent (proto3 JSON leaves out a default
 * value); -1 o is no object. */
static int member(json_object *o, const char *key, json_object **v)
{
	if (!o || !json_object_is_type(o, json_type_object))
		return -1;
	return json_object_object_get_ex(o, key, v) ? 1 : 0;
}

int etcd_i64(json_object *o, const char *key, int64_t *out)
{
	json_object *v;
	int r;

	*out = 0;
	if ((r = member(o, key, &v)) <= 0)
		return r;
	switch (json_object_get_type(v)) {
	case json_type_string:
		return etcd_parse_i64(json_object_get_string(v),
				      (size_t)json_object_get_string_len(v), out);
	case json_type_int:
		/* json-c keeps integers exactly; one past int64 it saturates
		 * and sets errno */
		errno = 0;
		*out = json_object_get_int64(v);
		return errno ? -1 : 0;
	default:
		return -1;
	}
}

int etcd_bool(json_object *o, const char *key, bool *out)
{
	json_object *v;
	int r;

	*out = false;
	if ((r = member(o, key, &v)) <= 0)
		return r;
	if (!json_object_is_type(v, json_type_boolean))
		return -1;
	*out = json_object_get_boolean(v);
	return 0;
}

int etcd_revision(json_object *o, int64_t *rev)
{
	json_object *h;

	*rev = 0;
	if (!o || !json_object_object_get_ex(o, "header", &h))
		return -1;
	return etcd_i64(h, "revision", rev) < 0 || *rev < 0 ? -1 : 0;
}

static int bytes(json_object *o, const char *key, char **out, size_t *len)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v)) {
		*out = strdup("");
		*len = 0;
		return *out ? 0 : -1;
	}
	if (!json_object_is_type(v, json_type_string))
		return -1;
	return etcd_unb64(json_object_get_string(v),
			  (size_t)json_object_get_string_len(v), out, len);
}

int etcd_range_parse(json_object *o, struct etcd_range *r)
{
	json_object *kvs;
	size_t n;

	*r = (struct etcd_range){ 0 };
	if (!o || !json_object_is_type(o, json_type_object) ||
	    etcd_i64(o, "count", &r->count) < 0 || r->count < 0)
		return -1;
	if (!json_object_object_get_ex(o, "kvs", &kvs))
		return 0;
	if (!json_object_is_type(kvs, json_type_array))
		return -1;
	n = json_object_array_length(kvs);
	if (n == 0)
		return 0;
	if (!(r->kvs = calloc(n, sizeof *r->kvs)))
		return -1;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(kvs, i);
		struct etcd_kv *kv = &r->kvs[i];

		r->n = i + 1;
		if (!json_object_is_type(e, json_type_object) ||
		    bytes(e, "key", &kv->key, &kv->key_len) < 0 ||
		    bytes(e, "value", &kv->value, &kv->value_len) < 0 ||
		    etcd_i64(e, "create_revision", &kv->create_rev) < 0 ||
		    etcd_i64(e, "mod_revision", &kv->mod_rev) < 0 ||
		    etcd_i64(e, "version", &kv->version) < 0 ||
		    etcd_i64(e, "lease", &kv->lease) < 0 ||
		    kv->create_rev <= 0 || kv->mod_rev < kv->create_rev) {
			etcd_range_free(r);
			return -1;
		}
	}
	return 0;
}

void etcd_range_free(struct etcd_range *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->kvs[i].key);
		free(r->kvs[i].value);
	}
	free(r->kvs);
	*r = (struct etcd_range){ 0 };
}

json_object *etcd_txn_response(json_object *txn, size_t i, const char *kind)
{
	json_object *rs, *e, *v;

	if (!txn || !json_object_object_get_ex(txn, "responses", &rs) ||
	    !json_object_is_type(rs, json_type_array) ||
	    i >= json_object_array_length(rs))
		return NULL;
	e = json_object_array_get_idx(rs, i);
	if (!json_object_is_type(e, json_type_object) ||
	    !json_object_object_get_ex(e, kind, &v) ||
	    !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

int etcd_error_parse(json_object *o, const char **msg, int *code)
{
	json_object *m, *c;

	*msg = NULL;
	*code = -1;
	if (!o || !json_object_is_type(o, json_type_object))
		return -1;
	if ((json_object_object_get_ex(o, "message", &m) ||
	     json_object_object_get_ex(o, "error", &m)) &&
	    json_object_is_type(m, json_type_string))
		*msg = json_object_get_string(m);
	if ((json_object_object_get_ex(o, "code", &c) ||
	     json_object_object_get_ex(o, "grpc_code", &c)) &&
	    json_object_is_type(c, json_type_int)) {
		int64_t v = json_object_get_int64(c);

		*code = v >= 0 && v < 64 ? (int)v : -1;
	}
	return *msg ? 0 : -1;
}

json_object *etcd_json_parse(const char *s, size_t len)
{
	struct json_tokener *t;
	json_object *o;
	size_t end;

	if (len > INT_MAX || !(t = json_tokener_new()))
		return NULL;
	o = json_tokener_parse_ex(t, s, (int)len);
	end = json_tokener_get_parse_end(t);
	if (o && json_tokener_get_error(t) == json_tokener_success)
		while (end < len && strchr(" \t\r\n", s[end]) && s[end])
			end++;
	if (!o || json_tokener_get_error(t) != json_tokener_success || end != len ||
	    !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(t);
	return o;
}
