/* urlpart.c - %XX escapes, host[:port] and masked passwords, for every
 * engine's URLs. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "urlpart.h"

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int url_decode(const char *s, size_t len, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = s[i];

		if (ch == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return -1;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			ch = (char)(hi * 16 + lo);
			if (ch == '\0')
				return -1;
			i += 2;
		}
		if (o + 1 >= outlen)
			return -1;
		out[o++] = ch;
	}
	out[o] = '\0';
	return 0;
}

int url_userinfo(const char *s, size_t len, char *user, size_t userlen,
		 char *password, size_t passwordlen)
{
	const char *colon = memchr(s, ':', len);
	size_t ulen = colon ? (size_t)(colon - s) : len;

	if (url_decode(s, ulen, user, userlen) < 0)
		return -1;
	if (!colon)
		return 0;
	if (url_decode(colon + 1, len - ulen - 1, password, passwordlen) < 0)
		return -2;
	return 1;
}

int url_digits(const char *s, size_t len, size_t max_digits, long long *out)
{
	long long v = 0;

	if (len == 0 || len > max_digits || max_digits > 18)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Up to 5 digits, the whole of [s, s+len), 1..65535. */
static int port_of(const char *s, size_t len, int *port)
{
	long long v;

	if (url_digits(s, len, 5, &v) < 0 || v < 1 || v > 65535)
		return -1;
	*port = (int)v;
	return 0;
}

int url_hostport(const char *s, size_t len, char *host, size_t hostlen,
		 int *port, int default_port, char *err, size_t errlen)
{
	const char *end = s + len, *colon;
	size_t hlen;

	if (len > 0 && s[0] == '[') {
		const char *rb = memchr(s, ']', len);

		if (!rb)
			FAIL("unclosed '[' in host");
		hlen = (size_t)(rb - s - 1);
		/* no zone (%eth0): a URL's '%' is an escape */
		if (hlen == 0 || memchr(s + 1, '%', hlen) || !memchr(s + 1, ':', hlen))
			FAIL("bad IPv6 address");
		for (const char *q = s + 1; q < rb; q++)
			if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.')
				FAIL("bad IPv6 address");
		if (hlen >= hostlen)
			FAIL("host too long");
		memcpy(host, s + 1, hlen);
		host[hlen] = '\0';
		colon = rb + 1 < end ? rb + 1 : NULL;
		if (colon && *colon != ':')
			FAIL("junk after ']'");
	} else {
		colon = memchr(s, ':', len);
		hlen = colon ? (size_t)(colon - s) : len;
		if (hlen == 0)
			FAIL("missing host");
		if (hlen >= hostlen)
			FAIL("host too long");
		for (size_t i = 0; i < hlen; i++) {
			unsigned char c = (unsigned char)s[i];

			if (!isalnum(c) && c != '.' && c != '-' && c != '_')
				FAIL("bad character in host");
		}
		memcpy(host, s, hlen);
		host[hlen] = '\0';
	}
	*port = default_port;
	if (colon && port_of(colon + 1, (size_t)(end - colon - 1), port) < 0)
		FAIL("bad port");
	return 0;
}

/* ---- masking ------------------------------------------------------------- */

struct masked {
	char *out;
	size_t outlen, len;	/* len: the whole, written or not */
};

static void put(struct masked *m, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++, m->len++)
		if (m->len + 1 < m->outlen)
			m->out[m->len] = s[i];
}

/* [s, s+len), %XX decoded, ends in "password", in any case. */
static bool names_password(const char *s, size_t len)
{
	static const char want[] = "password";
	char tail[sizeof want - 1];
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '%' && i + 2 < len && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			c = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		}
		/* the last sizeof tail bytes, oldest first */
		if (n == sizeof tail)
			memmove(tail, tail + 1, --n);
		tail[n++] = (char)tolower((unsigned char)c);
	}
	return n == sizeof tail && memcmp(tail, want, sizeof tail) == 0;
}

size_t url_mask(const char *url, char *out, size_t outlen)
{
	struct masked m = { out, outlen, 0 };
	const char *rest = strstr(url, "://"), *slash, *at = NULL, *colon;
	const char *pw = NULL, *pw_end = NULL;

	rest = rest ? rest + 3 : url;
	slash = rest + strcspn(rest, "/");
	for (const char *c = rest; c < slash; c++)
		if (*c == '@')
			at = c;
	if (at && (colon = memchr(rest, ':', (size_t)(at - rest)))) {
		pw = colon + 1;
		pw_end = at;
	}
	for (const char *c = url; *c;) {
		size_t name = 0;

		if (c == pw) {	/* once: an empty one ends where it starts */
			put(&m, URL_MASK, strlen(URL_MASK));
			c = pw_end;
			pw = NULL;
			continue;
		}
		if (c > url && (c[-1] == '?' || c[-1] == '&'))
			name = strcspn(c, "=&");
		/* a parameter, unless the user info's password starts in its
		 * name (that password is masked where it starts) */
		if (name && c[name] == '=' && !(pw && pw >= c && pw <= c + name) &&
		    names_password(c, name)) {
			const char *end = c + name + 1 + strcspn(c + name + 1, "&");

			/* the user info's password starts in its value: both go */
			if (pw && pw > c && pw < end && pw_end > end)
				end = pw_end;
			put(&m, c, name + 1);
			put(&m, URL_MASK, strlen(URL_MASK));
			c = end;
			continue;
		}
		put(&m, c++, 1);
	}
	if (outlen)
		out[m.len < outlen ? m.len : outlen - 1] = '\0';
	return m.len;
}
