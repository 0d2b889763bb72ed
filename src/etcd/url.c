/* url.c - etcd://[user[:password]@]host[:port][,host[:port]...][/] and
 * etcds:// (TLS). One URL is one cluster: its members are tried in turn.
 * Pure: no I/O, fuzzed (tests/fuzz/fuzz_etcd.c). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "url.h"
#include "urlpart.h"

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

int etcd_url_parse(const char *s, void *url, char *err, size_t errlen)
{
	struct etcd_url *u = url;
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
		int r = url_userinfo(rest, (size_t)(at - rest), u->user,
				     sizeof u->user, u->password, sizeof u->password);

		if (r == -1)
			FAIL("bad user name");
		if (r == -2)
			FAIL("bad password (too long, or a bad %%-escape)");
		if (r == 1)
			u->has_password = true;
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
		if (url_hostport(hosts, len, u->ep[u->n_ep].host,
				 sizeof u->ep[u->n_ep].host, &u->ep[u->n_ep].port, 2379,
				 err, errlen) < 0)
			return -1;
		u->ep[u->n_ep].v6 = hosts[0] == '[';
		u->n_ep++;
		hosts += len + (comma ? 1 : 0);
		if (comma && hosts == end)
			FAIL("an empty endpoint");
	}
	used = (size_t)snprintf(u->text, sizeof u->text, "%s://", u->tls ? "etcds" : "etcd");
	if (u->user[0] && used < sizeof u->text)
		used += (size_t)snprintf(u->text + used, sizeof u->text - used, "%s%s@",
					 u->user, u->has_password ? ":" URL_MASK : "");
	for (size_t i = 0; i < u->n_ep && used < sizeof u->text; i++)
		used += (size_t)snprintf(u->text + used, sizeof u->text - used,
					 u->ep[i].v6 ? "%s[%s]:%d" : "%s%s:%d",
					 i ? "," : "", u->ep[i].host, u->ep[i].port);
	return 0;
}

const char *etcd_url_text(const void *url)
{
	return ((const struct etcd_url *)url)->text;
}

bool etcd_url_tls(const void *url)
{
	return ((const struct etcd_url *)url)->tls;
}
