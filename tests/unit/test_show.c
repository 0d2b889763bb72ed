/* test_show.c - holder info, durations, terminal text and JSON strings
 * (src/show.h) */
#include <stdlib.h>
#include <string.h>

#include "show.h"
#include "tap.h"

static void json_is(const char *in, size_t len, const char *want)
{
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	struct json j;

	json_init(&j, f);
	json_str(&j, in, len);
	fclose(f);
	ok(strcmp(out, want) == 0, "JSON of %zu bytes is %s (got %s)", len, want, out);
	free(out);
}

static void text_is(const char *in, size_t len, const char *want)
{
	char out[64];

	show_text(in, len, out, sizeof out);
	ok(strcmp(out, want) == 0, "show_text -> '%s' (got '%s')", want, out);
}

static void duration_is(int64_t ms, const char *want)
{
	char out[32];

	show_duration(ms, out, sizeof out);
	ok(strcmp(out, want) == 0, "show_duration(%lld) = %s (got %s)", (long long)ms,
	   want, out);
}

static void info_ok(const char *s, const char *host, long long pid, const char *user,
		    long long since, const char *cmd, long long fence)
{
	struct show_info hi;
	int r = show_info_parse(s, strlen(s), &hi);

	ok(r == 0 && strcmp(hi.host, host) == 0 && hi.pid == pid &&
	   strcmp(hi.user, user) == 0 && hi.since_ms == since &&
	   hi.command_len == strlen(cmd) && memcmp(hi.command, cmd, hi.command_len) == 0 &&
	   hi.fence == fence, "holder info '%s'", s);
	show_info_free(&hi);
}

static void finished_is(const char *s, long long want)
{
	struct show_info hi;
	int r = show_info_parse(s, strlen(s), &hi);

	ok(r == 0 && hi.finished_ms == want, "holder info '%s' finished %lld (got %lld)",
	   s, want, (long long)hi.finished_ms);
	show_info_free(&hi);
}

static void info_bad(const char *s, size_t len)
{
	struct show_info hi;

	ok(show_info_parse(s, len, &hi) == -1 && hi.buf == NULL,
	   "no holder info: '%.*s'", (int)len, s);
}

int main(void)
{
	char nul[] = "a\0b";

	json_is("plain", 5, "\"plain\"");
	json_is("q\"b\\", 4, "\"q\\\"b\\\\\"");
	json_is("t\tn\nc\x01\x1f\x7f", 8, "\"t\\tn\\nc\\u0001\\u001f\\u007f\"");
	json_is(nul, 3, "\"a\\u0000b\"");
	json_is("\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x94\x92", 11,
		"\"\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x94\x92\"");	/* é ✓ 🔒 kept */
	json_is("\xff\xfe", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");	/* U+FFFD each */
	json_is("\xc3", 1, "\"\xef\xbf\xbd\"");			/* cut short */
	json_is("\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");	/* overlong '/' */
	json_is("\xed\xa0\x80", 3,
		"\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");	/* a surrogate */
	json_is("\xf4\x90\x80\x80", 4,
		"\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");	/* > U+10FFFF */

	ok(show_not_utf8("\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x94\x92", 11) == -1 &&
	   show_not_utf8("", 0) == -1, "show_not_utf8: valid UTF-8, -1");
	ok(show_not_utf8("ab\xff", 3) == 2 && show_not_utf8("a\xc3", 2) == 1 &&
	   show_not_utf8("\xc0\xaf", 2) == 0 && show_not_utf8("x\xed\xa0\x80", 4) == 1 &&
	   show_not_utf8("\xf4\x90\x80\x80", 4) == 0,
	   "show_not_utf8: the first bad byte (invalid, cut short, overlong, surrogate, > U+10FFFF)");

	text_is("ls -l", 5, "ls -l");
	text_is("a\x1b[31mb", 7, "a?[31mb");
	text_is("\xc2\x9b", 2, "?");			/* C1 CSI */
	text_is("\xff\xc3\xa9", 3, "?\xc3\xa9");
	text_is(nul, 3, "a?b");

	duration_is(0, "0.0s");
	duration_is(850, "0.8s");
	duration_is(9999, "9.9s");
	duration_is(27000, "27s");
	duration_is(192000, "3m12s");
	duration_is(7500000, "2h5m");
	duration_is(3LL * 86400000 + 3600000, "3d1h");
	duration_is(-5, "0.0s");

	info_ok("db2\t4711\tann\t1722500000123\t./nightly.sh --all\t42",
		"db2", 4711, "ann", 1722500000123LL, "./nightly.sh --all", 42);
	/* as a dlock before fences were kept wrote it */
	info_ok("db2\t4711\tann\t1722500000123\t./nightly.sh", "db2", 4711, "ann",
		1722500000123LL, "./nightly.sh", -1);
	/* an empty command, an empty fence */
	info_ok("h\t1\tu\t2\t\t", "h", 1, "u", 2, "", -1);
	info_ok("h\t1\tu\t2\tcmd\tnot-a-fence", "h", 1, "u", 2, "cmd\tnot-a-fence", -1);
	/* --min-hold: the command finished, the lock kept */
	info_ok("h\t1\tu\t2\tcmd\t42\t1722500000999", "h", 1, "u", 2, "cmd", 42);
	finished_is("h\t1\tu\t2\tcmd\t42\t1722500000999", 1722500000999LL);
	finished_is("h\t1\tu\t2\tcmd\t42", -1);
	info_ok("h\t1\tu\t2\tcmd\t42\tlater", "h", 1, "u", 2, "cmd\t42\tlater", -1);
	finished_is("h\t1\tu\t2\tcmd\t42\tlater", -1);
	info_ok("h\t1\tu\t2\tcmd\tx\t7", "h", 1, "u", 2, "cmd\tx\t7", -1);
	finished_is("h\t1\tu\t2\tcmd\tx\t7", -1);
	info_ok("h\t1\tu\t2\tcmd\t42\t7\t8", "h", 1, "u", 2, "cmd\t42\t7\t8", -1);
	info_bad("", 0);
	info_bad("3f2a9c0e", 8);
	info_bad("h\tpid\tu\t2\tcmd", 13);
	info_bad("h\t1\tu\tsoon\tcmd", 14);
	info_bad("h\t1\0\tu\t2\tcmd", 12);

	return done_testing();
}
