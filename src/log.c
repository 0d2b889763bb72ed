/* log.c - every line dlock prints on stderr: text, or JSON (--log-format) */
#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
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

/* --log-format. A file-scope variable, not an option passed down: every
 * file prints through here, engines and the renewal thread included. Set
 * before any thread exists, read-only after. */
static enum log_format format = LOG_TEXT;

int log_format_of(const char *s)
{
	if (strcmp(s, "text") == 0)
		return LOG_TEXT;
	if (strcmp(s, "json") == 0)
		return LOG_JSON;
	return -1;
}

void log_set_format(enum log_format f)
{
	format = f;
}

bool log_json(void)
{
	return format == LOG_JSON;
}

/* A JSON line, built in a buffer that what goes in cannot overflow
 * (bound()): each string at most STR_MAX bytes, 6 bytes of JSON each at
 * worst. */
#define STR_MAX 1024
struct line {
	char *buf;
	size_t len, size;
};

static void put(struct line *l, const char *s, size_t n)
{
	if (l->len + n + 1 > l->size)
		return;		/* cannot happen: see struct line */
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void puts_(struct line *l, const char *s)
{
	put(l, s, strlen(s));
}

/* The length of the valid UTF-8 sequence at s (at most n bytes), 0 when
 * it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 :
		     (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
	uint32_t c;

	if (len == 0 || len > n)
		return 0;
	c = len == 1 ? s[0] : s[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) ||
	    (len == 4 && c < 0x10000) || c > 0x10ffff ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return len;
}

/* A JSON string of any bytes: an invalid one becomes U+FFFD. */
static void quoted(struct line *l, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	if (n > STR_MAX)
		n = STR_MAX;	/* perhaps within a character: U+FFFD */
	put(l, "\"", 1);
	for (size_t i = 0; i < n;) {
		size_t k = utf8_len(u + i, n - i);
		char esc[8];

		if (k == 0) {
			put(l, "\xef\xbf\xbd", 3);
			i++;
			continue;
		}
		if (u[i] == '"' || u[i] == '\\') {
			esc[0] = '\\', esc[1] = (char)u[i];
			put(l, esc, 2);
		} else if (u[i] == '\n') {
			put(l, "\\n", 2);
		} else if (u[i] < 0x20 || u[i] == 0x7f) {
			snprintf(esc, sizeof esc, "\\u%04x", u[i]);
			put(l, esc, 6);
		} else {
			put(l, s + i, k);
		}
		i += k;
	}
	put(l, "\"", 1);
}

static void cquoted(struct line *l, const char *s)
{
	if (s)
		quoted(l, s, strlen(s));
	else
		puts_(l, "null");
}

/* The URL a message starts with ("redis://10.0.0.5:6379: connection
 * refused"), as engines name a server: its length, or 0. */
static size_t server_len(const char *msg)
{
	size_t n = strspn(msg, "abcdefghijklmnopqrstuvwxyz0123456789+.-");
	const char *end;

	if (n == 0 || (strncmp(msg + n, "://", 3) != 0 &&
		       strncmp(msg, "unix:", 5) != 0))
		return 0;
	end = strstr(msg, ": ");
	return end ? (size_t)(end - msg) : 0;
}

static size_t bound(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return 6 * (n < STR_MAX ? n : STR_MAX) + 8;
}

static void json_line(enum log_level level, const char *key, const char *event,
		      const struct log_field *fields, size_t n_fields,
		      const char *msg)
{
	static const char *const levels[] = { "error", "warning", "info" };
	struct line l = { .len = 0 };
	struct timespec ts;
	struct tm tm;
	char when[48];
	size_t n_server = server_len(msg);

	l.size = 256 + bound(key) + bound(event) + 2 * bound(msg);
	for (size_t i = 0; i < n_fields; i++)
		l.size += bound(fields[i].name) + bound(fields[i].str) + 24;
	if (!(l.buf = malloc(l.size)))
		return;		/* no memory for a line: none */
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof when - strlen(when), ".%03ldZ",
		 ts.tv_nsec / 1000000);
	puts_(&l, "{\"time\":\"");
	puts_(&l, when);
	puts_(&l, "\",\"level\":\"");
	puts_(&l, levels[level]);
	puts_(&l, "\",\"lock\":");
	cquoted(&l, key);
	puts_(&l, ",\"event\":");
	cquoted(&l, event);
	puts_(&l, ",\"server\":");
	if (n_server)
		quoted(&l, msg, n_server);
	else
		puts_(&l, "null");
	puts_(&l, ",\"message\":");
	cquoted(&l, msg);
	puts_(&l, ",\"fields\":{");
	for (size_t i = 0; i < n_fields; i++) {
		char num[24];

		if (i)
			puts_(&l, ",");
		cquoted(&l, fields[i].name);
		puts_(&l, ":");
		if (fields[i].str) {
			quoted(&l, fields[i].str, strlen(fields[i].str));
		} else {
			snprintf(num, sizeof num, "%lld", fields[i].num);
			puts_(&l, num);
		}
	}
	puts_(&l, "}}\n");
	/* One write, so lines from several dlocks on one journal don't mix. */
	(void)!write(STDERR_FILENO, l.buf, l.len);
	free(l.buf);
}

