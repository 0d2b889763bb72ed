/* test_zookeeper.c - zk:// URLs, znode paths, a lock's paths, contender
 * and event names, and who of them holds (src/zookeeper/url.h, names.h) */
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "tap.h"
#include "url.h"

static void url_ok(const char *s, const char *hosts, const char *chroot,
		   const char *user, const char *password, const char *text)
{
	struct zk_url u;
	char why[256] = "";
	int r = zk_url_parse(s, &u, why, sizeof why);

	ok(r == 0 && strcmp(u.hosts, hosts) == 0 && strcmp(u.chroot, chroot) == 0 &&
	   strcmp(u.user, user) == 0 && strcmp(u.password, password) == 0 &&
	   strcmp(u.text, text) == 0,
	   "%s: hosts %s, chroot '%s', user '%s', text %s (got %d %s '%s' '%s' %s; %s)",
	   s, hosts, chroot, user, text, r, u.hosts, u.chroot, u.user, u.text, why);
}

static void url_bad(const char *s, const char *why_part)
{
	struct zk_url u;
	char why[256] = "";

	ok(zk_url_parse(s, &u, why, sizeof why) < 0 && strstr(why, why_part) &&
	   !strstr(why, "sekrit"),
	   "%s refused: %s (got '%s')", s, why_part, why);
}

static void path_is(const char *path, bool valid)
{
	const char *why = zk_path_invalid(path);

	ok((why == NULL) == valid, "path '%s' %s (%s)", path, valid ? "valid" : "refused",
	   why ? why : "valid");
}

/* name: contender? shared? ours? limit, seq */
static void name_is(const char *name, int contender, bool shared, bool ours,
		    long limit, long long seq)
{
	struct zk_contender c;
	int r = zk_contender_parse(name, &c);

	if (!contender) {
		ok(r < 0, "'%s' is no contender", name);
		return;
	}
	ok(r == 0 && c.shared == shared && c.ours == ours && c.limit == limit &&
	   c.seq == seq, "'%s': shared %d ours %d limit %ld seq %lld (got %d: %d %d %ld %lld)",
	   name, shared, ours, limit, seq, r, c.shared, c.ours, c.limit, c.seq);
}

/* got (malloc'd, freed here) is want */
static void str_is(char *got, const char *want, const char *what)
{
	ok(got && strcmp(got, want) == 0, "%s: %s (got %s)", what, want,
	   got ? got : "NULL");
	free(got);
}

/* zk_list_top(chroot, prefix, child): want, or NULL */
static void top_is(const char *chroot, const char *prefix, const char *child,
		   const char *want)
{
	const char *got = zk_list_top(chroot, prefix, child);

	ok(want ? got && strcmp(got, want) == 0 : !got,
	   "listing '%s' with prefix '%s' under '%s': %s (got %s)", child, prefix,
	   chroot, want ? want : "passed over", got ? got : "passed over");
}

/* event name: its sequence number, or -1 for none of ours */
static void event_is(const char *name, long long want)
{
	long long seq = -1;
	int r = zk_event_seq(name, &seq);

	ok(want < 0 ? r < 0 : r == 0 && seq == want, "event '%s': %lld (got %d, %lld)",
	   name, want, r, seq);
}

