/* test_parse.c - parse_seconds, parse_count, parse_signal (src/cli.h) */
#include <inttypes.h>
#include <signal.h>
#include <string.h>

#include "parse.h"
#include "tap.h"

#define BIG_MS INT64_C(1000000000000)

static void seconds_ok(const char *s, int64_t max_ms, int64_t want_ms)
{
	int64_t got = -12345;
	int r = parse_seconds(s, max_ms, &got);

	ok(r == 0 && got == want_ms,
	   "parse_seconds(\"%s\", %" PRId64 ") = %" PRId64 " ms (got %d, %" PRId64 ")",
	   s, max_ms, want_ms, r, got);
}

static void seconds_bad(const char *s, int64_t max_ms)
{
	int64_t got = -12345;

	ok(parse_seconds(s, max_ms, &got) == -1,
	   "parse_seconds(\"%s\", %" PRId64 ") is refused", s, max_ms);
}

static void count_ok(const char *s, long min, long max, long want)
{
	long got = -12345;
	int r = parse_count(s, min, max, &got);

	ok(r == 0 && got == want, "parse_count(\"%s\", %ld, %ld) = %ld (got %d, %ld)",
	   s, min, max, want, r, got);
}

static void count_bad(const char *s, long min, long max)
{
	long got = -12345;

	ok(parse_count(s, min, max, &got) == -1,
	   "parse_count(\"%s\", %ld, %ld) is refused", s, min, max);
}

static void signal_is(const char *s, int want)
{
	int got = parse_signal(s);

	ok(got == want, "parse_signal(\"%s\") = %d (got %d)", s, want, got);
}

int main(void)
{
	/* the examples in cli.h */
	seconds_ok("30", BIG_MS, 30000);
	seconds_ok("1.5", BIG_MS, 1500);
	seconds_ok(".007", BIG_MS, 7);
	/* more good ones; sub-millisecond parts round up */
	seconds_ok("0", BIG_MS, 0);
	seconds_ok("0.5", BIG_MS, 500);
	seconds_ok("0.01", BIG_MS, 10);
	seconds_ok("0.0001", BIG_MS, 1);
	seconds_ok("0.0005", BIG_MS, 1);
	seconds_ok("1.0001", BIG_MS, 1001);
	seconds_ok("2.25", BIG_MS, 2250);
	seconds_ok("86400", BIG_MS, 86400000);
	seconds_ok("5", 5000, 5000);	/* max_ms is allowed */
	/* the rejects in cli.h */
	seconds_bad("", BIG_MS);
	seconds_bad("-1", BIG_MS);
	seconds_bad(" 2", BIG_MS);
	seconds_bad("1e3", BIG_MS);
	seconds_bad("0x10", BIG_MS);
	seconds_bad("inf", BIG_MS);
	seconds_bad("nan", BIG_MS);
	seconds_bad("1,5", BIG_MS);
	seconds_bad("1.", BIG_MS);
	/* more rejects */
	seconds_bad("2 ", BIG_MS);
	seconds_bad("+2", BIG_MS);
	seconds_bad("-0", BIG_MS);
	seconds_bad(".", BIG_MS);
	seconds_bad("1..5", BIG_MS);
	seconds_bad("1.5.2", BIG_MS);
	seconds_bad("abc", BIG_MS);
	seconds_bad("1s", BIG_MS);
	seconds_bad("INF", BIG_MS);
	seconds_bad("infinity", BIG_MS);
	seconds_bad("5.001", 5000);	/* above max_ms */
	seconds_bad("6", 5000);
	seconds_bad("99999999999999999999999999", BIG_MS);	/* overflow */
	seconds_bad("9223372036854775807", INT64_MAX);	/* ms overflow */

	count_ok("0", 0, 255, 0);
	count_ok("42", 0, 255, 42);
	count_ok("255", 0, 255, 255);
	count_ok("1", 1, 32, 1);
	count_bad("256", 0, 255);
	count_bad("-1", 0, 255);
	count_bad("+1", 0, 255);
	count_bad(" 1", 0, 255);
	count_bad("1 ", 0, 255);
	count_bad("", 0, 255);
	count_bad("x", 0, 255);
	count_bad("0x10", 0, 255);
	count_bad("1.0", 0, 255);
	count_bad("1e2", 0, 255);
	count_bad("0", 1, 32);
	count_bad("33", 1, 32);
	count_bad("99999999999999999999999999", 0, 255);

	signal_is("TERM", SIGTERM);
	signal_is("SIGTERM", SIGTERM);
	signal_is("15", SIGTERM);
	signal_is("KILL", SIGKILL);
	signal_is("9", SIGKILL);
	signal_is("HUP", SIGHUP);
	signal_is("SIGINT", SIGINT);
	signal_is("QUIT", SIGQUIT);
	signal_is("USR1", SIGUSR1);
	signal_is("SIGUSR2", SIGUSR2);
	signal_is("ignore", 0);
	signal_is("FOO", -1);
	signal_is("SIGFOO", -1);
	signal_is("SIG", -1);
	signal_is("", -1);
	signal_is("-15", -1);
	signal_is("15x", -1);
	signal_is(" TERM", -1);
	signal_is("999", -1);
	signal_is("65", -1);

	return done_testing();
}
