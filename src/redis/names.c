/* names.c - a lock's Redis keys, and the lock keys that are refused.
 *
 * The lock key is PREFIX NAME, as other clients name theirs (interop);
 * the side keys are "{KEY}:tail", or "KEY:tail" when KEY has a hash tag of
 * its own, so that all of a lock's keys share its Cluster slot. Any string
 * can be a lock key (--prefix ''), so a side key is kept out of the lock
 * keys' way by refusing the lock keys that would meet one:
 *
 * - a key with a hash tag that ends in a tail, "dlock:{app}:x:fence": the
 *   side key of "dlock:{app}:x" (a head with the tag). That covers
 *   "{KEY}:tail" too, whose head "{KEY}" has a tag;
 * - a key that is all hash tag, "{x}": its side keys "{x}:tail" would be
 *   those of the lock "x";
 * - a key with a '}' but no hash tag, "a}b": "{a}b}:fence" hashes "a",
 *   not the lock's slot, and is also the side key of the lock "{a}b}".
 *
 * Then no accepted lock key is a side key: a side key of a tagged KEY is
 * tagged and ends in a tail, one of an untagged KEY (no '}') is
 * "{KEY}:tail", tagged too. And no two accepted locks share a side key:
 * "{KEY}" is refused, and a tagged lock key that extends another by a
 * tail is refused. tests/unit/test_names.c checks this on every key of a
 * small alphabet. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "names.h"

/* Every tail rlock_init() gives a side key; the open ones go on with a
 * token or a slot number. */
static const char *const whole_tails[] = {
	":fence", ":owner", ":mode", ":queue", ":queue:info", ":alive",
	":ticket", ":slots", ":wake", ":writers", ":history", ":notice",
};
static const char *const open_tails[] = { ":slots:", ":wake:", ":notice:" };

#define N_OF(a) (sizeof (a) / sizeof (a)[0])

char *keys_derived(const char *key, const char *suffix)
{
	char *out;

	if (keys_has_tag(key, strlen(key))) {
		if (asprintf(&out, "%s%s", key, suffix) < 0)
			return NULL;
	} else if (asprintf(&out, "{%s}%s", key, suffix) < 0) {
		return NULL;
	}
	return out;
}

bool keys_has_tag(const char *k, size_t n)
{
	const char *open = memchr(k, '{', n);
	const char *close = open ? memchr(open + 1, '}', n - (size_t)(open + 1 - k)) : NULL;

	return close && close > open + 1;
}

bool keys_side_tail(const char *t, size_t n)
{
	for (size_t i = 0; i < N_OF(whole_tails); i++)
		if (n == strlen(whole_tails[i]) && memcmp(t, whole_tails[i], n) == 0)
			return true;
	for (size_t i = 0; i < N_OF(open_tails); i++)
		if (n > strlen(open_tails[i]) &&
		    memcmp(t, open_tails[i], strlen(open_tails[i])) == 0)
			return true;
	return false;
}

static bool under(const char *k, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);

	return n >= p && memcmp(k, prefix, p) == 0;
}

/* Where the tail of a side key "HEAD:tail" with a tagged HEAD begins in
 * k, or 0 when k is none. */
static size_t tagged_head(const char *k, size_t n, const char *prefix)
{
	for (size_t i = 1; i < n; i++)
		if (k[i] == ':' && keys_side_tail(k + i, n - i) &&
		    keys_has_tag(k, i) && under(k, i, prefix))
			return i;
	return 0;
}

bool keys_is_side(const char *k, size_t n, const char *prefix)
{
	/* "{LOCK}tail", for a LOCK without a hash tag */
	for (size_t i = 1; n > 0 && k[0] == '{' && i < n; i++)
		if (k[i] == '}' && keys_side_tail(k + i + 1, n - i - 1) &&
		    under(k + 1, i - 1, prefix) && !keys_has_tag(k + 1, i - 1))
			return true;
	/* "LOCKtail", for a LOCK with one */
	return tagged_head(k, n, prefix) > 0;
}

int keys_check(const char *key, char *why, size_t whylen)
{
	size_t n = strlen(key), at;

	if (!keys_has_tag(key, n)) {
		if (!strchr(key, '}'))
			return 0;
		snprintf(why, whylen, "bad lock name for Redis: its key '%s' has a '}' but no hash tag ({...} around something), so the keys dlock keeps beside it could not share its Redis Cluster slot (see REDIS KEYS in dlock(1))",
			 key);
		return -1;
	}
	if (key[0] == '{' && strchr(key, '}') == key + n - 1) {
		snprintf(why, whylen, "bad lock name for Redis: its key '%s' is all hash tag, so the keys dlock keeps beside it would be those of the lock '%.*s' (see REDIS KEYS in dlock(1))",
			 key, (int)(n - 2), key + 1);
		return -1;
	}
	if ((at = tagged_head(key, n, "")) > 0) {
		/* "{LOCK}:tail" is LOCK's, not the refused "{LOCK}"'s */
		bool braced = key[0] == '{' && strchr(key, '}') == key + at - 1;

		snprintf(why, whylen, "bad lock name for Redis: its key '%s' is the '%s' key dlock keeps beside the lock '%.*s' (see REDIS KEYS in dlock(1))",
			 key, key + at, (int)at - 2 * braced, key + braced);
		return -1;
	}
	return 0;
}
