/* show.h - what status and history print: holder info read back, times
 * as people read them, aligned tables, JSON of any bytes */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A holder info as the scripts keep it: "host\tpid\tuser\tsince_ms\t
 * command[\tfence[\tfinished_ms]]". Strings point into a copy owned by
 * the struct. */
struct show_info {
	char *buf;
	const char *host, *user, *command;
	size_t command_len;
	long long pid;		/* -1: none */
	int64_t since_ms;	/* wall clock; -1: none */
	long long fence;	/* -1: none */
	int64_t finished_ms;	/* wall clock: the command ended, and --min-hold
				 * keeps the lock; -1: none */
};

/* Returns 0, or -1 when s is no holder info (fields missing, a number
 * that is not one): hi is empty then. */
int show_info_parse(const char *s, size_t len, struct show_info *hi);
void show_info_free(struct show_info *hi);

/* 850 -> "0.8s", 192000 -> "3m12s", 7500000 -> "2h5m", 3 days -> "3d0h". */
void show_duration(int64_t ms, char *out, size_t len);
/* "3m12s ago"; "0s ago" for a time ahead of now (clocks differ). */
void show_ago(int64_t then_ms, int64_t now_ms, char *out, size_t len);

/* A holder as people read it: "ann@db2 pid 4711 (./nightly.sh)" from its
 * holder info (", command finished" once --min-hold keeps it), else
 * "another client, value 'TOKEN'". */
void show_who(const char *token, size_t token_len, const char *info,
	      size_t info_len, char *out, size_t len);
/* A lease's time left: "3m12s", or "no TTL" for one that never expires
 * (ms < 0). */
void show_ttl(int64_t ms, char *out, size_t len);

/* s as a terminal may show it: a control byte, or a byte that is not part
 * of valid UTF-8, becomes '?'; at most outlen - 1 bytes. */
void show_text(const char *s, size_t len, char *out, size_t outlen);

/* The offset of the first byte of [s, s+len) that is not well-formed
 * UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
 * U+10FFFF), or -1 when all of it is. */
long show_not_utf8(const char *s, size_t len);

/* A table of text cells, printed with its columns aligned (by characters,
 * not bytes); the last column is not padded. */
struct table {
	size_t n_cols, n_rows, cap;
	char **cells;		/* n_rows * n_cols, each malloc'd */
	const char *indent;
};

void table_init(struct table *t, size_t n_cols, const char *indent);
/* Copies n_cols cells (NULL: "-"). Returns -1 when out of memory. */
int table_add(struct table *t, const char *const *cells);
void table_print(const struct table *t, FILE *f);
void table_free(struct table *t);

/* One JSON document written as it goes. Strings are any bytes: valid
 * UTF-8 is copied, '"', '\\' and control characters are escaped, and each
 * byte of an invalid sequence becomes U+FFFD, so that the output is
 * always valid UTF-8 and valid JSON. */
struct json {
	FILE *f;
	int depth;
	bool first[32];		/* nothing written yet at that depth */
	bool after_key;
};

void json_init(struct json *j, FILE *f);
void json_open(struct json *j, char bracket);	/* '{' or '[' */
void json_close(struct json *j, char bracket);	/* '}' or ']' */
void json_key(struct json *j, const char *key);
void json_str(struct json *j, const char *s, size_t len);
void json_cstr(struct json *j, const char *s);	/* NULL: null */
void json_int(struct json *j, long long v);
void json_int_or_null(struct json *j, long long v);	/* < 0: null */
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
/* A key and its value, in the object open in j; json_open_field opens
 * the value, an object or an array. */
void json_open_field(struct json *j, const char *key, char bracket);
void json_field_str(struct json *j, const char *key, const char *s, size_t len);
void json_field_cstr(struct json *j, const char *key, const char *s);
void json_field_int(struct json *j, const char *key, long long v);
void json_field_int_or_null(struct json *j, const char *key, long long v);
void json_field_bool(struct json *j, const char *key, bool v);
/* A holder info's host, pid, user, command and since_ms, as keys of the
 * object open in j: each null where info is NULL or no holder info. */
void json_info(struct json *j, const char *info, size_t len);
