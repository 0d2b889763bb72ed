/* show.c - output for status and history: holder info read back, times as
 * people read them, aligned tables, JSON strings of any bytes. Pure: no
 * server, no clock; unit-tested. */
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include "engine.h"
#include "show.h"
#include "urlpart.h"

/* A decimal number of at most 18 digits, the whole of s. */
static int number(const char *s, long long *out)
{
	return url_digits(s, strlen(s), 18, out);
}

/* The holder info's fields after the command: "fence" or "fence\tfinished",
 * numbers (the fence may be empty). Returns -1 for anything else. */
static int tail(char *const *field, size_t n, struct show_info *hi)
{
	long long finished;

	if (n == 7 && number(field[6], &finished) < 0)
		return -1;
	if (*field[5] && number(field[5], &hi->fence) < 0)
		return -1;
	if (n == 7)
		hi->finished_ms = finished;
	return 0;
}

int show_info_parse(const char *s, size_t len, struct show_info *hi)
{
	const struct show_info none = {
		.pid = -1, .since_ms = -1, .fence = -1, .finished_ms = -1,
	};
	char *field[7] = { NULL };
	size_t n = 0;
	long long since;

	*hi = none;
	if (!s || memchr(s, '\0', len) || !(hi->buf = malloc(len + 1)))
		return -1;
	memcpy(hi->buf, s, len);
	hi->buf[len] = '\0';
	field[n++] = hi->buf;
	for (char *p = hi->buf; *p && n < 7; p++)
		if (*p == '\t') {
			*p = '\0';
			field[n++] = p + 1;
		}
	/* fields after the fence that are not numbers are the command's
	 * (another writer's) */
	if (n >= 6 && tail(field, n, hi) < 0) {
		while (n > 5)
			field[--n][-1] = '\t';
		hi->fence = hi->finished_ms = -1;
	}
	if (n < 5 || number(field[1], &hi->pid) < 0 ||
	    number(field[3], &since) < 0) {
		show_info_free(hi);
		*hi = none;
		return -1;
	}
	hi->since_ms = since;
	hi->host = field[0];
	hi->user = field[2];
	hi->command = field[4];
	hi->command_len = strlen(field[4]);
	return 0;
}

void show_info_free(struct show_info *hi)
{
	free(hi->buf);
	hi->buf = NULL;
}

bool engine_info_finished(const char *s, size_t len)
{
	struct show_info hi;
	bool finished;

	if (show_info_parse(s, len, &hi) < 0)
		return false;
	finished = hi.finished_ms >= 0;
	show_info_free(&hi);
	return finished;
}

void show_duration(int64_t ms, char *out, size_t len)
{
	int64_t s = ms / 1000;

	if (ms < 0)
		ms = s = 0;
	if (ms < 10000)
		snprintf(out, len, "%lld.%llds", (long long)(ms / 1000),
			 (long long)(ms % 1000 / 100));
	else if (s < 60)
		snprintf(out, len, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(out, len, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
	else if (s < 86400)
		snprintf(out, len, "%lldh%lldm", (long long)(s / 3600),
			 (long long)(s % 3600 / 60));
	else
		snprintf(out, len, "%lldd%lldh", (long long)(s / 86400),
			 (long long)(s % 86400 / 3600));
}

void show_ago(int64_t then_ms, int64_t now_ms, char *out, size_t len)
{
	char d[32];

	show_duration(now_ms - then_ms, d, sizeof d);
	snprintf(out, len, "%s ago", d);
}

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	/* no overlong forms, no surrogates, nothing above U+10FFFF */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

long show_not_utf8(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = utf8_len(u + i, len - i);

		if (!n)
			return (long)i;
		i += n;
	}
	return -1;
}

void show_text(const char *s, size_t len, char *out, size_t outlen)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < outlen;) {
		size_t n = utf8_len(u + i, len - i);

		if (n == 0 || u[i] < 0x20 || u[i] == 0x7f ||
		    (n == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0)) {	/* C1 */
			out[o++] = '?';
			i += n ? n : 1;
		} else if (o + n < outlen) {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
		} else {
			break;
		}
	}
	out[o] = '\0';
}

/* Columns on a terminal: wcwidth() of each character, read as UTF-8 in
 * C.UTF-8 (dlock sets no locale, and show_text() made the cells UTF-8
 * whatever the caller's is): a wide (CJK) character takes two columns, a
 * combining one none. Where C.UTF-8 is missing, one a character. */
static size_t width(const char *s, locale_t utf8)
{
	size_t w = 0, left = strlen(s);
	mbstate_t st = { 0 };
	locale_t old;

	if (utf8 == (locale_t)0) {
		for (; *s; s++)
			w += ((unsigned char)*s & 0xc0) != 0x80;
		return w;
	}
	old = uselocale(utf8);
	while (left > 0) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s, left, &st);
		int cw;

		if (n == 0 || n > left) {	/* not UTF-8 after all: a byte */
			memset(&st, 0, sizeof st);
			n = 1;
			cw = 1;
		} else {
			cw = wcwidth(wc);
		}
		w += cw < 0 ? 1 : (size_t)cw;
		s += n;
		left -= n;
	}
	uselocale(old);
	return w;
}

void table_init(struct table *t, size_t n_cols, const char *indent)
{
	*t = (struct table){ .n_cols = n_cols, .indent = indent ? indent : "" };
}

int table_add(struct table *t, const char *const *cells)
{
	if (t->n_rows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 8;
		char **more = realloc(t->cells, cap * t->n_cols * sizeof *more);

		if (!more)
			return -1;
		t->cells = more;
		t->cap = cap;
	}
	for (size_t c = 0; c < t->n_cols; c++) {
		char *copy = strdup(cells[c] ? cells[c] : "-");

		if (!copy) {
			while (c > 0)
				free(t->cells[t->n_rows * t->n_cols + --c]);
			return -1;
		}
		t->cells[t->n_rows * t->n_cols + c] = copy;
	}
	t->n_rows++;
	return 0;
}

