/* log.c - error lines on stderr */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include "log.h"

void log_lower_first(char *s)
{
	if (isupper((unsigned char)s[0]) && islower((unsigned char)s[1]))
		s[0] = (char)tolower((unsigned char)s[0]);
}

void error_set(struct error *err, int exit, const char *fmt, ...)
{
	va_list ap;

	err->exit = exit;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 2, 0)))
vlog(const char *key, const char *fmt, va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof line, fmt, ap);
	/* One write, so lines from several dlocks on one terminal don't mix. */
	if (key)
		fprintf(stderr, "dlock: %s: %s\n", key, line);
	else
		fprintf(stderr, "dlock: %s\n", line);
}

void log_line(const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(key, fmt, ap);
	va_end(ap);
}

void log_error(const char *key, const struct error *err)
{
	log_line(key, "%s", err->msg);
}

/* flock's --verbose lines, in flock's words: on stdout, where flock prints
 * them, after the name dlock was run by (flock's program_invocation_short_name),
 * so that what reads flock's lines reads dlock's. Flushed at once: a fork
 * or an exec follows. */
void log_flock(const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

int64_t log_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void log_flock_took(int64_t start_us)
{
	int64_t us = log_now_us() - start_us;

	log_flock("getting lock took %" PRId64 ".%06" PRId64 " seconds",
		  us / 1000000, us % 1000000);
}
