/* url.c - server URLs. Pure: no I/O, unit-tested and fuzzable.
 *
 *   redis://[[user]:password@]host[:port][/db]     host may be [v6]
 *   redis://user@host...                           password from file/env
 *   unix:/path  unix:///path  [?db=N]
 *   redis-sentinel://host:port[,host:port...]/MASTER
 *   redis+cluster://[[user]:password@]host[:port][,host[:port]...][/0]
 *   rediss://..., rediss-sentinel://..., rediss+cluster://...
 *                                         the same over TLS (tls.c)
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "url.h"
#include "urlpart.h"

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

int url_numeric_addr(const char *host, int port, struct net_addrs *a)
{
	struct net_addr *one = &a->addr[0];
	struct sockaddr_in *in = (struct sockaddr_in *)&one->sa;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&one->sa;

	a->n = 0;
	memset(one, 0, sizeof *one);
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons((uint16_t)port);
		one->len = sizeof *in;
	} else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		one->len = sizeof *in6;
	} else {
		memset(one, 0, sizeof *one);
		return -1;
	}
	a->n = 1;
	return 0;
}

/* The same address and port (a scope id or flow label aside). */
static bool same_addr(const struct net_addr *a, const struct net_addr *b)
{
	const struct sockaddr_in *a4 = (const void *)&a->sa, *b4 = (const void *)&b->sa;
	const struct sockaddr_in6 *a6 = (const void *)&a->sa, *b6 = (const void *)&b->sa;

	if (a->sa.ss_family != b->sa.ss_family)
		return false;
	if (a->sa.ss_family == AF_INET)
		return a4->sin_port == b4->sin_port &&
		       a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	return a6->sin6_port == b6->sin6_port &&
	       memcmp(&a6->sin6_addr, &b6->sin6_addr, sizeof a6->sin6_addr) == 0;
}

int url_addrs_shared(const struct net_addrs *a, const struct net_addrs *b)
{
	for (size_t i = 0; i < a->n; i++)
		for (size_t k = 0; k < b->n; k++)
			if (same_addr(&a->addr[i], &b->addr[k]))
				return (int)i;
	return -1;
}

static int parse_db(const char *s, size_t len, int *db, char *err, size_t errlen)
{
	long long v;

	if (url_digits(s, len, 10, &v) < 0 || v > 1000000)
		FAIL("bad database number");
	*db = (int)v;
	return 0;
}

static int parse_redis(const char *s, struct url *u, char *err, size_t errlen)
{
	const char *at, *slash, *hp = s;
	size_t hplen;

	slash = strchr(s, '/');
	at = strrchr(s, '@');
	if (at && slash && at > slash)
		at = NULL;	/* an '@' in the path part is not userinfo */
	if (at) {
		int r = url_userinfo(s, (size_t)(at - s), u->user, sizeof u->user,
				     u->password, sizeof u->password);

		if (r == -1)
			FAIL("bad user name");
		if (r == -2)
			FAIL("bad password");
		if (r == 1)
			u->has_password = 1;
		else if (!u->user[0])
			FAIL("empty user name");
		hp = at + 1;
	}
	slash = strchr(hp, '/');
	hplen = slash ? (size_t)(slash - hp) : strlen(hp);
	if (strpbrk(hp, "?#"))
		FAIL("query or fragment not allowed in redis:// URL");
	if (url_hostport(hp, hplen, u->host, sizeof u->host, &u->port, 6379,
			   err, errlen) < 0)
		return -1;
	if (slash && parse_db(slash + 1, strlen(slash + 1), &u->db, err, errlen) < 0)
		return -1;
	url_numeric_addr(u->host, u->port, &u->addr);	/* a name: resolved later */
	u->kind = URL_TCP;
	return 0;
}

/* The seed nodes of a cluster: host[:port] by commas, each as a redis://
 * URL's host, then nothing or "/0" (a cluster has database 0 only). */
