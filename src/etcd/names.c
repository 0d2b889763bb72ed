/* names.c - a lock's NAME as etcd's keys, its holders' values, who of
 * the contenders holds (names.h). Pure: no I/O. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "names.h"

/* prefix, then the n bytes of mid, then name and its NUL (kept in the
 * length when with_nul): *len the length. */
static char *joined(const char *prefix, const char *mid, size_t n,
		    const char *name, bool with_nul, size_t *len)
{
	size_t plen = strlen(prefix), nlen = name ? strlen(name) : 0;
	char *k = malloc(plen + n + nlen + 1);

	if (!k)
		return NULL;
	memcpy(k, prefix, plen);
	memcpy(k + plen, mid, n);
	memcpy(k + plen + n, name ? name : "", nlen + 1);
	if (len)
		*len = plen + n + nlen + (with_nul ? 1 : 0);
	return k;
}

char *etcd_name_key(const char *prefix, const char *name)
{
	return joined(prefix, "", 0, name, false, NULL);
}

char *etcd_contenders_of(const char *prefix, const char *name, size_t *len)
{
	char *k = joined(prefix, "", 0, name, false, len);
	char *pfx = k ? realloc(k, *len + 2) : NULL;

	if (!pfx) {
		free(k);
		return NULL;
	}
	memcpy(pfx + *len, "/", 2);
	(*len)++;
	return pfx;
}

char *etcd_history_of(const char *prefix, const char *name, size_t *len)
{
	return joined(prefix, HISTORY_TOP, HISTORY_TOP_LEN, name, true, len);
}

char *etcd_listing_from(const char *prefix, size_t *len)
{
	return joined(prefix, "\1", 1, NULL, false, len);
}

char *etcd_event_key(const char *hist, size_t hist_len, const char *token,
		     const char *kind, size_t *len)
{
	size_t tlen = strlen(token), klen = strlen(kind);
	char *k = malloc(hist_len + tlen + 1 + klen + 1);

	if (!k)
		return NULL;
	memcpy(k, hist, hist_len);
	memcpy(k + hist_len, token, tlen);
	k[hist_len + tlen] = '/';
	memcpy(k + hist_len + tlen + 1, kind, klen + 1);
	*len = hist_len + tlen + 1 + klen;
	return k;
}

/* FNV-1a, then splitmix64's finalizer to spread it. */
int64_t etcd_lease_of(const char *token, const char *name_key)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	int64_t id;

	for (const char *s = token; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	h = (h ^ 0xff) * 0x100000001b3ULL;
	for (const char *s = name_key; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	id = (int64_t)(h & INT64_MAX);
	return id ? id : 1;
}

char *etcd_contender_key(const char *pfx, int64_t lease)
{
	char *k;

	/* %x of an int64, as concurrency.Mutex writes its lease ID */
	if (asprintf(&k, "%s%" PRIx64, pfx, (uint64_t)lease) < 0)
		return NULL;
	return k;
}

int64_t etcd_history_lease_of(const char *name_key, int64_t day)
{
	char salt[48];

	snprintf(salt, sizeof salt, "history %" PRId64, day);
	return etcd_lease_of(salt, name_key);
}

size_t etcd_only_contenders(struct etcd_range *r, size_t pfx_len)
{
	size_t w = 0, n = r->n;

	for (size_t i = 0; i < n; i++) {
		struct etcd_kv *kv = &r->kvs[i];

		if (kv->key_len > pfx_len &&
		    !memchr(kv->key + pfx_len, '/', kv->key_len - pfx_len)) {
			r->kvs[w++] = *kv;
			continue;
		}
		free(kv->key);
		free(kv->value);
	}
	r->n = w;
	if (w == 0) {
		free(r->kvs);
		r->kvs = NULL;
	}
	return n - w;
}

char *etcd_value_of(const char *token, const char *mode, const char *info,
		    size_t *len)
{
	char *v;
	int n = asprintf(&v, VALUE_TAG "%s %s\n%s", token, mode, info);

	*len = n > 0 ? (size_t)n : 0;
	return n < 0 ? NULL : v;
}

bool etcd_value_parse(const char *v, size_t len, struct etcd_value *out)
{
	const char *sp, *nl;

	*out = (struct etcd_value){ 0 };
	if (len < sizeof VALUE_TAG - 1 || memcmp(v, VALUE_TAG, sizeof VALUE_TAG - 1) != 0)
		return false;
	v += sizeof VALUE_TAG - 1;
	len -= sizeof VALUE_TAG - 1;
	if (!(sp = memchr(v, ' ', len)) || sp == v)
		return false;
	if (!(nl = memchr(sp, '\n', len - (size_t)(sp - v))) || nl == sp + 1)
		return false;
	out->token = v;
	out->token_len = (size_t)(sp - v);
	out->mode = sp + 1;
	out->mode_len = (size_t)(nl - sp - 1);
	out->info = nl + 1;
	out->info_len = len - (size_t)(nl + 1 - v);
	if (out->token_len > LOCK_TOKEN_MAX || out->mode_len > 20 ||
	    memchr(out->token, '\n', out->token_len))
		return false;
	if (!(out->mode_len == 1 && (out->mode[0] == 'x' || out->mode[0] == 's')) &&
	    strspn(out->mode, "0123456789") < out->mode_len)
		return false;
	out->ours = true;
	return true;
}

/* 'x', 's', or 'l' with *limit */
static char mode_of(const struct etcd_kv *kv, long *limit, const char **m,
		    size_t *mlen)
{
	struct etcd_value v;

	*limit = 1;
	*m = "";
	*mlen = 0;
	if (!etcd_value_parse(kv->value, kv->value_len, &v) || v.mode[0] == 'x')
		return 'x';
	*m = v.mode;
	*mlen = v.mode_len;
	if (v.mode[0] == 's')
		return 's';
	*limit = 0;
	for (size_t i = 0; i < v.mode_len && *limit < 1000000000L; i++)
		*limit = *limit * 10 + (v.mode[i] - '0');
	return *limit > 0 ? 'l' : 'x';
}

const char *etcd_held_as(const struct etcd_kv *kv, char *buf, size_t len)
{
	long limit;
	const char *m;
	size_t mlen;

	switch (mode_of(kv, &limit, &m, &mlen)) {
	case 's':
		snprintf(buf, len, "shared");
		return buf;
	case 'l':
		snprintf(buf, len, "with --limit %.*s", (int)mlen, m);
		return buf;
	}
	return NULL;
}

bool etcd_mode_clash(const struct etcd_kv *kv, const char *mode, char *held,
		     size_t len)
{
	long limit;
	const char *m;
	size_t mlen;
	char kind = mode_of(kv, &limit, &m, &mlen);

	if (kind == 'x' || (strlen(mode) == mlen && memcmp(mode, m, mlen) == 0))
		return false;
	etcd_held_as(kv, held, len);
	return true;
}

bool etcd_holds(const struct etcd_kv *kvs, size_t n, size_t i, long *blocker)
{
	long limit, l2;
	const char *m, *m2;
	size_t mlen, mlen2;
	char me = mode_of(&kvs[i], &limit, &m, &mlen);

	*blocker = -1;
	for (size_t j = 0; j < i && j < n; j++) {
		char other = mode_of(&kvs[j], &l2, &m2, &mlen2);

		if (me == 'x' || other != me ||
		    (me == 'l' && (mlen != mlen2 || memcmp(m, m2, mlen) != 0)))
			*blocker = (long)j;
	}
	if (*blocker >= 0)
		return false;
	return me == 's' || (long)i < limit;
}
