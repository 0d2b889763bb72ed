/* log.c - error lines on stderr */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
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