static void paths(void)
{
	static const unsigned char bytes[] = { 0x00, 0xab, 0xff };
	char hex[7];

	str_is(zk_lock_path("", "dlock:", "nightly"), "/dlock:nightly", "lock path");
	str_is(zk_lock_path("/jobs", "dlock:", "a/b"), "/jobs/dlock:a/b",
	       "lock path, chroot");
	str_is(zk_lock_path("/jobs", "", "x"), "/jobs/x", "lock path, no prefix");
	str_is(zk_history_path("", "dlock:", "nightly"), "/.dlock-history/dlock:nightly",
	       "history path");
	str_is(zk_history_path("/jobs", "", "x"), "/jobs/.dlock-history/x",
	       "history path, chroot, no prefix");
	/* with a prefix, no lock's znode is in the history's tree, whatever
	 * its name */
	str_is(zk_lock_path("", "dlock:", ".dlock-history/x"), "/dlock:.dlock-history/x",
	       "a lock named like the history");
	ok(zk_name_invalid("a/x__lock__0") && zk_name_invalid("x__rlock__") &&
	   strstr(zk_name_invalid("x__lock__"), "contenders"),
	   "a contender's marker names no lock");
	ok(!zk_name_invalid("nightly") && !zk_name_invalid("lock") &&
	   !zk_name_invalid("_lock_"), "other names do");

	str_is(zk_list_root("", "dlock:"), "/", "listing from the root");
	str_is(zk_list_root("/jobs", "dlock:"), "/jobs", "listing from the chroot");
	str_is(zk_list_root("/jobs", "team/dlock:"), "/jobs/team",
	       "listing from the prefix's node");
	str_is(zk_list_root("", "team/"), "/team", "a prefix that ends in '/'");
	top_is("", "dlock:", "dlock:nightly", "nightly");
	top_is("", "dlock:", "other", NULL);
	top_is("", "", "nightly", "nightly");
	top_is("", "", "zookeeper", NULL);	/* ZooKeeper's own */
	top_is("/c", "", "zookeeper", "zookeeper");
	top_is("", "", ".dlock-history", NULL);
	top_is("/c", "", ".dlock-history", NULL);
	top_is("", "team/", ".dlock-history", ".dlock-history");

	event_is("e-0000000042", 42);
	event_is("e-9999999999", 9999999999LL);
	event_is("e-000000004", -1);
	event_is("e-00000000042", -1);
	event_is("e-00000000x2", -1);
	event_is("f-0000000042", -1);
	event_is("-" "0123456789abcdef0123456789abcdef" "-x-1__lock__0000000001", -1);

	str_is(zk_join("/", "x"), "/x", "joined to the root");
	str_is(zk_join("/a", "x"), "/a/x", "joined");
	ok(strcmp(zk_base_name("/a/b"), "b") == 0 && strcmp(zk_base_name("b"), "b") == 0,
	   "base names");
	zk_hex(bytes, sizeof bytes, hex);
	ok(strcmp(hex, "00abff") == 0, "hex: %s", hex);
}

#define G "0123456789abcdef0123456789abcdef"

/* holds "x s x": which of them hold, as 1/0 */
static void holds_are(const char *const *names, size_t n, const char *want)
{
	struct zk_contender c[8];
	char got[9] = "";

	for (size_t i = 0; i < n; i++)
		zk_contender_parse(names[i], &c[i]);
	zk_contenders_sort(c, n);
	for (size_t i = 0; i < n; i++)
		got[i] = zk_holds(c, n, i) ? '1' : '0';
	got[n] = '\0';
	ok(strcmp(got, want) == 0, "holders %s (got %s), first %s", want, got, c[0].name);
}

/* zk:// URLs: what each says, and what is refused */
static void urls(void)
{
	url_ok("zk://127.0.0.1:2181", "127.0.0.1:2181", "", "", "", "zk://127.0.0.1:2181");
	url_ok("zk://a,b:2182,c", "a:2181,b:2182,c:2181", "", "", "", "zk://a,b:2182,c");
	url_ok("zk://[::1]:2181/x/y", "::1:2181", "/x/y", "", "", "zk://[::1]:2181/x/y");
	url_ok("zk://ann:p%40ss@h/apps", "h:2181", "/apps", "ann", "p@ss",
	       "zk://ann:***@h/apps");
	url_ok("zk://ann:p@ss@h", "h:2181", "", "ann", "p@ss", "zk://ann:***@h");
	url_ok("zk://ann@h/", "h:2181", "", "ann", "", "zk://ann@h");
	url_bad("zks://h", "without TLS");
	url_bad("zk://h?tls=1", "no options");
	url_bad("zk://", "missing host");
	url_bad("zk://h:0", "bad port");
	url_bad("zk://h:65536", "bad port");
	url_bad("zk://h,", "empty host");
	url_bad("zk://a,,b", "empty host");
	url_bad("zk://h//x", "chroot");
	/* a trailing slash, as a directory is written: the same chroot */
	url_ok("zk://h/jobs/", "h:2181", "/jobs", "", "", "zk://h/jobs");
	url_ok("zk://h/a/b/", "h:2181", "/a/b", "", "", "zk://h/a/b");
	url_bad("zk://h/x//", "chroot");
	url_bad("zk://h//", "chroot");
	url_bad("zk://h/./x", "chroot");
	url_bad("zk://:sekrit@h", "bad user");
	url_bad("zk://h%20x", "bad character");
	url_bad("zk://[::1", "unclosed");
}

