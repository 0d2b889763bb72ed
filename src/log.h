/* log.h - the one-line error: "dlock: KEY: URL: cause"; or, with
 * --log-format json, one JSON object a line */
#pragma once
#include <stdbool.h>
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

/* --log-format: what every line on stderr looks like. */
enum log_format { LOG_TEXT, LOG_JSON };
enum log_level { LOG_ERROR, LOG_WARNING, LOG_INFO };

/* "text" or "json"; -1 for anything else. */
int log_format_of(const char *s);
/* Set by main() once the settings are known (and by cli.c as soon as the
 * command line or DLOCK_LOG_FORMAT names one, for its usage errors),
 * before any thread starts; read-only after. */
void log_set_format(enum log_format format);
bool log_json(void);

/* A name and a value for a JSON line's "fields": a string, or (str NULL)
 * a number. */
struct log_field {
	const char *name;
	const char *str;
	long long num;
};

/* One line on stderr. Text: "dlock: KEY: message" (level, event and
 * fields are not shown). JSON: {"time", "level", "lock", "event",
 * "server", "message", "fields"}, "server" being the URL the message
 * starts with, if any. key and fields may be NULL. */
void log_event(enum log_level level, const char *key, const char *event,
	       const struct log_field *fields, size_t n_fields,
	       const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* s for a one-line message: each control byte escaped as C writes it
 * (\n, \t, \r, else \xHH), the rest as it is; at most outlen - 1
 * bytes, no escape cut. */
void log_escape(const char *s, char *out, size_t outlen);

/* Prints "dlock: KEY: msg" (or "dlock: msg" without a key) on stderr,
 * KEY's control bytes escaped (log_escape()). */
void log_error(const char *key, const struct error *err);
/* The same from a format: an error, but for a line that starts with
 * "warning: " (level warning) or "lease lost: " (event "lost"). */
void log_line(const char *key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* errx() in the log's format: a usage error (64) as event "usage". Text
 * is errx's own line, named after the program as invoked. */
void log_exit(int status, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));
/* flock's own --verbose lines ("getting lock took", "executing"): on
 * stdout, as flock prints them, after the name dlock was run by. */
void log_flock(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Microseconds on CLOCK_MONOTONIC, as flock times its wait. */
int64_t log_now_us(void);
/* "NAME: getting lock took S.UUUUUU seconds" since start_us (log_now_us). */
void log_flock_took(int64_t start_us);