static int parse_cluster(const char *s, struct url *u, char *err, size_t errlen)
{
	const char *slash, *at = NULL, *p;
	size_t upto = strcspn(s, ",");

	/* user info: before the first seed, so up to the first comma (a
	 * comma or '/' in a password is written %2C, %2F) */
	for (p = s; p < s + upto; p++)
		if (*p == '@')
			at = p;
	if (strchr(at ? at + 1 : s, '@'))
		FAIL("user info ('@') only before the first seed node");
	slash = strchr(at ? at : s, '/');
	if (slash && strcmp(slash, "/0") != 0)
		FAIL("a cluster has database 0 only: nothing but /0 after the seed nodes");
	/* the user info and the first seed as a redis:// URL has them */
	p = at ? at + 1 : s;
	{
		size_t first = strcspn(p, ",/");
		char one[1024];

		if ((size_t)(p - s) + first >= sizeof one)
			FAIL("URL too long");
		memcpy(one, s, (size_t)(p - s) + first);
		one[(size_t)(p - s) + first] = '\0';
		if (parse_redis(one, u, err, errlen) < 0)
			return -1;
		p += first;
	}
	snprintf(u->seeds[0].host, sizeof u->seeds[0].host, "%s", u->host);
	u->seeds[0].port = u->port;
	u->seeds[0].addr = u->addr;
	u->n_seeds = 1;
	while (*p == ',') {
		size_t len = strcspn(++p, ",/");

		if (len == 0)
			FAIL("empty seed node address");
		if (u->n_seeds == URL_MAX_SEEDS)
			FAIL("too many seed nodes (at most %d)", URL_MAX_SEEDS);
		if (url_hostport(p, len, u->seeds[u->n_seeds].host,
				   sizeof u->seeds[0].host, &u->seeds[u->n_seeds].port,
				   6379, err, errlen) < 0)
			return -1;
		url_numeric_addr(u->seeds[u->n_seeds].host, u->seeds[u->n_seeds].port,
				 &u->seeds[u->n_seeds].addr);
		u->n_seeds++;
		p += len;
	}
	return 0;
}

static int parse_unix(const char *s, struct url *u, char *err, size_t errlen)
{
	const char *q;
	size_t plen;

	if (strncmp(s, "//", 2) == 0) {
		s += 2;
		if (*s != '/')
			FAIL("unix:// needs an absolute path (unix:///path)");
	}
	if (*s != '/')
		FAIL("unix: needs an absolute path");
	q = strchr(s, '?');
	plen = q ? (size_t)(q - s) : strlen(s);
	if (plen >= sizeof u->path)
		FAIL("socket path too long");
	memcpy(u->path, s, plen);
	u->path[plen] = '\0';
	if (q) {
		if (strncmp(q, "?db=", 4) != 0)
			FAIL("only ?db=N is allowed after a unix socket path");
		if (parse_db(q + 4, strlen(q + 4), &u->db, err, errlen) < 0)
			return -1;
	}
	u->kind = URL_UNIX;
	return 0;
}

static int parse_sentinel(const char *s, struct url *u, char *err, size_t errlen)
{
	const char *slash = strchr(s, '/'), *p = s;

	if (!slash || slash[1] == '\0')
		FAIL("missing master name after '/'");
	if (strlen(slash + 1) >= sizeof u->master)
		FAIL("master name too long");
	for (const char *m = slash + 1; *m; m++) {
		/* '?' and '#' would begin parameters and fragments in any
		 * other URL: taken into the name, they would hide a typo */
		if (*m == '?' || *m == '#')
			FAIL("'%c' in the master name: redis-sentinel:// takes no parameters",
			     *m);
		if (!isgraph((unsigned char)*m) || *m == '/')
			FAIL("bad master name");
	}
	strcpy(u->master, slash + 1);
	while (p < slash) {
		const char *comma = memchr(p, ',', (size_t)(slash - p));
		const char *end = comma ? comma : slash;

		if (u->n_sentinels == URL_MAX_SENTINELS)
			FAIL("too many sentinels");
		if (url_hostport(p, (size_t)(end - p),
				   u->sentinels[u->n_sentinels].host,
				   sizeof u->sentinels[0].host,
				   &u->sentinels[u->n_sentinels].port, 26379, err,
				   errlen) < 0)
			return -1;
		url_numeric_addr(u->sentinels[u->n_sentinels].host,
				 u->sentinels[u->n_sentinels].port,
				 &u->sentinels[u->n_sentinels].addr);
		u->n_sentinels++;
		p = end + (comma ? 1 : 0);
		if (comma && p == slash)
			FAIL("empty sentinel address");
	}
	if (u->n_sentinels == 0)
		FAIL("no sentinel given");
	u->kind = URL_SENTINEL;
	return 0;
}

