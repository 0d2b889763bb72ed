/* names.c - a lock's names as the server knows them, and the SQL literals
 * dlock writes in (names.h). Pure: no I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "names.h"

static const char hex[] = "0123456789abcdef";

/* A byte a plain name may have: printable ASCII but the mark */
static bool plain_byte(unsigned char c)
{
	return c >= 0x20 && c <= 0x7e && c != MY_NAME_MARK;
}

int my_lock_name(const char *prefix, const char *key, my_sha256_fn *sha256,
		 char *out)
{
	size_t plen = strlen(prefix), klen = strlen(key), len = plen + klen, n;
	unsigned char md[32];
	bool plain = len <= MY_NAME_MAX;

	for (size_t i = 0; plain && i < len; i++)
		plain = plain_byte((unsigned char)(i < plen ? prefix[i] : key[i - plen]));
	if (plain) {
		memcpy(out, prefix, plen);
		memcpy(out + plen, key, klen + 1);
		return 0;
	}
	out[0] = '\0';
	if (sha256(prefix, plen, key, klen, md) < 0)
		return -1;
	n = len < MY_NAME_MAX - 33 ? len : MY_NAME_MAX - 33;
	for (size_t i = 0; i < n; i++) {
		char c = i < plen ? prefix[i] : key[i - plen];

		out[i] = plain_byte((unsigned char)c) ? c : '_';
	}
	out[n] = MY_NAME_MARK;
	for (size_t i = 0; i < 16; i++) {
		out[n + 1 + 2 * i] = hex[md[i] >> 4];
		out[n + 2 + 2 * i] = hex[md[i] & 15];
	}
	out[n + 33] = '\0';
	return 0;
}

int my_names_make(struct my_names *n, const char *prefix, const char *key,
		  my_sha256_fn *sha256)
{
	size_t plen = strlen(prefix), klen = strlen(key);
	char full[1024];

	if (my_lock_name(prefix, key, sha256, n->name) < 0)
		return -1;
	my_hex_literal(n->name, strlen(n->name), n->lit);
	n->rowkey[0] = '\0';
	/* for status without KEY: the name as given, cut to the column's
	 * 1024 bytes (a longer one is listed by its first 1024) */
	if (plen > sizeof full)
		plen = sizeof full;
	if (klen > sizeof full - plen)
		klen = sizeof full - plen;
	memcpy(full, prefix, plen);
	memcpy(full + plen, key, klen);
	my_hex_literal(full, plen + klen, n->full_hex);
	return 0;
}

void my_names_rowkey(struct my_names *n, bool mariadb)
{
	char lower[MY_NAME_MAX + 1];

	if (mariadb) {
		my_hex_literal(n->name, strlen(n->name), n->rowkey);
		return;
	}
	my_lower(n->name, lower);
	my_hex_literal(lower, strlen(lower), n->rowkey);
}

void my_waiter_pattern(const struct my_names *n, char *out)
{
	char pattern[2 * MY_NAME_MAX + 20];

	snprintf(pattern, sizeof pattern, "GET_LOCK(%s,", n->lit);
	my_hex_literal(pattern, strlen(pattern), out);
}

void my_lower(const char *s, char *out)
{
	for (; *s; s++)
		*out++ = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
	*out = '\0';
}

void my_hex_literal(const void *data, size_t len, char *out)
{
	const unsigned char *b = data;
	size_t o = 0;

	if (len == 0) {
		strcpy(out, "''");
		return;
	}
	out[o++] = 'X';
	out[o++] = '\'';
	for (size_t i = 0; i < len; i++) {
		out[o++] = hex[b[i] >> 4];
		out[o++] = hex[b[i] & 15];
	}
	out[o++] = '\'';
	out[o] = '\0';
}

char *my_hex_dup(const char *s)
{
	size_t len = strlen(s);
	char *out = malloc(2 * len + 4);

	if (out)
		my_hex_literal(s, len, out);
	return out;
}

void my_token_sql(const char *token, char *out)
{
	size_t len = strnlen(token, LOCK_TOKEN_MAX);

	my_hex_literal(token, len, out);
}

bool my_info_whole(const char *holder, size_t len)
{
	size_t tabs = 0;

	for (size_t i = 0; i < len; i++)
		tabs += holder[i] == '\t';
	return tabs >= 5;	/* host pid user since command fence[ finished] */
}

char *my_info_sql(const char *info)
{
	const char *since = info, *after;
	char *head, *tail, *out = NULL;
	size_t hlen;

	for (int tabs = 0; tabs < 3 && since; tabs++)
		if ((since = strchr(since, '\t')))
			since++;
	after = since ? strchr(since, '\t') : NULL;
	if (!after)
		return my_hex_dup(info);
	hlen = (size_t)(since - info);
	head = malloc(2 * hlen + 4);
	tail = malloc(2 * strlen(after) + 4);
	if (head && tail) {
		my_hex_literal(info, hlen, head);
		my_hex_literal(after, strlen(after), tail);
		if (asprintf(&out, "CONCAT(%s, " MY_NOW_MS ", %s)", head, tail) < 0)
			out = NULL;
	}
	free(head);
	free(tail);
	return out;
}