/* znode paths, then a lock's paths (paths()) */
static void znode_paths(void)
{
	path_is("/", true);
	path_is("/dlock:nightly", true);
	path_is("/a/b c/d", true);
	path_is("/caf\xc3\xa9", true);
	path_is("dlock", false);
	path_is("/a//b", false);
	path_is("/a/", false);
	path_is("/a/..", false);
	path_is("/a\tb", false);
	path_is("/\xc2\x85", false);		/* U+0085, a C1 control */
	path_is("/\xef\xbf\xbf", false);	/* U+FFFF */
	path_is("/\xff", false);		/* not UTF-8 */
	paths();
}

/* contender names: kazoo's, Curator's, dlock's; the rest no contender */
static void contender_names(void)
{
	name_is("d497841334f14e218f8ea6ff8e167eb2__lock__0000000007", 1, false, false, 0, 7);
	name_is("d497841334f14e218f8ea6ff8e167eb2__rlock__0000000008", 1, true, false, 0, 8);
	name_is("_c_0f3e1a42-8a8b-4c2d-9e3f-000000000000-lock-0000000009", 1, false, false, 0, 9);
	name_is("-" G "-x-30000__lock__0000000010", 1, false, true, 0, 10);
	name_is("-" G "-s-9000__rlock__0000000011", 1, true, true, 0, 11);
	name_is("-" G "-l3-9000__lock__0000000012", 1, false, true, 3, 12);
	name_is("-" G "-x-9000__lock__-000000013", 1, false, true, 0, -13);
	name_is("-" G "-s-9000__lock__0000000014", 1, false, false, 0, 14);	/* s needs rlock */
	name_is("-" G "-l0-9000__lock__0000000015", 1, false, false, 0, 15);
	name_is("x__lock__000000001", 0, 0, 0, 0, 0);
	name_is("x__lock__00000000012", 0, 0, 0, 0, 0);
	name_is("e-0000000001", 0, 0, 0, 0, 0);
	name_is("x__lock__0000000001x", 0, 0, 0, 0, 0);
}

