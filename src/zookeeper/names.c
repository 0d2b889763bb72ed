/* names.c - a lock's paths, contender names and who holds; what a
 * holder's node data and the history say of one. Pure: no I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "names.h"
#include "urlpart.h"

static const struct {
	const char *marker;
	bool shared;
} markers[] = {
	{ "__rlock__", true },	/* before "__lock__": not its suffix, but say so */
	{ "__lock__", false },
	{ "-lock-", false },
};

/* "%010d" as the server prints a sequence number: ten digits, or a '-'
 * and at least nine. */
static int parse_seq(const char *s, long long *out)
{
	size_t len = strlen(s), digits = strspn(s + (s[0] == '-'), "0123456789");
	long long v = 0;

	if (s[0] == '-' ? digits + 1 != len || len < 10 || len > 11 :
	    digits != len || len != 10)
		return -1;
	for (size_t i = s[0] == '-'; i < len; i++)
		v = v * 10 + (s[i] - '0');
	*out = s[0] == '-' ? -v : v;
	return 0;
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* A number of 1 to 12 digits, no sign, no leading zero, in [s, s+n). */
static int number(const char *s, size_t n, long long *out)
{
	if (n > 1 && s[0] == '0')
		return -1;
	return url_digits(s, n, 12, out);
}

/* "-G-MODE-TIMEOUT" of length len: ours? */
static void parse_ours(const char *s, size_t len, bool shared,
		       struct zk_contender *c)
{
	const char *mode = s + 1 + ZK_GUID_LEN + 1, *dash, *end = s + len;
	long long limit = 0, timeout;

	if (len < 1 + ZK_GUID_LEN + 4 || s[0] != '-' || !is_hex(s + 1, ZK_GUID_LEN) ||
	    s[1 + ZK_GUID_LEN] != '-' ||
	    !(dash = memchr(mode, '-', (size_t)(end - mode))) ||
	    number(dash + 1, (size_t)(end - dash - 1), &timeout) < 0)
		return;
	if (shared ? dash - mode != 1 || mode[0] != 's' :
	    !(dash - mode == 1 && mode[0] == 'x') &&
	    !(mode[0] == 'l' && number(mode + 1, (size_t)(dash - mode - 1), &limit) == 0 &&
	      limit > 0))
		return;
	c->ours = true;
	c->limit = (long)limit;
	c->timeout_ms = timeout;
}

int zk_contender_parse(const char *name, struct zk_contender *c)
{
	*c = (struct zk_contender){ .name = name, .timeout_ms = -1 };
	for (size_t k = 0; k < sizeof markers / sizeof markers[0]; k++) {
		size_t mlen = strlen(markers[k].marker);
		/* the last occurrence: a GUID may hold anything */
		const char *m = NULL;

		for (const char *p = strstr(name, markers[k].marker); p;
		     p = strstr(p + 1, markers[k].marker))
			m = p;
		if (!m || parse_seq(m + mlen, &c->seq) < 0)
			continue;
		c->shared = markers[k].shared;
		if (k < 2)
			parse_ours(name, (size_t)(m - name), c->shared, c);
		return 0;
	}
	return -1;
}

static int by_seq(const void *a, const void *b)
{
	const struct zk_contender *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return strcmp(x->name, y->name);
}

void zk_contenders_sort(struct zk_contender *c, size_t n)
{
	if (n > 1)
		qsort(c, n, sizeof *c, by_seq);
}

bool zk_holds(const struct zk_contender *c, size_t n, size_t i)
{
	if (i >= n)
		return false;
	if (c[i].shared) {
		for (size_t k = 0; k < i; k++)
			if (!c[k].shared)
				return false;
		return true;
	}
	if (c[i].ours && c[i].limit > 0) {
		if ((long long)i >= c[i].limit)
			return false;
		for (size_t k = 0; k < i; k++)
			if (!c[k].ours || c[k].limit != c[i].limit)
				return false;
		return true;
	}
	return i == 0;
}

long zk_contender_mode(const struct zk_contender *c)
{
	if (c->shared)
		return -1;
	return c->ours ? c->limit : 0;
}

long zk_waits_for(const struct zk_contender *c, size_t n, size_t i)
{
	if (i == 0 || i >= n)
		return -1;
	if (c[i].shared) {
		for (size_t k = i; k-- > 0;)
			if (!c[k].shared)
				return (long)k;
		return -1;
	}
	if (c[i].ours && c[i].limit > 0)
		return -1;
	return (long)i - 1;
}

int zk_name_prefix(const char *guid, long limit, long long timeout_ms,
		   char *out, size_t outlen)
{
	char mode[24];
	int len;

	if (limit > 0)
		snprintf(mode, sizeof mode, "l%ld", limit);
	else
		snprintf(mode, sizeof mode, "%s", limit < 0 ? "s" : "x");
	len = snprintf(out, outlen, "-%.*s-%s-%lld%s", ZK_GUID_LEN, guid, mode,
		       timeout_ms, limit < 0 ? "__rlock__" : "__lock__");
	return len > 0 && (size_t)len < outlen ? 0 : -1;
}

bool zk_name_has_guid(const char *name, const char *guid)
{
	return name[0] == '-' && strncmp(name + 1, guid, ZK_GUID_LEN) == 0 &&
	       name[1 + ZK_GUID_LEN] == '-';
}

const char *zk_event_token(const struct zk_contender *c, char *out, size_t len)
{
	if (!c->ours)
		return c->name;
	snprintf(out, len, "%.*s", ZK_GUID_LEN, c->name + 1);
	return out;
}

size_t zk_node_info(const char *data, int len, long long *timeout_ms)
{
	const char *nul = len > 0 ? memchr(data, '\0', (size_t)len) : NULL;
	static const char key[] = "timeout_ms=";
	size_t n = nul ? (size_t)(nul - data) : len > 0 ? (size_t)len : 0;
	const char *v = nul ? nul + 1 : NULL;
	size_t vlen = v ? (size_t)len - n - 1 : 0;

	*timeout_ms = -1;
	if (v && vlen > sizeof key - 1 && vlen - (sizeof key - 1) <= 12 &&
	    memcmp(v, key, sizeof key - 1) == 0) {
		long long t = 0;
		size_t i;

		for (i = sizeof key - 1; i < vlen && v[i] >= '0' && v[i] <= '9'; i++)
			t = t * 10 + (v[i] - '0');
		if (i == vlen)
			*timeout_ms = t;
	}
	return n;
}

char *zk_join(const char *dir, const char *name)
{
	char *s;

	if (asprintf(&s, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name) < 0)
		return NULL;
	return s;
}

const char *zk_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

void zk_hex(const unsigned char *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

char *zk_lock_path(const char *chroot, const char *prefix, const char *name)
{
	char *s;

	if (asprintf(&s, "%s/%s%s", chroot, prefix, name) < 0)
		return NULL;
	return s;
}

char *zk_history_path(const char *chroot, const char *prefix, const char *name)
{
	char *s;

	if (asprintf(&s, "%s%s/%s%s", chroot, ZK_HISTORY_DIR, prefix, name) < 0)
		return NULL;
	return s;
}

const char *zk_name_invalid(const char *name)
{
	/* A lock's children are its contenders, named by these markers: a
	 * lock named a/x__lock__0 would leave a node that lock a (and
	 * kazoo) takes for a contender ahead of all, for ever */
	if (strstr(name, "__lock__") || strstr(name, "__rlock__"))
		return "'__lock__' and '__rlock__' name the contenders of a lock (kazoo's recipe), not a lock";
	return NULL;
}

char *zk_list_root(const char *chroot, const char *prefix)
{
	const char *slash = strrchr(prefix, '/');
	char *dir;
	size_t len;

	if (asprintf(&dir, "%s/%.*s", chroot, slash ? (int)(slash - prefix) : 0,
		     prefix) < 0)
		return NULL;
	len = strlen(dir);
	if (len > 1 && dir[len - 1] == '/')
		dir[len - 1] = '\0';	/* "/": the root */
	return dir;
}

const char *zk_list_top(const char *chroot, const char *prefix,
			const char *child)
{
	const char *slash = strrchr(prefix, '/');
	const char *tail = slash ? slash + 1 : prefix;
	size_t tlen = strlen(tail);

	if (strncmp(child, tail, tlen) != 0 ||
	    (!slash && strcmp(child, &ZK_HISTORY_DIR[1]) == 0) ||
	    (!slash && !chroot[0] && strcmp(child, "zookeeper") == 0))
		return NULL;
	return child + tlen;
}

int zk_event_seq(const char *name, long long *seq)
{
	if (strncmp(name, ZK_EVENT_PREFIX, 2) != 0 || strlen(name) != 12 ||
	    strspn(name + 2, "0123456789") != 10)
		return -1;
	*seq = strtoll(name + 2, NULL, 10);
	return 0;
}
