/* test_mysql_names.c - where a lock's NAME becomes what a MySQL or
 * MariaDB server knows it by (src/mysql/names.h): the GET_LOCK name and
 * its '#' rule for long names, the row key of dlock_locks and
 * dlock_history, the SQL literals; and that no two names dlock tells apart
 * meet in one lock, one row or one waiter's pattern. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mysql/names.h"
#include "tap.h"

/* Not SHA-256: every byte is 16 * the prefix's length + the key's. */
static int fake(const void *a, size_t alen, const void *b, size_t blen,
		unsigned char *md)
{
	memset(md, (int)(alen * 16 + blen), 32);
	(void)a;
	(void)b;
	return 0;
}

/* A digest that fails (libcrypto out of memory, a provider missing) */
static int failing(const void *a, size_t alen, const void *b, size_t blen,
		   unsigned char *md)
{
	memset(md, 0, 32);
	return -1;
}

/* Not SHA-256 either, but of the bytes, a then b as one string (as
 * SHA-256 of the two is): FNV-1a, four times with four seeds. */
static int mixing(const void *a, size_t alen, const void *b, size_t blen,
		  unsigned char *md)
{
	for (int part = 0; part < 4; part++) {
		uint64_t h = 14695981039346656037ULL + (uint64_t)part;

		for (size_t i = 0; i < alen + blen; i++) {
			h ^= i < alen ? ((const unsigned char *)a)[i] :
			     ((const unsigned char *)b)[i - alen];
			h *= 1099511628211ULL;
		}
		memcpy(md + 8 * part, &h, 8);
	}
	return 0;
}

static void name_is(const char *prefix, const char *key, const char *want)
{
	char name[MY_NAME_MAX + 1];
	int r = my_lock_name(prefix, key, fake, name);

	ok(r == 0 && strcmp(name, want) == 0, "name of \"%s\" + \"%s\": \"%s\" (got \"%s\")",
	   prefix, key, want, name);
}

/* A hex literal X'...' back to its bytes (out: NUL-terminated) */
static void unhex(const char *lit, char *out)
{
	size_t n = 0;

	if (strcmp(lit, "''") != 0)
		for (const char *h = lit + 2; h[0] != '\''; h += 2) {
			unsigned v;

			sscanf(h, "%2x", &v);
			out[n++] = (char)v;
		}
	out[n] = '\0';
}

