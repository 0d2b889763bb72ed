/* url.c - zk:// URLs and znode paths. Pure: no I/O. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "url.h"
#include "urlpart.h"

#define FAIL(...) do { snprintf(why, whylen, __VA_ARGS__); return -1; } while (0)

/* One host[:port] or [v6][:port] of [s, s+len), appended to u->hosts. */
static int add_host(struct zk_url *u, const char *s, size_t len, char *why,
		    size_t whylen)
{
	char host[256];
	size_t used = strlen(u->hosts);
	int port;

	if (len == 0)
		FAIL("empty host in the list");
	if (u->n_hosts == ZK_URL_MAX_HOSTS)
		FAIL("more than %d hosts", ZK_URL_MAX_HOSTS);
	if (url_hostport(s, len, host, sizeof host, &port, ZK_DEFAULT_PORT, why,
			 whylen) < 0)
		return -1;
	if (snprintf(u->hosts + used, sizeof u->hosts - used, "%s%s:%d",
		     used ? "," : "", host, port) >= (int)(sizeof u->hosts - used))
		FAIL("host list too long");
	u->n_hosts++;
	return 0;
}

/* The next code point of UTF-8 at *s (len bytes left); -1 for bytes that
 * are not UTF-8 (the server would read U+FFFD, which it refuses). */
static long next_code_point(const unsigned char **s, size_t len)
{
	const unsigned char *p = *s;
	long cp;
	size_t n;

	if (p[0] < 0x80) {
		*s += 1;
		return p[0];
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return -1;
	if (len < n)
		return -1;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*s += n;
	return cp;
}

const char *zk_path_invalid(const char *path)
{
	const unsigned char *p = (const unsigned char *)path;
	size_t len = strlen(path);
	const char *comp;

	if (path[0] != '/')
		return "a path starts with '/'";
	if (len == 1)
		return NULL;
	if (path[len - 1] == '/')
		return "a path does not end with '/'";
	for (comp = path + 1;; ) {
		size_t clen = strcspn(comp, "/");

		if (clen == 0)
			return "an empty path component ('//')";
		if ((clen == 1 && comp[0] == '.') ||
		    (clen == 2 && comp[0] == '.' && comp[1] == '.'))
			return "'.' and '..' are not path components in ZooKeeper";
		if (!comp[clen])
			break;
		comp += clen + 1;
	}
	/* PathUtils.validatePath(): control characters, U+D800-U+F8FF and
	 * U+FFF0-U+FFFF are refused. */
	while (*p) {
		long cp = next_code_point(&p, len - (size_t)(p - (const unsigned char *)path));

		if (cp < 0)
			return "not UTF-8";
		if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))
			return "a control character";
		if ((cp >= 0xd800 && cp <= 0xf8ff) || (cp >= 0xfff0 && cp <= 0xffff))
			return "a character ZooKeeper refuses in a path";
	}
	return NULL;
}

int zk_url_parse(const char *s, void *url, char *why, size_t whylen)
{
	struct zk_url *u = url;
	const char *p, *at, *slash, *q;
	size_t hlen;

	memset(u, 0, sizeof *u);
	if (strncmp(s, "zks://", 6) == 0)
		FAIL("zks:// cannot be used: Debian's ZooKeeper C client is built without TLS");
	if (strncmp(s, "zk://", 5) != 0)
		FAIL("not a zk:// URL");
	p = s + 5;
	if ((q = strpbrk(p, "?#")))
		FAIL("no options after '%c' in a zk:// URL (TLS is not available; the session timeout is --ttl)",
		     *q);
	slash = strchr(p, '/');
	/* the last '@': one in the password is the password's (as cli.c's
	 * scrubbing takes it) */
	at = memrchr(p, '@', slash ? (size_t)(slash - p) : strlen(p));
	if (at) {
		int r = url_userinfo(p, (size_t)(at - p), u->user, sizeof u->user,
				     u->password, sizeof u->password);

		if (r == -1 || !u->user[0])
			FAIL("bad user in the URL (digest auth needs user or user:password)");
		if (strchr(u->user, ':'))
			FAIL("bad user in the URL: ':' in it");
		if (r == -2)
			FAIL("bad password in the URL");
		if (r == 1)
			u->has_password = true;
		p = at + 1;
	}
	hlen = slash ? (size_t)(slash - p) : strlen(p);
	if (hlen == 0)
		FAIL("missing host");
	for (const char *h = p; h < p + hlen;) {
		const char *comma = memchr(h, ',', (size_t)(p + hlen - h));
		size_t len = comma ? (size_t)(comma - h) : (size_t)(p + hlen - h);

		if (add_host(u, h, len, why, whylen) < 0)
			return -1;
		h += len + (comma != NULL);
		if (comma && h == p + hlen)
			FAIL("empty host in the list");
	}
	if (slash && slash[1]) {
		const char *bad;

		size_t clen;

		if (url_decode(slash, strlen(slash), u->chroot, sizeof u->chroot) < 0)
			FAIL("bad chroot");
		/* zk://h/jobs/ is zk://h/jobs, as a directory reads (one
		 * slash: "//" is still an empty component) */
		clen = strlen(u->chroot);
		if (clen > 2 && u->chroot[clen - 1] == '/' && u->chroot[clen - 2] != '/')
			u->chroot[clen - 1] = '\0';
		if ((bad = zk_path_invalid(u->chroot)))
			FAIL("bad chroot: %s", bad);
	}
	snprintf(u->text, sizeof u->text, "zk://%s%s%s%.*s%s", u->user,
		 u->has_password ? ":" URL_MASK : "", u->user[0] ? "@" : "", (int)hlen, p,
		 u->chroot);
	return 0;
}

const char *zk_url_text(const void *url)
{
	return ((const struct zk_url *)url)->text;
}
