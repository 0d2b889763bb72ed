/* test_postgres.c - PostgreSQL's names and comments, the pure parts of
 * src/postgres/: what the server locks for a NAME (names.h) and the
 * holder's comment its statements carry (comment.h) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comment.h"
#include "names.h"
#include "tap.h"

#define SHARED (-1)	/* engine.h's LOCK_SHARED */

/* The arguments of the call "fn(a, b...)", split at the commas outside
 * parentheses: how many, each copied into args[i]. */
static int call_args(const char *call, const char *fn, char args[][160], int max)
{
	const char *p = call + strlen(fn);
	int depth = 0, n = 0;
	size_t o = 0;

	if (strncmp(call, fn, strlen(fn)) != 0 || *p != '(' || call[strlen(call) - 1] != ')')
		return -1;
	for (p++; *p; p++) {
		if (*p == '(')
			depth++;
		if ((*p == ')' && depth == 0) || (*p == ',' && depth == 0)) {
			if (n == max || o == 0)
				return -1;
			args[n][o] = '\0';
			n++;
			o = 0;
			if (*p == ')')
				return p[1] == '\0' ? n : -1;
			while (p[1] == ' ')
				p++;
			continue;
		}
		if (*p == ')')
			depth--;
		if (o + 1 < 160)
			args[n][o++] = *p;
	}
	return -1;
}

/* The lock's key: one bigint, the name's text hashed with seed 0, in the
 * plain and the shared functions alike. */
static void test_key(void)
{
	char call[64], args[4][160];
	int n = pg_call(call, sizeof call, "pg_try_advisory_lock", false, 0);

	ok(n > 0 && (size_t)n < sizeof call &&
	   call_args(call, "pg_try_advisory_lock", args, 4) == 1 &&
	   strcmp(args[0], PG_KEY_OF) == 0 && strcmp(PG_KEY_OF, "hashtextextended($1, 0)") == 0,
	   "the lock is one bigint, hashtextextended($1, 0): %s", call);
	n = pg_call(call, sizeof call, "pg_advisory_unlock", true, 0);
	ok(n > 0 && (size_t)n < sizeof call &&
	   call_args(call, "pg_advisory_unlock_shared", args, 4) == 1 &&
	   strcmp(args[0], PG_KEY_OF) == 0, "shared: the same key: %s", call);
	ok(strcmp(PG_FENCE_KEY, PG_KEY_OF) == 0, "the fence row's key is the lock's");
	/* pg_locks shows a one-bigint lock as its halves, objsubid 1 */
	ok(strstr(PG_LOCKS_OF_KEY, "l.objsubid = 1 ") &&
	   strstr(PG_LOCKS_OF_KEY, "l.classid = ((" PG_KEY_OF " >> 32) & 4294967295)::oid") &&
	   strstr(PG_LOCKS_OF_KEY, "l.objid = (" PG_KEY_OF " & 4294967295)::oid") &&
	   strstr(PG_LOCKS_OF_KEY, "locktype = 'advisory'"),
	   "pg_locks: the key's rows are its halves with objsubid 1");
}

/* --limit's slots: two ints each (objsubid 2 in pg_locks: never a name's
 * one-bigint key, whatever the hashes), seeded with the slot (never 0,
 * the key's seed), each slot its own; given back by the same arguments;
 * each call fits the buffer lock.c writes it in (160 bytes). */
static void test_slots(void)
{
	char call[160], unlock[160], args[4][160], uargs[4][160], want[2][160];
	int two = 0, seeded = 0, same = 0, fits = 0;

	for (long i = 1; i <= PG_LIMIT_MAX; i++) {
		int n = pg_call(call, sizeof call, "pg_try_advisory_lock", false, i);
		int m = pg_call(unlock, sizeof unlock, "pg_advisory_unlock", false, i);

		fits += n > 0 && (size_t)n < sizeof call && m > 0 && (size_t)m < sizeof unlock;
		snprintf(want[0], sizeof want[0], "(hashtextextended($1, %ld) >> 32)::int", i);
		snprintf(want[1], sizeof want[1], "(hashtextextended($1, %ld) << 32 >> 32)::int", i);
		if (call_args(call, "pg_try_advisory_lock", args, 4) == 2)
			two++;
		else
			diag("slot %ld: %s", i, call);
		seeded += strcmp(args[0], want[0]) == 0 && strcmp(args[1], want[1]) == 0;
		same += call_args(unlock, "pg_advisory_unlock", uargs, 4) == 2 &&
			strcmp(args[0], uargs[0]) == 0 && strcmp(args[1], uargs[1]) == 0;
	}
	ok(two == PG_LIMIT_MAX, "each of the %d slots is a two-int lock (%d)", PG_LIMIT_MAX, two);
	ok(seeded == PG_LIMIT_MAX, "slot i hashes the name with seed i, both halves (%d)", seeded);
	ok(same == PG_LIMIT_MAX, "each slot is given back by the arguments that took it (%d)", same);
	ok(fits == PG_LIMIT_MAX, "each slot's call fits lock.c's buffers (%d)", fits);
	pg_call(call, sizeof call, "pg_try_advisory_lock", false, 0);
	ok(call_args(call, "pg_try_advisory_lock", args, 4) == 1, "slot 0 is the lock's key");
}

static void test_key_text(void)
{
	char *k = pg_key_text("dlock:", "job/é");
	char *e = pg_key_text("", "x");

	ok(k && strcmp(k, "dlock:job/é") == 0, "the key text is PREFIX NAME (%s)", k ? k : "NULL");
	ok(e && strcmp(e, "x") == 0, "no prefix: the name");
	free(k);
	free(e);
}

