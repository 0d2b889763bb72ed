/* log.h - the one-line error: "dlock: KEY: URL: cause" */
#pragma once
#include <stddef.h>

/* An error travels up in one of these; main() prints it and exits with
 * err.exit (a <sysexits.h> code). */
struct error {
	int exit;
	char msg[512];
};

/* "Connection refused" -> "connection refused": strerror() and hiredis
 * capitalise, dlock's lines are lower case. Server words ("WRONGPASS",
 * "ERR ...") are left as they are. */
void log_lower_first(char *s);

void error_set(struct error *err, int exit, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prints "dlock: KEY: msg" (or "dlock: msg" without a key) on stderr. */
void log_error(const char *key, const struct error *err);
void log_line(const char *key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
