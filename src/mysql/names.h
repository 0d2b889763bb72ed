/* names.h - where a lock's NAME becomes what the server knows it by (pure:
 * no I/O, no client library; unit-tested and fuzzed): its GET_LOCK name,
 * hashed with its '#' mark when it must be; the key of its rows in
 * dlock_locks and dlock_history; and the SQL literals dlock writes names,
 * tokens and holder infos in. Every name and token dlock sends is a hex
 * literal, X'...', so that no sql_mode (NO_BACKSLASH_ESCAPES) and no
 * character set changes it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include "engine.h"

/* The longest GET_LOCK name MySQL takes (MariaDB takes 192 bytes). */
#define MY_NAME_MAX 64
/* What marks a hashed name: a plain name never has it. */
#define MY_NAME_MARK '#'
/* Longest SQL literal of a lock name: X'...' of 1024 bytes and more */
#define MY_HEX_MAX (2 * 1024 + 4)
/* The SQL literal of a token (my_token_sql()) */
#define MY_TOKEN_LIT (2 * LOCK_TOKEN_MAX + 4)

/* The server's clock in ms, for history times and holders' since */
#define MY_NOW_MS "CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)"
/* The server's clock in microseconds: the fence's floor (see lock.c). */
#define MY_NOW_US "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS UNSIGNED)"

/* A SHA-256 of a then b (32 bytes out): 0, or -1 when it failed. */
typedef int my_sha256_fn(const void *a, size_t alen, const void *b,
			 size_t blen, unsigned char *md);

/* A lock's names, as SQL takes them. */
struct my_names {
	char name[MY_NAME_MAX + 1];		/* GET_LOCK's */
	char lit[2 * MY_NAME_MAX + 4];		/* name as a hex literal */
	/* dlock_locks' key for it, a hex literal: MySQL compares lock names
	 * without case (MariaDB 10.11 with), so there the row is the
	 * lower-case name's, one counter for every spelling that is one
	 * lock (my_names_rowkey(), once the server is known); "" until */
	char rowkey[2 * MY_NAME_MAX + 4];
	/* prefix + key as given, cut to dlock_locks.lock_name's 1024 bytes,
	 * as a hex literal: what status without KEY lists */
	char full_hex[MY_HEX_MAX];
};

/* The GET_LOCK name of prefix + key: itself when it is at most 64 bytes of
 * printable ASCII (0x20-0x7e) other than '#'; otherwise its first 31 bytes
 * (all of it when shorter), each '#' or byte that is not printable ASCII
 * as '_', then '#', then the first 32 hex digits (lower case) of the
 * SHA-256 of the whole name. So a plain name has no '#' and a hashed one
 * always has: no key takes another key's hashed name. out has room for
 * MY_NAME_MAX + 1 bytes. Returns 0, or -1 (out empty) when the name needs
 * the hash and sha256 failed: never a name from a digest not computed. */
int my_lock_name(const char *prefix, const char *key, my_sha256_fn *sha256,
		 char *out);
/* Fills n for prefix + key, but its row key. Returns 0, or -1 when the
 * SHA-256 a long name needs failed (my_lock_name()). */
int my_names_make(struct my_names *n, const char *prefix, const char *key,
		  my_sha256_fn *sha256);
/* n's row key on a MariaDB server (the name as it is) or a MySQL one (in
 * lower case). */
void my_names_rowkey(struct my_names *n, bool mariadb);
/* The literal that finds n's waiters in PROCESSLIST.INFO, where dlock's
 * blocking GET_LOCK shows as it wrote it: "GET_LOCK(" n->lit ",", as a
 * hex literal; out has room for MY_PATTERN_LIT bytes. */
#define MY_PATTERN_LIT (4 * MY_NAME_MAX + 50)
void my_waiter_pattern(const struct my_names *n, char *out);

/* s in ASCII lower case (MySQL's lock names compare without case): out
 * has room for strlen(s) + 1 bytes. */
void my_lower(const char *s, char *out);
/* Bytes as an SQL hex literal, X'...' ("''" for none): out needs
 * 2 * len + 4 bytes. */
void my_hex_literal(const void *data, size_t len, char *out);
/* The string s as a hex literal, allocated (the caller frees it); NULL:
 * out of memory. */
char *my_hex_dup(const char *s);
/* A token (at most LOCK_TOKEN_MAX bytes of it) as a hex literal; out has
 * room for MY_TOKEN_LIT bytes. */
void my_token_sql(const char *token, char *out);
/* Holder info (show.h) as SQL: CONCAT() of info with its since replaced
 * by the server's clock, or its hex literal when it has no since. NULL:
 * out of memory; else the caller frees it. */
char *my_info_sql(const char *info);
/* Whether a holder column holds the info whole, its fence and finished
 * time after it (show.h): written once the job ended, while dlock keeps
 * the lock for --min-hold. Else the fence column is to be added. */
bool my_info_whole(const char *holder, size_t len);
