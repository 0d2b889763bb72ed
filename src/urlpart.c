/* urlpart.c - %XX escapes and host[:port], for every engine's URLs. */
#include <ctype.h>
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

/* Up to 5 digits, the whole of [s, s+len), 1..65535. */
static int port_of(const char *s, size_t len, int *port)
{
	long v = 0;

	if (len == 0 || len > 5)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > 65535)
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