void table_print(const struct table *t, FILE *f)
{
	size_t w[16] = { 0 };
	locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);

	for (size_t r = 0; r < t->n_rows; r++)
		for (size_t c = 0; c < t->n_cols && c < 16; c++) {
			size_t n = width(t->cells[r * t->n_cols + c], utf8);

			if (n > w[c])
				w[c] = n;
		}
	for (size_t r = 0; r < t->n_rows; r++) {
		fputs(t->indent, f);
		for (size_t c = 0; c < t->n_cols; c++) {
			const char *cell = t->cells[r * t->n_cols + c];

			fputs(cell, f);
			if (c + 1 < t->n_cols)
				fprintf(f, "%*s", (int)(w[c < 16 ? c : 15] - width(cell, utf8) + 2), "");
		}
		fputc('\n', f);
	}
	if (utf8 != (locale_t)0)
		freelocale(utf8);
}

void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->n_rows = t->cap = 0;
}

void json_init(struct json *j, FILE *f)
{
	*j = (struct json){ .f = f };
	j->first[0] = true;
}

/* Before a value or a key: the comma, unless first or after a key. */
static void next(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
}

void json_open(struct json *j, char bracket)
{
	next(j);
	fputc(bracket, j->f);
	if (j->depth < 31)
		j->first[++j->depth] = true;
}

void json_close(struct json *j, char bracket)
{
	fputc(bracket, j->f);
	if (j->depth > 0)
		j->depth--;
	if (j->depth == 0)
		fputc('\n', j->f);
}

static void quoted(FILE *f, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	fputc('"', f);
	for (size_t i = 0; i < len;) {
		size_t n = utf8_len(u + i, len - i);

		if (n == 0) {
			fputs("\xef\xbf\xbd", f);	/* U+FFFD */
			i++;
		} else if (u[i] == '"' || u[i] == '\\') {
			fprintf(f, "\\%c", u[i++]);
		} else if (u[i] == '\n') {
			fputs("\\n", f);
			i++;
		} else if (u[i] == '\t') {
			fputs("\\t", f);
			i++;
		} else if (u[i] < 0x20 || u[i] == 0x7f) {
			fprintf(f, "\\u%04x", u[i++]);
		} else {
			fwrite(s + i, 1, n, f);
			i += n;
		}
	}
	fputc('"', f);
}

void json_key(struct json *j, const char *key)
{
	next(j);
	quoted(j->f, key, strlen(key));
	fputc(':', j->f);
	j->after_key = true;
}

void json_str(struct json *j, const char *s, size_t len)
{
	next(j);
	quoted(j->f, s, len);
}

void json_cstr(struct json *j, const char *s)
{
	if (s)
		json_str(j, s, strlen(s));
	else
		json_null(j);
}

void json_int(struct json *j, long long v)
{
	next(j);
	fprintf(j->f, "%lld", v);
}

void json_int_or_null(struct json *j, long long v)
{
	if (v < 0)
		json_null(j);
	else
		json_int(j, v);
}

void json_bool(struct json *j, bool v)
{
	next(j);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j)
{
	next(j);
	fputs("null", j->f);
}

void json_open_field(struct json *j, const char *key, char bracket)
{
	json_key(j, key);
	json_open(j, bracket);
}

void json_field_str(struct json *j, const char *key, const char *s, size_t len)
{
	json_key(j, key);
	json_str(j, s, len);
}

void json_field_cstr(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_cstr(j, s);
}

void json_field_int(struct json *j, const char *key, long long v)
{
	json_key(j, key);
	json_int(j, v);
}

void json_field_int_or_null(struct json *j, const char *key, long long v)
{
	json_key(j, key);
	json_int_or_null(j, v);
}

void json_field_bool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	json_bool(j, v);
}

void json_info(struct json *j, const char *info, size_t len)
{
	struct show_info hi;
	bool ok = info && show_info_parse(info, len, &hi) == 0;

	json_field_cstr(j, "host", ok ? hi.host : NULL);
	json_field_int_or_null(j, "pid", ok ? hi.pid : -1);
	json_field_cstr(j, "user", ok ? hi.user : NULL);
	json_key(j, "command");
	ok ? json_str(j, hi.command, hi.command_len) : json_null(j);
	json_field_int_or_null(j, "since_ms", ok ? hi.since_ms : -1);
	if (ok)
		show_info_free(&hi);
}

void show_who(const char *token, size_t token_len, const char *info,
	      size_t info_len, char *out, size_t len)
{
	struct show_info hi;
	char host[128], user[64], cmd[160], value[80];

	if (info && show_info_parse(info, info_len, &hi) == 0) {
		show_text(hi.host, strlen(hi.host), host, sizeof host);
		show_text(hi.user, strlen(hi.user), user, sizeof user);
		show_text(hi.command, hi.command_len, cmd, sizeof cmd);
		snprintf(out, len, "%s@%s pid %lld (%s)%s", user, host, hi.pid, cmd,
			 hi.finished_ms >= 0 ? ", command finished" : "");
		show_info_free(&hi);
		return;
	}
	show_text(token, token_len, value, sizeof value);
	snprintf(out, len, "another client, value '%s'%s", value,
		 token_len >= sizeof value - 1 ? "..." : "");
}

void show_ttl(int64_t ms, char *out, size_t len)
{
	if (ms < 0)
		snprintf(out, len, "no TTL");
	else
		show_duration(ms, out, len);
}