static void describe(struct url *u)
{
	const char *pw = u->has_password ? ":" URL_MASK : "";
	const char *at = u->user[0] || u->has_password ? "@" : "";
	int v6 = strchr(u->host, ':') != NULL;
	const char *s = u->tls ? "s" : "";

	switch (u->kind) {
	case URL_TCP:
		snprintf(u->text, sizeof u->text, "redis%s%s://%s%s%s%s%s%s:%d", s,
			 u->n_seeds ? "+cluster" : "", u->user, pw, at,
			 v6 ? "[" : "", u->host, v6 ? "]" : "", u->port);
		for (int i = 1; i < u->n_seeds; i++) {
			size_t len = strlen(u->text);

			v6 = strchr(u->seeds[i].host, ':') != NULL;
			snprintf(u->text + len, sizeof u->text - len, ",%s%s%s:%d",
				 v6 ? "[" : "", u->seeds[i].host, v6 ? "]" : "",
				 u->seeds[i].port);
		}
		break;
	case URL_UNIX:
		snprintf(u->text, sizeof u->text, "unix:%s", u->path);
		break;
	case URL_SENTINEL:
		snprintf(u->text, sizeof u->text, "redis%s-sentinel://%s:%d/%s", s,
			 u->sentinels[0].host, u->sentinels[0].port, u->master);
		break;
	}
	if (u->db) {
		size_t len = strlen(u->text);

		snprintf(u->text + len, sizeof u->text - len,
			 u->kind == URL_UNIX ? "?db=%d" : "/%d", u->db);
	}
}

int url_parse(const char *s, struct url *u, char *err, size_t errlen)
{
	int r;

	memset(u, 0, sizeof *u);
	u->port = 6379;
	for (const char *p = s; *p; p++)
		if (!isgraph((unsigned char)*p))
			FAIL("blank or control character in URL");
	/* TLS: rediss:// as redis-py and redis-cli -u name it,
	 * rediss-sentinel:// as Lettuce does */
	u->tls = strncmp(s, "rediss://", 9) == 0 ||
		 strncmp(s, "rediss-sentinel://", 18) == 0;
	if (strncmp(s, "redis://", 8) == 0 || strncmp(s, "rediss://", 9) == 0)
		r = parse_redis(s + 8 + u->tls, u, err, errlen);
	else if (strncmp(s, "redis+cluster://", 16) == 0 ||
		 strncmp(s, "rediss+cluster://", 17) == 0) {
		u->tls = s[5] == 's';
		r = parse_cluster(s + 16 + u->tls, u, err, errlen);
	} else if (strncmp(s, "unix:", 5) == 0)
		r = parse_unix(s + 5, u, err, errlen);
	else if (strncmp(s, "redis-sentinel://", 17) == 0 ||
		 strncmp(s, "rediss-sentinel://", 18) == 0)
		r = parse_sentinel(s + 17 + u->tls, u, err, errlen);
	else
		FAIL("unknown scheme (want redis://, rediss://, unix:, redis-sentinel://, rediss-sentinel://, redis+cluster:// or rediss+cluster://)");
	if (r == 0)
		describe(u);
	return r;
}

int redis_url_parse(const char *s, void *url, char *why, size_t whylen)
{
	return url_parse(s, url, why, whylen);
}

const char *redis_url_text(const void *url)
{
	return ((const struct url *)url)->text;
}

bool redis_url_tls(const void *url)
{
	return ((const struct url *)url)->tls;
}