/* who of the contenders holds, in what mode, and whom a waiter waits for */
static void holders(void)
{
	{
		const char *n[] = { "-" G "-x-1__lock__0000000002", "k__rlock__0000000001",
				    "k__rlock__0000000003" };
		holds_are(n, 3, "100");	/* sorted: r1 x2 r3 */
	}
	{
		const char *n[] = { "a__rlock__0000000001", "b__rlock__0000000002",
				    "c__lock__0000000003", "d__rlock__0000000004" };
		holds_are(n, 4, "1100");
	}
	{
		const char *n[] = { "-" G "-l2-1__lock__0000000001",
				    "-" G "-l2-1__lock__0000000002",
				    "-" G "-l2-1__lock__0000000003" };
		holds_are(n, 3, "110");
	}
	{
		const char *n[] = { "k__lock__0000000001", "-" G "-l2-1__lock__0000000002" };
		holds_are(n, 2, "10");	/* an exclusive one before a --limit one */
	}
	{
		/* --limit 3 never beside --limit 2 holders (nor after them) */
		const char *n[] = { "-" G "-l2-1__lock__0000000001",
				    "-" G "-l3-1__lock__0000000002",
				    "-" G "-l2-1__lock__0000000003" };
		holds_are(n, 3, "100");
	}
	{
		const char *n[] = { "-" G "-l3-1__lock__0000000001",
				    "-" G "-l3-1__lock__0000000002",
				    "-" G "-l2-1__lock__0000000003" };
		holds_are(n, 3, "110");
	}
	{
		struct zk_contender c[5];
		const char *n[] = { "-" G "-s-1__rlock__0000000001", "k__rlock__0000000002",
				    "-" G "-l4-1__lock__0000000003", "-" G "-x-1__lock__0000000004",
				    "k__lock__0000000005" };
		const long want[] = { -1, -1, 4, 0, 0 };

		for (int i = 0; i < 5; i++) {
			zk_contender_parse(n[i], &c[i]);
			ok(zk_contender_mode(&c[i]) == want[i], "mode of %s: %ld (got %ld)",
			   n[i], want[i], zk_contender_mode(&c[i]));
		}
	}
	{
		/* the sequence number alone orders, not the name */
		const char *n[] = { "z__lock__0000000005", "a__lock__0000000006",
				    "_c_q-lock-0000000004" };
		holds_are(n, 3, "100");
	}
	{
		struct zk_contender c[3];
		const char *n[] = { "x__lock__0000000001", "r__rlock__0000000002",
				    "s__rlock__0000000003" };

		for (int i = 0; i < 3; i++)
			zk_contender_parse(n[i], &c[i]);
		ok(zk_waits_for(c, 3, 2) == 0, "a reader waits for the writer before it, not the reader");
		ok(zk_waits_for(c, 3, 1) == 0, "the next reader too");
	}
}

/* the names dlock makes, the history's tokens, a holder's node data */
static void our_names(void)
{
	char prefix[128];

	ok(zk_name_prefix(G, 0, 30000, prefix, sizeof prefix) == 0 &&
	   strcmp(prefix, "-" G "-x-30000__lock__") == 0, "exclusive prefix %s", prefix);
	ok(zk_name_prefix(G, -1, 9000, prefix, sizeof prefix) == 0 &&
	   strcmp(prefix, "-" G "-s-9000__rlock__") == 0, "shared prefix %s", prefix);
	ok(zk_name_prefix(G, 5, 9000, prefix, sizeof prefix) == 0 &&
	   strcmp(prefix, "-" G "-l5-9000__lock__") == 0, "limit prefix %s", prefix);
	ok(zk_name_has_guid("-" G "-x-1__lock__0000000001", G), "our GUID found");
	ok(!zk_name_has_guid(G "__lock__0000000001", G), "kazoo's name is not ours");

	{
		/* history names dlock's contenders by their GUID, others by name */
		struct zk_contender c;
		char tok[ZK_GUID_LEN + 1];

		zk_contender_parse("-" G "-x-1__lock__0000000001", &c);
		ok(strcmp(zk_event_token(&c, tok, sizeof tok), G) == 0, "event token: the GUID");
		zk_contender_parse("k__lock__0000000001", &c);
		ok(strcmp(zk_event_token(&c, tok, sizeof tok), "k__lock__0000000001") == 0,
		   "event token: kazoo's node name");
	}
	{
		/* a holder's node data: the info, then what dlock extend wrote */
		static const char ext[] = "h\t1\tu\t2\tcmd\0timeout_ms=30000";
		static const char bad[] = "h\t1\tu\t2\tcmd\0timeout_ms=3x";
		long long t;

		ok(zk_node_info("h\t1\tu\t2\tcmd", 11, &t) == 11 && t == -1, "info alone");
		ok(zk_node_info(ext, sizeof ext - 1, &t) == 11 && t == 30000,
		   "info and timeout (got %lld)", t);
		ok(zk_node_info(bad, sizeof bad - 1, &t) == 11 && t == -1, "a bad timeout: none");
		ok(zk_node_info("", 0, &t) == 0 && t == -1, "no data");
		ok(zk_node_info("x", -1, &t) == 0 && t == -1, "no data at all (-1)");
	}
}

int main(void)
{
	urls();
	znode_paths();
	contender_names();
	holders();
	our_names();
	return done_testing();
}