void log_escape(const char *s, char *out, size_t outlen)
{
	size_t n = 0;

	if (outlen == 0)
		return;
	for (const unsigned char *u = (const unsigned char *)s; *u; u++) {
		char esc[5] = { (char)*u, 0 };

		/* C1 controls (U+0080-U+009F: 0xc2 0x80-0x9f) too: a
		 * terminal acts on them */
		bool c1 = *u == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f;

		if (*u == '\n' || *u == '\t' || *u == '\r')
			snprintf(esc, sizeof esc, "\\%c", *u == '\n' ? 'n' : *u == '\t' ? 't' : 'r');
		else if (*u < 0x20 || *u == 0x7f || c1 || (u > (const unsigned char *)s &&
			 u[-1] == 0xc2 && *u >= 0x80 && *u <= 0x9f))
			snprintf(esc, sizeof esc, "\\x%02x", *u);
		if (n + strlen(esc) >= outlen)
			break;
		memcpy(out + n, esc, strlen(esc));
		n += strlen(esc);
	}
	out[n] = '\0';
}

static void __attribute__((format(printf, 6, 0)))
vlog(enum log_level level, const char *key, const char *event,
     const struct log_field *fields, size_t n_fields, const char *fmt,
     va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof line, fmt, ap);
	if (format == LOG_JSON) {
		json_line(level, key, event, fields, n_fields, line);
		return;
	}
	/* One write, so lines from several dlocks on one terminal don't mix;
	 * a name's newline would make the line two. */
	if (key) {
		char shown[1024];

		log_escape(key, shown, sizeof shown);
		fprintf(stderr, "dlock: %s: %s\n", shown, line);
	} else
		fprintf(stderr, "dlock: %s\n", line);
}

void log_event(enum log_level level, const char *key, const char *event,
	       const struct log_field *fields, size_t n_fields,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, key, event, fields, n_fields, fmt, ap);
	va_end(ap);
}

/* What a line says by its first words, for its level and event. */
static const struct kind {
	const char *start;
	enum log_level level;
	const char *event;
} kinds[] = {
	{ "warning: ", LOG_WARNING, "warning" },
	{ "lease lost: ", LOG_ERROR, "lost" },
	{ "release failed: ", LOG_WARNING, "release_failed" },
	{ "lock service unavailable", LOG_WARNING, "unavailable" },
};

static void line_of(const char *key, const char *msg)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strncmp(msg, kinds[i].start, strlen(kinds[i].start)) == 0) {
			log_event(kinds[i].level, key, kinds[i].event, NULL, 0,
				  "%s", msg);
			return;
		}
	log_event(LOG_ERROR, key, "error", NULL, 0, "%s", msg);
}

void log_line(const char *key, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	line_of(key, msg);
}

void log_error(const char *key, const struct error *err)
{
	line_of(key, err->msg);
}

void log_exit(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (format == LOG_JSON)
		vlog(LOG_ERROR, NULL, status == EX_USAGE ? "usage" : "error",
		     NULL, 0, fmt, ap);
	else
		verrx(status, fmt, ap);
	va_end(ap);
	exit(status);
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