static void the_rule(void)
{
	char key[100], hashed[MY_NAME_MAX + 1], crafted[MY_NAME_MAX + 1];

	name_is("dlock:", "nightly", "dlock:nightly");
	name_is("", "", "");
	memset(key, 'a', 58);
	key[58] = '\0';
	name_is("dlock:", key, "dlock:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	key[58] = 'a';
	key[59] = '\0';	/* 65 bytes: hashed, first 31 kept, then '#' */
	name_is("dlock:", key, "dlock:aaaaaaaaaaaaaaaaaaaaaaaaa#" "9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b");
	/* not printable: hashed even when short, each such byte as '_' */
	name_is("dlock:", "\xc3\xa9t\xc3\xa9", "dlock:__t__#" "65656565656565656565656565656565");
	name_is("dlock:", "tab\there", "dlock:tab_here#" "68686868686868686868686868686868");
	name_is("p:", "'x\\", "p:'x\\");
	/* '#' marks hashed names: a key with one is hashed, so that no key
	 * is another's hashed name (a long key's, here) */
	name_is("dlock:", "a#b", "dlock:a_b#" "63636363636363636363636363636363");
	memset(key, 'x', 70);
	key[70] = '\0';
	my_lock_name("dlock:", key, fake, hashed);
	/* the hashed name less the prefix, as a key of its own */
	my_lock_name("dlock:", hashed + 6, fake, crafted);
	ok(strlen(hashed) == 64 && strcmp(crafted, hashed) != 0,
	   "a key equal to a long key's hashed name is another lock (%s, %s)",
	   hashed, crafted);
	ok(my_lock_name("dlock:", key, failing, hashed) == -1 && hashed[0] == '\0',
	   "a failed SHA-256 is an error, never a name");
	ok(my_lock_name("dlock:", "short", failing, hashed) == 0 &&
	   strcmp(hashed, "dlock:short") == 0, "a plain name needs no digest");
}

/* The keys the collision checks name: plain, long, with the mark, not
 * ASCII, alike but for case or their last byte, each other's hashed
 * names. n at most 64. */
static size_t keys_of(char keys[][200])
{
	size_t n = 0;
	char hashed[MY_NAME_MAX + 1];

	snprintf(keys[n++], 200, "nightly");
	snprintf(keys[n++], 200, "nightly ");
	snprintf(keys[n++], 200, "nightly#");
	snprintf(keys[n++], 200, "nightly_");
	snprintf(keys[n++], 200, "a#b");
	snprintf(keys[n++], 200, "a_b");
	snprintf(keys[n++], 200, "\xc3\xa9t\xc3\xa9");
	snprintf(keys[n++], 200, "_t_");
	snprintf(keys[n++], 200, "__t__");
	for (int len = 56; len <= 60; len++) {	/* 62 to 66 bytes with dlock: */
		memset(keys[n], 'k', (size_t)len);
		keys[n++][len] = '\0';
	}
	/* long, alike in their first 31 bytes and their length */
	for (char last = 'a'; last <= 'e'; last++)
		snprintf(keys[n++], 200, "%.100s%c", "0123456789012345678901234567890123456789012345678901234567890123456789", last);
	/* long, alike but for case: distinct for MySQL too (the hash) */
	snprintf(keys[n], 200, "%070d", 0);
	memset(keys[n], 'Q', 40);
	snprintf(keys[n + 1], 200, "%s", keys[n]);
	memset(keys[n + 1], 'q', 40);
	n += 2;
	/* a key that is another's hashed name, less the prefix */
	my_lock_name("dlock:", keys[n - 1], mixing, hashed);
	snprintf(keys[n], 200, "%s", hashed + 6);
	n++;
	return n;
}

static void no_collisions(void)
{
	char keys[64][200];
	size_t n = keys_of(keys);
	struct my_names *a = calloc(n, sizeof *a);
	int names_ok = 1, rows_ok = 1, full_ok = 1;

	for (size_t i = 0; i < n; i++)
		my_names_make(&a[i], "dlock:", keys[i], mixing);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			char li[MY_NAME_MAX + 1], lj[MY_NAME_MAX + 1];

			if (strcmp(a[i].name, a[j].name) == 0) {
				diag("one GET_LOCK name: \"%s\" and \"%s\"", keys[i], keys[j]);
				names_ok = 0;
			}
			/* MySQL compares GET_LOCK names without case: keys
			 * that differ by case alone are one lock there, and
			 * one row; no others */
			my_lower(a[i].name, li);
			my_lower(a[j].name, lj);
			if (strcmp(li, lj) == 0 && strcasecmp(keys[i], keys[j]) != 0) {
				diag("one MySQL lock: \"%s\" and \"%s\"", keys[i], keys[j]);
				rows_ok = 0;
			}
			if (strcmp(a[i].full_hex, a[j].full_hex) == 0) {
				diag("one listed name: \"%s\" and \"%s\"", keys[i], keys[j]);
				full_ok = 0;
			}
		}
	ok(names_ok, "%zu keys, as many GET_LOCK names", n);
	ok(rows_ok, "%zu keys, as many locks where names compare without case", n);
	ok(full_ok, "%zu keys, as many names as status lists them", n);
	free(a);
}

/* The row key: the name on MariaDB, in lower case on MySQL (one row for
 * the spellings that are one lock there). */
