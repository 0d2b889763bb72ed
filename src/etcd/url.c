/* url.c - etcd://[user[:password]@]host[:port][,host[:port]...][/] and
 * etcds:// (TLS). One URL is one cluster: its members are tried in turn.
 * Pure: no I/O, fuzzed (tests/fuzz/fuzz_etcd.c). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "url.h"

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* [s, s+len) into out, %XX decoded; no NUL. */
static int decode(const char *s, size_t len, char *out, size_t outlen)
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
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -1;
			ch = (char)(hi * 16 + lo);
			i += 2;
		}
		if (o + 1 >= outlen)
			return -1;
		out[o++] = ch;
	}
	out[o] = '\0';
	return 0;
}

static int parse_endpoint(const char *s, size_t len, struct etcd_endpoint *ep,
			  char *err, size_t errlen)
{
	const char *end = s + len, *colon = NULL;
	size_t hlen;

	ep->port = 2379;
	ep->v6 = false;
	if (len > 0 && s[0] == '[') {
		const char *rb = memchr(s, ']', len);

		if (!rb)
			FAIL("unclosed '[' in host");
		hlen = (size_t)(rb - s - 1);
		if (hlen == 0 || !memchr(s + 1, ':', hlen))
			FAIL("bad IPv6 address");
		for (const char *q = s + 1; q < rb; q++)
			if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.')
				FAIL("bad IPv6 address");
		if (hlen >= sizeof ep->host)
			FAIL("host too long");
		memcpy(ep->host, s + 1, hlen);
		ep->host[hlen] = '\0';
		ep->v6 = true;
		if (rb + 1 < end) {
			if (rb[1] != ':')
				FAIL("junk after ']'");
			colon = rb + 1;
		}
	} else {
		colon = memchr(s, ':', len);
		hlen = colon ? (size_t)(colon - s) : len;
		if (hlen == 0)
			FAIL("missing host");
		if (hlen >= sizeof ep->host)
			FAIL("host too long");
		for (size_t i = 0; i < hlen; i++) {
			unsigned char c = (unsigned char)s[i];

			if (!isalnum(c) && c != '.' && c != '-' && c != '_')
				FAIL("bad character in host");
		}
		memcpy(ep->host, s, hlen);
		ep->host[hlen] = '\0';
	}
	if (colon) {
		long p = 0;
		size_t n = (size_t)(end - colon - 1);

		if (n == 0 || n > 5)
			FAIL("bad port");
		for (size_t i = 0; i < n; i++) {
			if (!isdigit((unsigned char)colon[1 + i]))
				FAIL("bad port");
			p = p * 10 + (colon[1 + i] - '0');
		}
		if (p < 1 || p > 65535)
			FAIL("bad port");
		ep->port = (int)p;
	}
	return 0;
}

int etcd_url_parse(const char *s, struct etcd_url *u, char *err, size_t errlen)
{
	const char *rest, *at, *hosts, *end;
	size_t used;

	memset(u, 0, sizeof *u);
	if (strncmp(s, "etcd://", 7) == 0) {
		rest = s + 7;
	} else if (strncmp(s, "etcds://", 8) == 0) {
		rest = s + 8;
		u->tls = true;
	} else {
		FAIL("not an etcd:// or etcds:// URL");
	}
	end = rest + strcspn(rest, "/?#");
	if (*end == '?' || *end == '#')
		FAIL("no query or fragment is taken (TLS files: --tls-ca, --tls-cert, --tls-key)");
	if (*end == '/' && end[1] != '\0')
		FAIL("no path is taken: the prefix is --prefix");
	/* user info: up to the last '@' before the hosts, as ps masks it */
	at = NULL;
	for (const char *q = rest; q < end; q++)
		if (*q == '@')
			at = q;
	hosts = rest;
	if (at) {
		const char *colon = memchr(rest, ':', (size_t)(at - rest));
		size_t ulen = colon ? (size_t)(colon - rest) : (size_t)(at - rest);

		if (decode(rest, ulen, u->user, sizeof u->user) < 0)
			FAIL("bad user name");
		if (colon) {
			if (decode(colon + 1, (size_t)(at - colon - 1), u->password,
				   sizeof u->password) < 0)
				FAIL("bad password (too long, or a bad %%-escape)");
			u->has_password = true;
		}
		if (!u->user[0])
			FAIL("a password needs a user name (etcd's users have names)");
		hosts = at + 1;
	}
	if (hosts == end)
		FAIL("missing host");
	while (hosts < end) {
		const char *comma = memchr(hosts, ',', (size_t)(end - hosts));
		size_t len = comma ? (size_t)(comma - hosts) : (size_t)(end - hosts);

		if (u->n_ep == ETCD_MAX_ENDPOINTS)
			FAIL("more than %d endpoints", ETCD_MAX_ENDPOINTS);
		if (len == 0)
			FAIL("an empty endpoint");
		if (parse_endpoint(hosts, len, &u->ep[u->n_ep], err, errlen) < 0)
			return -1;
		u->n_ep++;
		hosts += len + (comma ? 1 : 0);
		if (comma && hosts == end)
			FAIL("an empty endpoint");
	}
	used = (size_t)snprintf(u->text, sizeof u->text, "%s://", u->tls ? "etcds" : "etcd");
	if (u->user[0] && used < sizeof u->text)
		used += (size_t)snprintf(u->text + used, sizeof u->text - used, "%s%s@",
					 u->user, u->has_password ? ":***" : "");
	for (size_t i = 0; i < u->n_ep && used < sizeof u->text; i++)
		used += (size_t)snprintf(u->text + used, sizeof u->text - used,
					 u->ep[i].v6 ? "%s[%s]:%d" : "%s%s:%d",
					 i ? "," : "", u->ep[i].host, u->ep[i].port);
	return 0;
}
