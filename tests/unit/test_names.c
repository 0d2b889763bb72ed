/* test_names.c - a lock's Redis keys (src/redis/names.h): on every key of a
 * small alphabet, no accepted lock key is another lock's side key, no two
 * accepted locks share a side key, and a lock's side keys hash to its
 * Redis Cluster slot; and the names of issue 26 are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "names.h"
#include "tap.h"

/* Pieces the keys are made of: braces, separators and tails. */
static const char *const pieces[] = {
	"a", "{", "}", ":a", ":fence", ":queue", ":info", ":slots", ":0",
};
#define N_PIECES (sizeof pieces / sizeof pieces[0])
#define MAX_PIECES 5

/* Every tail a side key gets (rlock_init(), the scripts' :slots:i,
 * :wake:TOKEN and :notice:TOKEN, :queue:info). */
static const char *const tails[] = {
	":fence", ":owner", ":mode", ":queue", ":queue:info", ":alive",
	":ticket", ":slots", ":slots:0", ":slots:12", ":wake", ":wake:0a1b",
	":writers", ":history", ":notice:0a1b",
};
#define N_TAILS (sizeof tails / sizeof tails[0])

struct side {
	char *key;
	size_t owner;	/* index of the lock key */
};

/* What Redis Cluster hashes of k: its tag, or all of it. */
static void hashed(const char *k, const char **at, size_t *len)
{
	const char *open = strchr(k, '{'), *close = open ? strchr(open + 1, '}') : NULL;

	if (close && close > open + 1) {
		*at = open + 1;
		*len = (size_t)(close - open - 1);
	} else {
		*at = k;
		*len = strlen(k);
	}
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct side *)a)->key, ((const struct side *)b)->key);
}

/* Every string of 1 to MAX_PIECES pieces. */
static char **all_keys(size_t *n)
{
	size_t cap = 0, count = 1;
	char **keys;

	for (int len = 1; len <= MAX_PIECES; len++)
		cap += (count *= N_PIECES);
	keys = calloc(cap, sizeof *keys);
	for (int len = 1; len <= MAX_PIECES; len++) {
		size_t idx[MAX_PIECES] = { 0 };

		for (;;) {
			char buf[128] = "";
			int d;

			for (int k = 0; k < len; k++)
				strcat(buf, pieces[idx[k]]);
			keys[(*n)++] = strdup(buf);
			for (d = len - 1; d >= 0 && ++idx[d] == N_PIECES; d--)
				idx[d] = 0;
			if (d < 0)
				break;
		}
	}
	return keys;
}

static void examples(void)
{
	static const struct { const char *key; int ok; } cases[] = {
		{ "dlock:nightly", 0 }, { "dlock:{app}:x", 0 }, { "x", 0 },
		{ "a{b", 0 }, { "{}", -1 }, { "dlock:{}x", -1 },
		{ "dlock:{app}:x:fence", -1 }, { "dlock:{app}:x:queue:info", -1 },
		{ "dlock:{app}:x:slots:3", -1 }, { "dlock:{app}:x:notice:ab", -1 },
		{ "dlock:{app}:queue", -1 }, { "{dlock:x}:fence", -1 },
		{ "{x}", -1 }, { "{a{b}", -1 }, { "a}b", -1 },
		{ "dlock:{app}:x:fences", 0 }, { "dlock:nightly:fence", 0 },
		{ "dlock:{app}x", 0 }, { "{x}y", 0 },
	};
	char why[512];

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ok(keys_check(cases[i].key, why, sizeof why) == cases[i].ok,
		   "%s: %s", cases[i].key, cases[i].ok ? "refused" : "a lock key");
	keys_check("dlock:{app}:x:fence", why, sizeof why);
	ok(strstr(why, "'dlock:{app}:x:fence' is the ':fence' key dlock keeps beside the lock 'dlock:{app}:x'") != NULL,
	   "the refusal says whose key it is: %s", why);
	keys_check("{dlock:x}:fence", why, sizeof why);
	ok(strstr(why, "is the ':fence' key dlock keeps beside the lock 'dlock:x'") != NULL,
	   "and of a lock without a tag: %s", why);
}

int main(void)
{
	size_t n_keys = 0, n_ok = 0, n_sides = 0;
	char **keys = all_keys(&n_keys), **locks;
	struct side *sides;
	size_t bad_lock = 0, bad_shared = 0, bad_slot = 0;
	char why[512];

	examples();
	locks = calloc(n_keys, sizeof *locks);
	for (size_t i = 0; i < n_keys; i++)
		if (keys_check(keys[i], why, sizeof why) == 0)
			locks[n_ok++] = keys[i];
	qsort(locks, n_ok, sizeof *locks, by_str);
	sides = calloc(n_ok * N_TAILS, sizeof *sides);
	for (size_t i = 0; i < n_ok; i++)
		for (size_t t = 0; t < N_TAILS; t++) {
			char *s = keys_derived(locks[i], tails[t]);
			const char *ha, *hb;
			size_t la, lb;

			hashed(locks[i], &ha, &la);
			hashed(s, &hb, &lb);
			if ((la != lb || memcmp(ha, hb, la) != 0) && bad_slot++ < 3)
				diag("%s: side key %s in another slot", locks[i], s);
			if (bsearch(&s, locks, n_ok, sizeof *locks, by_str) &&
			    bad_lock++ < 3)
				diag("%s: side key %s is a lock key", locks[i], s);
			if (!keys_is_side(s, strlen(s), ""))
				ok(0, "%s is not told as a side key", s);
			sides[n_sides++] = (struct side){ s, i };
		}
	qsort(sides, n_sides, sizeof *sides, by_key);
	for (size_t i = 1; i < n_sides; i++)
		if (strcmp(sides[i].key, sides[i - 1].key) == 0 &&
		    sides[i].owner != sides[i - 1].owner && bad_shared++ < 3)
			diag("%s and %s share %s", locks[sides[i].owner],
			     locks[sides[i - 1].owner], sides[i].key);
	diag("%zu keys, %zu of them lock keys, %zu side keys", n_keys, n_ok, n_sides);
	ok(n_ok > n_keys / 2, "most keys are lock keys (%zu of %zu)", n_ok, n_keys);
	ok(bad_lock == 0, "no lock key is another lock's side key (%zu)", bad_lock);
	ok(bad_shared == 0, "no two locks share a side key (%zu)", bad_shared);
	ok(bad_slot == 0, "every side key is in its lock's slot (%zu)", bad_slot);
	for (size_t i = 0; i < n_sides; i++)
		free(sides[i].key);
	for (size_t i = 0; i < n_keys; i++)
		free(keys[i]);
	free(sides);
	free(locks);
	free(keys);
	return done_testing();
}
