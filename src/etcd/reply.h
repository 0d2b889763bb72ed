/* reply.h - etcd's JSON answers read strictly: int64 fields (revisions,
 * lease IDs) arrive as strings and exceed 2^53, so they are read as
 * strings into int64, never through a double; bytes are base64. Pure. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

struct etcd_kv {
	char *key, *value;	/* decoded, NUL-terminated */
	size_t key_len, value_len;
	int64_t create_rev, mod_rev, version, lease;
};

struct etcd_range {
	struct etcd_kv *kvs;
	size_t n;
	int64_t count;
};

/* base64 of s[0..len), malloc'd. */
char *etcd_b64(const char *s, size_t len);
/* The base64 string in, decoded into malloc'd *out (NUL-terminated). */
int etcd_unb64(const char *in, size_t inlen, char **out, size_t *outlen);

/* A decimal int64 as etcd writes one: "-"? digits, no more than fit. */
int etcd_parse_i64(const char *s, size_t len, int64_t *out);
/* Field key of o as an int64: a string of digits, or a JSON integer;
 * absent is 0 (proto3 leaves zeroes out). -1 when it is anything else. */
int etcd_i64(json_object *o, const char *key, int64_t *out);
/* The same for booleans: absent is false. */
int etcd_bool(json_object *o, const char *key, bool *out);
/* header.revision of an answer. */
int etcd_revision(json_object *o, int64_t *rev);

/* A RangeResponse (or a txn's response_range). */
int etcd_range_parse(json_object *o, struct etcd_range *r);
void etcd_range_free(struct etcd_range *r);
/* A txn answer's i-th response of kind ("response_range", ...), or NULL. */
json_object *etcd_txn_response(json_object *txn, size_t i, const char *kind);

/* An error answer's words and gRPC code ({"error": ..., "code": N}, or a
 * stream's {"grpc_code": N, "message": ...}). */
int etcd_error_parse(json_object *o, const char **msg, int *code);

/* The whole text as one JSON object (nothing after it but blanks). */
json_object *etcd_json_parse(const char *s, size_t len);
