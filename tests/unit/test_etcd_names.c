/* test_etcd_names.c - where a lock's NAME becomes etcd's keys
 * (src/etcd/names.h): the layout concurrency.Mutex shares, the history's
 * keys beside it, the leases a token names; that no two names meet in
 * one key, one range or one lease; and what a value says of its holder,
 * and who holds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/names.h"
#include "tap.h"

/* Whether key lies in the range of the keys that start with pfx. */
static bool in_range(const char *key, size_t klen, const char *pfx, size_t plen)
{
	return klen >= plen && memcmp(key, pfx, plen) == 0;
}

static const char *const names[] = {
	"a", "a/b", "a/", "a/b/c", "b", "", "ab", "a b", "history/a", "1f",
	"a/1f", "\x01", "/", "//", "\xc3\xa9t\xc3\xa9", "a\\b",
};
#define N_NAMES (sizeof names / sizeof *names)

static void layout(void)
{
	size_t len, hlen, flen;
	char *k = etcd_contenders_of("dlock:", "nightly", &len);
	char *h = etcd_history_of("dlock:", "nightly", &hlen);
	char *key = etcd_contender_key("dlock:nightly/", 0x694d7c8a5e3b2a10LL);
	char *from = etcd_listing_from("dlock:", &flen);

	ok(k && strcmp(k, "dlock:nightly/") == 0, "contenders: PREFIX NAME \"/\" (%s)", k);
	ok(h && hlen == 6 + 9 + 7 + 1 && memcmp(h, "dlock:\0history/nightly\0", hlen) == 0,
	   "history: PREFIX \"\\0history/\" NAME \"\\0\"");
	ok(key && strcmp(key, "dlock:nightly/694d7c8a5e3b2a10") == 0,
	   "a contender's key: the lease in hex, as concurrency.Mutex (%s)", key);
	ok(from && flen == 7 && memcmp(from, "dlock:\1", 7) == 0, "the listing starts at PREFIX \"\\1\"");
	free(k);
	free(key);
	free(from);
	k = etcd_event_key(h, 6 + 9 + 7 + 1, "tok", "acquired", &len);
	ok(k && len == 23 + 12 && memcmp(k, "dlock:\0history/nightly\0tok/acquired", len) == 0,
	   "an event: the history's start TOKEN \"/\" KIND");
	free(k);
	free(h);
	k = etcd_name_key("dlock:", "nightly");
	ok(k && strcmp(k, "dlock:nightly") == 0, "the name key (%s)", k);
	free(k);
}

/* No lock's contender (any lease) lies in another lock's history, nor a
 * history event in any lock's contenders' range, nor one lock's events in
 * another's history; every history sorts before the listing's start. */
static void ranges_apart(void)
{
	int contenders_ok = 1, histories_ok = 1, listing_ok = 1;
	size_t flen;
	char *from = etcd_listing_from("dlock:", &flen);

	for (size_t i = 0; i < N_NAMES; i++) {
		size_t plen, hlen, klen, elen;
		char *pfx = etcd_contenders_of("dlock:", names[i], &plen);
		char *hist = etcd_history_of("dlock:", names[i], &hlen);
		char *key = etcd_contender_key(pfx, 0x1234abcd);
		char *ev = etcd_event_key(hist, hlen, "tok", "released", &elen);

		klen = strlen(key);
		if (memcmp(hist, from, flen) >= 0)
			listing_ok = 0;
		for (size_t j = 0; j < N_NAMES; j++) {
			size_t plen2, hlen2;
			char *pfx2 = etcd_contenders_of("dlock:", names[j], &plen2);
			char *hist2 = etcd_history_of("dlock:", names[j], &hlen2);

			if (in_range(ev, elen, pfx2, plen2) || in_range(key, klen, hist2, hlen2)) {
				diag("\"%s\" and \"%s\": a history key among contenders", names[i], names[j]);
				contenders_ok = 0;
			}
			if (i != j && in_range(ev, elen, hist2, hlen2)) {
				diag("\"%s\"'s event in \"%s\"'s history", names[i], names[j]);
				histories_ok = 0;
			}
			free(pfx2);
			free(hist2);
		}
		free(pfx);
		free(hist);
		free(key);
		free(ev);
	}
	free(from);
	ok(contenders_ok, "%zu names: no history key in a contenders' range, nor back", N_NAMES);
	ok(histories_ok, "%zu names: no lock's events in another's history", N_NAMES);
	ok(listing_ok, "%zu names: every history before the listing's start", N_NAMES);
}

/* A range of PREFIX "a/" holds the contenders of "a/b": only the lock's
 * own are kept. */