static void row_keys(void)
{
	struct my_names upper, lower;
	char back[MY_NAME_MAX + 1];

	my_names_make(&upper, "dlock:", "NightLy", mixing);
	my_names_make(&lower, "dlock:", "nightly", mixing);
	ok(upper.rowkey[0] == '\0', "no row key before the server is known");
	my_names_rowkey(&upper, true);
	my_names_rowkey(&lower, true);
	unhex(upper.rowkey, back);
	ok(strcmp(back, "dlock:NightLy") == 0 && strcmp(upper.rowkey, lower.rowkey) != 0,
	   "MariaDB: the row key is the name as given (%s)", back);
	my_names_rowkey(&upper, false);
	my_names_rowkey(&lower, false);
	unhex(upper.rowkey, back);
	ok(strcmp(back, "dlock:nightly") == 0 && strcmp(upper.rowkey, lower.rowkey) == 0,
	   "MySQL: one row key for both spellings (%s)", back);
	unhex(upper.lit, back);
	ok(strcmp(back, "dlock:NightLy") == 0, "the GET_LOCK literal keeps the case (%s)", back);
	unhex(upper.full_hex, back);
	ok(strcmp(back, "dlock:NightLy") == 0, "the listed name keeps the case (%s)", back);
}

/* The name as status lists it: the name as given, cut to 1024 bytes. */
static void full_names(void)
{
	static char key[1200], back[1200];
	struct my_names n;

	memset(key, 'z', 1100);
	key[1100] = '\0';
	my_names_make(&n, "dlock:", key, mixing);
	unhex(n.full_hex, back);
	ok(strlen(back) == 1024 && strncmp(back, "dlock:zzz", 9) == 0,
	   "a name of 1106 bytes is listed by its first 1024 (%zu)", strlen(back));
	ok(my_names_make(&n, "dlock:", key, failing) == -1,
	   "a failed SHA-256: no names");
}

/* A waiter of one lock is never counted for another: the pattern ends
 * where the literal does. */
static void waiter_patterns(void)
{
	struct my_names a, ab;
	char pat[MY_PATTERN_LIT], back[MY_PATTERN_LIT], info[300];

	my_names_make(&a, "dlock:", "a", mixing);
	my_names_make(&ab, "dlock:", "ab", mixing);
	my_waiter_pattern(&a, pat);
	unhex(pat, back);
	ok(strcmp(back, "GET_LOCK(X'646c6f636b3a61',") == 0, "the waiter pattern (%s)", back);
	snprintf(info, sizeof info, "SELECT GET_LOCK(%s, 60.000)", ab.lit);
	ok(!strstr(info, back), "a waiter of \"ab\" is not one of \"a\"");
	snprintf(info, sizeof info, "SELECT GET_LOCK(%s, 60.000)", a.lit);
	ok(strstr(info, back) != NULL, "a waiter of \"a\" is");
}

static void literals(void)
{
	char lit[200], tok[MY_TOKEN_LIT + 10], long_tok[LOCK_TOKEN_MAX + 10], *sql;

	my_lower("dlock:NightLy#AB", lit);
	ok(strcmp(lit, "dlock:nightly#ab") == 0, "my_lower (%s)", lit);
	my_hex_literal("\x01\xff", 2, lit);
	ok(strcmp(lit, "X'01ff'") == 0, "my_hex_literal (%s)", lit);
	my_hex_literal("", 0, lit);
	ok(strcmp(lit, "''") == 0, "my_hex_literal of nothing (%s)", lit);
	memset(long_tok, 'a', sizeof long_tok - 1);
	long_tok[sizeof long_tok - 1] = '\0';
	my_token_sql(long_tok, tok);
	ok(strlen(tok) == 2 * LOCK_TOKEN_MAX + 3, "a token: its first %d bytes", LOCK_TOKEN_MAX);
	sql = my_info_sql("h\t42\tu\t1700000000000\tcmd");
	ok(sql && strcmp(sql, "CONCAT(X'6809343209750"
			 "9', " MY_NOW_MS ", X'09636d64')") == 0,
	   "holder info: its since is the server's clock (%s)", sql);
	free(sql);
	sql = my_info_sql("no tabs");
	ok(sql && strcmp(sql, "X'6e6f2074616273'") == 0, "holder info without a since (%s)", sql);
	free(sql);
}

int main(void)
{
	the_rule();
	no_collisions();
	row_keys();
	full_names();
	waiter_patterns();
	literals();
	return done_testing();
}
