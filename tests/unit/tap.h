/* tap.h - a tiny TAP producer for the unit tests: ok(), diag(), done_testing() */
#pragma once
#include <stdarg.h>
#include <stdio.h>

static int tap_run, tap_failed;

/* Prints "ok N - what" or "not ok N - what"; returns cond. */
__attribute__((format(printf, 2, 3)))
static inline int ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!cond)
		tap_failed++;
	return cond;
}

__attribute__((format(printf, 1, 2)))
static inline void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* The plan, last; the exit status of main(). */
static inline int done_testing(void)
{
	printf("1..%d\n", tap_run);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}