static void own_contenders(void)
{
	static const char *const keys[] = {
		"dlock:a/1f", "dlock:a/b/2e", "dlock:a/", "dlock:a/3d", "dlock:a//4c",
	};
	struct etcd_range r = { .n = 5 };
	size_t dropped;

	r.kvs = calloc(5, sizeof *r.kvs);
	for (size_t i = 0; i < 5; i++) {
		r.kvs[i].key = strdup(keys[i]);
		r.kvs[i].key_len = strlen(keys[i]);
		r.kvs[i].value = strdup("");
	}
	dropped = etcd_only_contenders(&r, strlen("dlock:a/"));
	ok(dropped == 3 && r.n == 2 && strcmp(r.kvs[0].key, "dlock:a/1f") == 0 &&
	   strcmp(r.kvs[1].key, "dlock:a/3d") == 0,
	   "\"a\"'s range keeps its own contenders, in order (dropped %zu)", dropped);
	etcd_range_free(&r);
}

/* Leases: one per token and lock; no token and name split alike meet;
 * the history's day lease is no token's. */
static void leases(void)
{
	static const char *const tokens[] = { "ab", "a", "history 20000", "b", "" };
	int64_t seen[N_NAMES * 5 + 2];
	size_t n = 0;
	int distinct = 1, positive = 1;

	for (size_t i = 0; i < N_NAMES; i++)
		for (size_t t = 0; t < 5; t++) {
			char *nk = etcd_name_key("dlock:", names[i]);

			seen[n++] = etcd_lease_of(tokens[t], nk);
			free(nk);
		}
	seen[n++] = etcd_history_lease_of("dlock:a", 20001);
	seen[n++] = etcd_history_lease_of("dlock:a", 20002);
	for (size_t i = 0; i < n; i++) {
		positive &= seen[i] > 0;
		for (size_t j = i + 1; j < n; j++)
			if (seen[i] == seen[j])
				distinct = 0;
	}
	ok(positive, "lease IDs are positive");
	ok(distinct, "%zu (token, lock) pairs and two days: as many leases", n);
	ok(etcd_lease_of("ab", "c") != etcd_lease_of("a", "bc"),
	   "a token and a name split elsewhere: another lease");
	ok(etcd_history_lease_of("dlock:a", 20000) == etcd_lease_of("history 20000", "dlock:a"),
	   "the day's lease is the token \"history DAY\"'s (a token with a space is none of dlock's)");
}

static struct etcd_kv kv_of(const char *value)
{
	return (struct etcd_kv){ .value = (char *)value, .value_len = strlen(value) };
}

static void values(void)
{
	size_t len;
	char *v = etcd_value_of("t0k", "3", "host\t42", &len);
	struct etcd_value p;
	struct etcd_kv kvs[4];
	long blocker;
	char held[40];

	ok(v && etcd_value_parse(v, len, &p) && p.ours && p.token_len == 3 &&
	   memcmp(p.token, "t0k", 3) == 0 && p.mode_len == 1 && p.mode[0] == '3' &&
	   p.info_len == 7 && memcmp(p.info, "host\t42", 7) == 0,
	   "a value reads back as written");
	free(v);
	ok(!etcd_value_parse("", 0, &p) && !p.ours, "etcdctl lock's empty value: foreign");
	ok(!etcd_value_parse("dlock1 t q\ni", 12, &p), "a mode that is none: foreign");
	kvs[0] = kv_of("dlock1 a s\ni");
	kvs[1] = kv_of("dlock1 b s\ni");
	kvs[2] = kv_of("");
	kvs[3] = kv_of("dlock1 c s\ni");
	ok(etcd_holds(kvs, 4, 1, &blocker) && blocker == -1, "shared beside shared holds");
	ok(!etcd_holds(kvs, 4, 2, &blocker) && blocker == 1, "exclusive waits for the one before");
	ok(!etcd_holds(kvs, 4, 3, &blocker) && blocker == 2, "shared waits behind exclusive");
	kvs[0] = kv_of("dlock1 a 2\ni");
	kvs[1] = kv_of("dlock1 b 2\ni");
	kvs[2] = kv_of("dlock1 c 2\ni");
	ok(etcd_holds(kvs, 3, 1, &blocker) && !etcd_holds(kvs, 3, 2, &blocker),
	   "--limit 2: the first two hold");
	ok(etcd_mode_clash(&kvs[0], "3", held, sizeof held) &&
	   strcmp(held, "with --limit 2") == 0 && !etcd_mode_clash(&kvs[0], "2", held, sizeof held),
	   "--limit 3 meets --limit 2 holders: %s", held);
}

int main(void)
{
	layout();
	ranges_apart();
	own_contenders();
	leases();
	values();
	return done_testing();
}