static void name_ok(const char *name, long bad_at)
{
	char why[200] = "", at[32];
	int r = pg_name_check(name, why, sizeof why);

	snprintf(at, sizeof at, " at %ld)", bad_at);
	if (bad_at < 0)
		ok(r == 0, "UTF-8 name %zu bytes taken", strlen(name));
	else
		ok(r < 0 && strstr(why, at) && strstr(why, "not UTF-8"),
		   "name refused at byte %ld: %s", bad_at, why);
}

static void test_names_utf8(void)
{
	name_ok("", -1);
	name_ok("plain-ascii:key", -1);
	name_ok("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92", -1);	/* é € a 4-byte one */
	name_ok("\xf4\x8f\xbf\xbf", -1);	/* U+10FFFF */
	name_ok("ab\xff", 2);
	name_ok("\xc0\x80", 0);		/* overlong NUL */
	name_ok("x\xe0\x80\xaf", 1);	/* overlong '/' */
	name_ok("\xed\xa0\x80", 0);	/* a surrogate */
	name_ok("\xf4\x90\x80\x80", 0);	/* past U+10FFFF */
	name_ok("ok\xe2\x82", 2);	/* cut short */
	name_ok("latin1 caf\xe9", 10);
}

/* Every field written comes back as it was, whatever its bytes, and
 * nothing in them ends the comment or starts another field. */
static void test_comment(void)
{
	struct pg_comment_fields f = {
		.mode = "3", .token = "0123abcd", .fence = "1700000000000001", .slot = 2,
		.key = "dlock:a b/*x*/ 100% caf\xc3\xa9",
		.info = "host\t42\tuser\t1700000000000\tsh -c 'x */ fence=9 slot=7'",
	};
	char *c = pg_comment(&f), *stmt = NULL, out[512];
	const char *in;

	ok(c != NULL, "comment: %s", c ? c : "NULL");
	if (!c)
		return;
	ok(strncmp(c, "/* dlock mode=3 token=0123abcd fence=1700000000000001 slot=2 key=", 65) == 0 &&
	   strstr(c, "*/") == c + strlen(c) - 2, "the short fields first; one end, the last");
	if (asprintf(&stmt, "SELECT pg_backend_pid() = $1::int %s", c) < 0)
		stmt = NULL;
	in = pg_comment_in(stmt);
	ok(in && strcmp(in, c) == 0, "found in the statement pg_stat_activity shows");
	pg_comment_field(in, "key", out, sizeof out);
	ok(strcmp(out, f.key) == 0, "key back: %s", out);
	pg_comment_field(in, "holder", out, sizeof out);
	ok(strcmp(out, f.info) == 0, "holder info back: %s", out);
	pg_comment_field(in, "fence", out, sizeof out);
	ok(strcmp(out, f.fence) == 0, "fence back, not the holder's \"fence=9\": %s", out);
	pg_comment_field(in, "slot", out, sizeof out);
	ok(strcmp(out, "2") == 0, "slot back: %s", out);
	pg_comment_field(in, "token", out, sizeof out);
	ok(strcmp(out, f.token) == 0, "token back: %s", out);
	pg_mode_in(stmt, out, sizeof out);
	ok(strcmp(out, "3") == 0, "its mode: %s", out);
	free(stmt);
	free(c);

	f.fence = "";
	f.slot = 0;
	f.mode = "x";
	c = pg_comment(&f);
	pg_comment_field(c, "fence", out, sizeof out);
	ok(c && !strstr(c, " fence=") && !strstr(c, " slot=") && out[0] == '\0',
	   "no fence, no slot: no such fields");
	free(c);
	pg_comment_field(NULL, "token", out, sizeof out);
	ok(out[0] == '\0' && !pg_comment_in("SELECT 1") && !pg_comment_in(NULL),
	   "another client's statement: no comment");
	pg_comment_field("/* dlock mode=x token=abcdef */", "token", out, 4);
	ok(strcmp(out, "abc") == 0, "a field cut at the buffer");
}

static void test_modes(void)
{
	char w[48], sql[64];

	pg_mode_word(0, w, sizeof w);
	ok(strcmp(w, "x") == 0, "exclusive: x");
	pg_mode_word(SHARED, w, sizeof w);
	ok(strcmp(w, "s") == 0, "shared: s");
	pg_mode_word(7, w, sizeof w);
	ok(strcmp(w, "7") == 0, "--limit 7: 7");
	snprintf(sql, sizeof sql, PG_TRY_COMMENT " SELECT 1", "s");
	pg_mode_in(sql, w, sizeof w);
	ok(strcmp(w, "s") == 0, "a try statement says its mode: %s", sql);
	pg_mode_in("SELECT pg_advisory_lock(1) /* mine */", w, sizeof w);
	ok(w[0] == '\0', "another client's: no mode");
	pg_mode_words("s", w, sizeof w);
	ok(strcmp(w, "shared") == 0, "s reads shared");
	pg_mode_words("4", w, sizeof w);
	ok(strcmp(w, "with --limit 4") == 0, "4 reads with --limit 4");
}

static void unescapes(const char *s, size_t len, const char *want)
{
	char out[64];

	pg_unescape(s, strlen(s), out, len);
	ok(strcmp(out, want) == 0, "'%s' unescaped (%zu): '%s' (got '%s')", s, len, want, out);
}

static void test_unescape(void)
{
	unescapes("a%20b%2Fc%2f", 64, "a b/c/");
	unescapes("100%", 64, "100%");
	unescapes("%4", 64, "%4");
	unescapes("%zz%41", 64, "%zzA");
	unescapes("dlock_%70ooling", 64, "dlock_pooling");
	unescapes("abcdef", 4, "abc");
}

int main(void)
{
	test_key();
	test_slots();
	test_key_text();
	test_names_utf8();
	test_comment();
	test_modes();
	test_unescape();
	return done_testing();
}
