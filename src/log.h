/* log.h - the one-line error: "dlock: KEY: URL: cause" */
#pragma once
#include <stddef.h>
#include <stdint.h>

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
/* flock's own --verbose lines ("getting lock took", "executing"): on
 * stdout, as flock prints them, after the name dlock was run by. */
void log_flock(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Microseconds on CLOCK_MONOTONIC, as flock times its wait. */
int64_t log_now_us(void);
/* "NAME: getting lock took S.UUUUUU seconds" since start_us (log_now_us). */
void log_flock_took(int64_t start_us);
