/* comment.c - PostgreSQL: the holder's comment, written and read back
 * (comment.h). Pure: no I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "comment.h"
#include "engine.h"

/* s with '%', '*', '/', blanks, controls and non-ASCII as %XX: safe in a
 * comment, one word. */
static void pct(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 4 < len; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch <= ' ' || ch >= 0x7f || ch == '%' || ch == '*' || ch == '/')
			o += (size_t)snprintf(out + o, len - o, "%%%02X", ch);
		else
			out[o++] = (char)ch;
	}
	out[o] = '\0';
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

void pg_unescape(const char *s, size_t n, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < len; i++) {
		if (s[i] == '%' && i + 2 < n && hex_digit(s[i + 1]) >= 0 &&
		    hex_digit(s[i + 2]) >= 0) {
			out[o++] = (char)(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
			i += 2;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
}

char *pg_comment(const struct pg_comment_fields *f)
{
	char key[3 * 1024 + 1], info[3 * LOCK_INFO_MAX], slot[32] = "", *comment;

	pct(f->key, key, sizeof key);
	pct(f->info, info, sizeof info);
	if (f->slot > 0)
		snprintf(slot, sizeof slot, " slot=%ld", f->slot);
	if (asprintf(&comment, "/* dlock mode=%s token=%s%s%s%s key=%s holder=%s */",
		     f->mode, f->token, f->fence[0] ? " fence=" : "", f->fence, slot,
		     key, info) < 0)
		return NULL;
	return comment;
}

const char *pg_comment_in(const char *query)
{
	return query ? strstr(query, "/* dlock mode=") : NULL;
}

void pg_comment_field(const char *comment, const char *name, char *out,
		      size_t len)
{
	char want[32];
	const char *p;

	out[0] = '\0';
	snprintf(want, sizeof want, " %s=", name);
	if (!comment || !(p = strstr(comment, want)))
		return;
	p += strlen(want);
	pg_unescape(p, strcspn(p, " "), out, len);
}

void pg_mode_word(long limit, char *out, size_t len)
{
	if (limit > 0)
		snprintf(out, len, "%ld", limit);
	else
		snprintf(out, len, "%s", limit == LOCK_SHARED ? "s" : "x");
}

void pg_mode_in(const char *query, char *out, size_t len)
{
	const char *c = query ? strstr(query, "/* dlock ") : NULL;

	pg_comment_field(c, "mode", out, len);
}

void pg_mode_words(const char *mode, char *out, size_t len)
{
	if (strcmp(mode, "s") == 0)
		snprintf(out, len, "shared");
	else
		snprintf(out, len, "with --limit %s", mode);
}
