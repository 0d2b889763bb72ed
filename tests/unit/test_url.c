/* test_url.c - url_parse (src/url.h): every form, and what it refuses;
 * url_digits, url_userinfo (src/urlpart.h): numbers, user info;
 * url_mask (src/urlpart.h): a URL as messages show it */
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "url.h"
#include "urlpart.h"
#include "tap.h"

/* A field of u is a terminated string equal to want (u starts as garbage). */
#define FIELD_IS(f, want) (memchr((f), '\0', sizeof(f)) && strcmp((f), (want)) == 0)

static struct url u;
static char err[256];

static int parse(const char *s)
{
	memset(&u, 0x5a, sizeof u);	/* no field may be left unset */
	err[0] = '\0';
	return url_parse(s, &u, err, sizeof err);
}

static void tcp_ok(const char *s, const char *host, int port, int db,
		   const char *user, const char *password, int has_password)
{
	int r = parse(s);

	ok(r == 0, "%s parses (%s)", s, err);
	if (r != 0)
		return;
	ok(u.kind == URL_TCP, "%s: TCP", s);
	ok(FIELD_IS(u.host, host), "%s: host \"%s\" (got \"%.256s\")", s, host, u.host);
	ok(u.port == port, "%s: port %d (got %d)", s, port, u.port);
	ok(u.db == db, "%s: db %d (got %d)", s, db, u.db);
	ok(FIELD_IS(u.user, user), "%s: user \"%s\" (got \"%.128s\")", s, user, u.user);
	ok(FIELD_IS(u.password, password), "%s: password \"%s\"", s, password);
	ok(!!u.has_password == has_password, "%s: has_password %d", s, has_password);
	if (has_password && password[0] != '\0')
		ok(memchr(u.text, '\0', sizeof u.text) && !strstr(u.text, password),
		   "%s: text masks the password (\"%.512s\")", s, u.text);
}

static void unix_ok(const char *s, const char *path, int db)
{
	int r = parse(s);

	ok(r == 0, "%s parses (%s)", s, err);
	if (r != 0)
		return;
	ok(u.kind == URL_UNIX, "%s: unix", s);
	ok(FIELD_IS(u.path, path), "%s: path \"%s\" (got \"%.108s\")", s, path, u.path);
	ok(u.db == db, "%s: db %d (got %d)", s, db, u.db);
	ok(memchr(u.text, '\0', sizeof u.text) && strstr(u.text, path),
	   "%s: text names the path (\"%.512s\")", s, u.text);
}

static void bad(const char *s)
{
	int r = parse(s);

	ok(r == -1 && err[0] != '\0', "\"%s\" is refused (%s)", s, err);
}

/* url_mask(in) is want, whole, and cut short at every length. */
static void masks(const char *in, const char *want)
{
	char out[512];
	size_t len = url_mask(in, out, sizeof out);
	int cut_ok = 1;

	ok(len == strlen(want) && strcmp(out, want) == 0, "%s masked: %s (got %s, %zu)",
	   in, want, out, len);
	for (size_t n = 0; n <= strlen(want) + 1; n++) {
		char small[512];

		memset(small, 'Z', sizeof small);
		cut_ok &= url_mask(in, small, n) == len && small[n] == 'Z' &&
			  (n == 0 || (strlen(small) == (n - 1 < len ? n - 1 : len) &&
				      strncmp(small, want, strlen(small)) == 0));
	}
	ok(cut_ok, "%s cut short at every length: a prefix of %s, no byte past", in, want);
}

static void mask_tests(void)
{
	masks("postgres://u:x@127.0.0.1:1/db", "postgres://u:***@127.0.0.1:1/db");
	masks("postgres://u:xy@h", "postgres://u:***@h");
	masks("postgres://u:@h/db", "postgres://u:***@h/db");
	masks("postgres://u@h/db", "postgres://u@h/db");
	masks("postgres://h/db", "postgres://h/db");
	masks("postgres:///db?host=/run/pg", "postgres:///db?host=/run/pg");
	masks("postgres://u@h/db?password=x&sslmode=require",
	      "postgres://u@h/db?password=***&sslmode=require");
	masks("postgres://u@h/db?sslmode=require&password=secret",
	      "postgres://u@h/db?sslmode=require&password=***");
	masks("postgres://u@h/db?sslpassword=abc&PassWord=d",
	      "postgres://u@h/db?sslpassword=***&PassWord=***");
	masks("postgres://u@h/db?pass%77ord=abc", "postgres://u@h/db?pass%77ord=***");
	masks("postgres://u@h/db?password", "postgres://u@h/db?password");
	masks("postgres://u@h/db?passwords=a", "postgres://u@h/db?passwords=a");
	/* the last '@' before the first '/': a password with '@', '?', ':' */
	masks("postgres://u:p@ss@h/db", "postgres://u:***@h/db");
	masks("postgres://u:p?x:y@h/db?password=q", "postgres://u:***@h/db?password=***");
	masks("postgres://h?password=a@b", "postgres://h?password=***");
	masks("postgres://h?x=1&password=a:b@c", "postgres://h?x=1&password=***");
	masks("postgres://h?a:bpassword=v@z", "postgres://h?a:***@z");
	masks("postgres://h?password=a:b&c@z", "postgres://h?password=***@z");
	masks("redis://:pw@h:6379/0", "redis://:***@h:6379/0");
	masks("unix:/tmp/redis.sock", "unix:/tmp/redis.sock");
	masks("etcd://ann:s3@h1:2379,h2:2379", "etcd://ann:***@h1:2379,h2:2379");
	masks("", "");
}

/* url_digits: the whole span, digits only, max_digits of them at most. */
static void digits_tests(void)
{
	long long v = -1;

	ok(url_digits("6379", 4, 5, &v) == 0 && v == 6379, "url_digits 6379");
	ok(url_digits("007", 3, 5, &v) == 0 && v == 7, "url_digits 007: leading zeros");
	ok(url_digits("123456789012345678", 18, 18, &v) == 0 &&
	   v == 123456789012345678LL, "url_digits: 18 digits");
	ok(url_digits("1234567890123456789", 19, 19, &v) == -1,
	   "url_digits: 19 digits refused, whatever max_digits");
	ok(url_digits("123456", 6, 5, &v) == -1, "url_digits: more than max_digits");
	ok(url_digits("", 0, 5, &v) == -1, "url_digits: empty refused");
	ok(url_digits("12a", 3, 5, &v) == -1 && url_digits("-1", 2, 5, &v) == -1 &&
	   url_digits(" 1", 2, 5, &v) == -1 && url_digits("+1", 2, 5, &v) == -1,
	   "url_digits: no letter, sign or space");
	ok(url_digits("12x", 2, 5, &v) == 0 && v == 12, "url_digits: [s, s+len) only");
}

/* url_userinfo: user[:password], each decoded, which of them is bad. */
static void userinfo_tests(void)
{
	char user[8], pw[8];

	strcpy(pw, "keep");
	ok(url_userinfo("ann", 3, user, sizeof user, pw, sizeof pw) == 0 &&
	   strcmp(user, "ann") == 0 && strcmp(pw, "keep") == 0,
	   "url_userinfo ann: no password, the password left alone");
	ok(url_userinfo("a%3An:p%40:w", 12, user, sizeof user, pw, sizeof pw) == 1 &&
	   strcmp(user, "a:n") == 0 && strcmp(pw, "p@:w") == 0,
	   "url_userinfo: the first ':' splits, each decoded");
	ok(url_userinfo("ann:", 4, user, sizeof user, pw, sizeof pw) == 1 &&
	   strcmp(pw, "") == 0, "url_userinfo ann: an empty password is one");
	ok(url_userinfo(":pw", 3, user, sizeof user, pw, sizeof pw) == 1 &&
	   strcmp(user, "") == 0 && strcmp(pw, "pw") == 0,
	   "url_userinfo :pw: an empty user, for the caller to judge");
	ok(url_userinfo("a%zz:pw", 7, user, sizeof user, pw, sizeof pw) == -1 &&
	   url_userinfo("12345678", 8, user, sizeof user, pw, sizeof pw) == -1,
	   "url_userinfo: a user that does not decode or fit, -1");
	ok(url_userinfo("ann:%00", 7, user, sizeof user, pw, sizeof pw) == -2 &&
	   strcmp(user, "ann") == 0 &&
	   url_userinfo("ann:12345678", 12, user, sizeof user, pw, sizeof pw) == -2,
	   "url_userinfo: a password that does not decode or fit, -2, the user read");
}

int main(void)
{
	char long_s[400];

	digits_tests();
	userinfo_tests();
	tcp_ok("redis://127.0.0.1", "127.0.0.1", 6379, 0, "", "", 0);
	tcp_ok("redis://localhost:6380", "localhost", 6380, 0, "", "", 0);
	tcp_ok("redis://db.example.com:1/2", "db.example.com", 1, 2, "", "", 0);
	tcp_ok("redis://h:65535/15", "h", 65535, 15, "", "", 0);
	tcp_ok("redis://:s3cr3t@h:7000", "h", 7000, 0, "", "s3cr3t", 1);
	tcp_ok("redis://alice:s3cr3t@h", "h", 6379, 0, "alice", "s3cr3t", 1);
	tcp_ok("redis://alice@h:7000/3", "h", 7000, 3, "alice", "", 0);
	tcp_ok("redis://[::1]", "::1", 6379, 0, "", "", 0);
	tcp_ok("redis://[::1]:6390/2", "::1", 6390, 2, "", "", 0);
	tcp_ok("redis://:pw@[fe80::1:2]:6391", "fe80::1:2", 6391, 0, "", "pw", 1);
	tcp_ok("redis://us%65r:p%40ss%3Aw%25@h", "h", 6379, 0, "user", "p@ss:w%", 1);
	tcp_ok("redis://%61:%2F%3f@h", "h", 6379, 0, "a", "/?", 1);

	/* an address is known at once; a name is looked up later (conn.c) */
	ok(parse("redis://127.0.0.1:6380") == 0 && u.addr.n == 1 &&
	   u.addr.addr[0].len == sizeof(struct sockaddr_in) &&
	   u.addr.addr[0].sa.ss_family == AF_INET &&
	   ((struct sockaddr_in *)&u.addr.addr[0].sa)->sin_port == htons(6380) &&
	   ((struct sockaddr_in *)&u.addr.addr[0].sa)->sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	   "redis://127.0.0.1:6380: address 127.0.0.1 port 6380");
	ok(parse("redis://[::1]") == 0 && u.addr.n == 1 &&
	   u.addr.addr[0].len == sizeof(struct sockaddr_in6) &&
	   u.addr.addr[0].sa.ss_family == AF_INET6 &&
	   ((struct sockaddr_in6 *)&u.addr.addr[0].sa)->sin6_port == htons(6379) &&
	   IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&u.addr.addr[0].sa)->sin6_addr),
	   "redis://[::1]: address ::1 port 6379");
	ok(parse("redis://localhost") == 0 && u.addr.n == 0,
	   "redis://localhost: no address yet");
	ok(parse("redis://127.1") == 0 && u.addr.n == 0,
	   "redis://127.1: not an address to inet_pton, left to the lookup");
	ok(parse("redis-sentinel://10.0.0.1:26379,s2/m") == 0 &&
	   u.sentinels[0].addr.n == 1 && u.sentinels[1].addr.n == 0, "sentinels: an address at once, a name later");
	ok(parse("unix:/tmp/x.sock") == 0 && u.addr.n == 0, "unix: no TCP address");

	unix_ok("unix:/tmp/x.sock", "/tmp/x.sock", 0);
	unix_ok("unix:///tmp/x.sock", "/tmp/x.sock", 0);
	unix_ok("unix:/tmp/x.sock?db=3", "/tmp/x.sock", 3);
	unix_ok("unix:///run/redis/redis.sock?db=12", "/run/redis/redis.sock", 12);

	if (ok(parse("redis-sentinel://h1:26379,h2:26380/mymaster") == 0,
	       "sentinel URL parses (%s)", err)) {
		ok(u.kind == URL_SENTINEL, "sentinel: kind");
		ok(u.n_sentinels == 2, "sentinel: 2 sentinels (got %d)", u.n_sentinels);
		ok(FIELD_IS(u.sentinels[0].host, "h1") && u.sentinels[0].port == 26379,
		   "sentinel: h1:26379");
		ok(FIELD_IS(u.sentinels[1].host, "h2") && u.sentinels[1].port == 26380,
		   "sentinel: h2:26380");
		ok(FIELD_IS(u.master, "mymaster"), "sentinel: master \"mymaster\" (got \"%.128s\")",
		   u.master);
	}

	/* redis+cluster://: seed nodes of one cluster */
	if (ok(parse("redis+cluster://bob:pw@10.0.0.1:7000,h2,[::1]:7002") == 0,
	       "redis+cluster:// with three seeds parses (%s)", err)) {
		ok(u.kind == URL_TCP && u.n_seeds == 3 && !u.tls,
		   "cluster: TCP, three seeds (got %d)", u.n_seeds);
		ok(FIELD_IS(u.host, "10.0.0.1") && u.port == 7000 &&
		   FIELD_IS(u.seeds[0].host, "10.0.0.1") && u.seeds[0].port == 7000 &&
		   u.seeds[0].addr.n == 1 &&
		   u.seeds[0].addr.addr[0].len == sizeof(struct sockaddr_in),
		   "cluster: the first seed is the URL's host, an address at once");
		ok(FIELD_IS(u.seeds[1].host, "h2") && u.seeds[1].port == 6379 &&
		   u.seeds[1].addr.n == 0, "cluster: h2, port 6379, a name looked up later");
		ok(FIELD_IS(u.seeds[2].host, "::1") && u.seeds[2].port == 7002,
		   "cluster: [::1]:7002");
		ok(FIELD_IS(u.user, "bob") && FIELD_IS(u.password, "pw"),
		   "cluster: the credentials, for every seed");
		ok(strcmp(u.text, "redis+cluster://bob:***@10.0.0.1:7000,h2:6379,[::1]:7002") == 0,
		   "cluster: its text masks the password (\"%.512s\")", u.text);
	}
	ok(parse("rediss+cluster://h1:7000/0") == 0 && u.tls && u.n_seeds == 1 && u.db == 0,
	   "rediss+cluster://h1:7000/0: TLS, one seed, database 0");
	ok(parse("redis://h1:7000") == 0 && u.n_seeds == 0, "redis://: no seeds");
	ok(parse("redis+cluster://h1,h2/1") == -1 && strstr(err, "database 0"),
	   "redis+cluster://.../1 refused (%s)", err);
	ok(parse("redis+cluster://h1,,h2") == -1, "an empty seed refused (%s)", err);
	ok(parse("redis+cluster://u:p@h1,u:p@h2") == -1 && strstr(err, "user info"),
	   "user info on a later seed refused (%s)", err);
	ok(parse("redis+cluster://u:p%2Cq@h1:7000,h2") == 0 && FIELD_IS(u.password, "p,q") &&
	   u.n_seeds == 2, "a comma in the password, %%-escaped");
	ok(parse("redis+cluster://u:p@ss@h1,h2") == 0 && FIELD_IS(u.password, "p@ss") &&
	   FIELD_IS(u.host, "h1"), "an '@' in the password: the last one before the seeds");
	ok(parse("redis+cluster://h1,") == -1, "a trailing comma refused (%s)", err);
	ok(parse("redis+cluster://") == -1, "no seed refused (%s)", err);
	ok(parse("redis+cluster://h1,h2:0") == -1, "a bad seed port refused (%s)", err);
	ok(parse("redis+cluster://1,2,3,4,5,6,7,8,9") == -1 && strstr(err, "too many"),
	   "more than 8 seeds refused (%s)", err);

	/* TLS: the same URLs, over TLS; plain ones are not */
	tcp_ok("rediss://alice:pw@[::1]:6390/2", "::1", 6390, 2, "alice", "pw", 1);
	ok(parse("rediss://h:6380/1") == 0 && u.tls == 1 &&
	   strcmp(u.text, "rediss://h:6380/1") == 0,
	   "rediss://h:6380/1: TLS, and its text says so (\"%.512s\")", u.text);
	ok(parse("redis://h") == 0 && u.tls == 0, "redis://h: no TLS");
	ok(parse("unix:/tmp/x.sock") == 0 && u.tls == 0, "unix: no TLS");
	ok(parse("redis-sentinel://h1/m") == 0 && u.tls == 0, "redis-sentinel://: no TLS");
	if (ok(parse("rediss-sentinel://h1:26379,h2/mymaster") == 0 && u.tls == 1,
	       "rediss-sentinel:// parses, with TLS (%s)", err)) {
		ok(u.kind == URL_SENTINEL && u.n_sentinels == 2 &&
		   u.sentinels[1].port == 26379 && FIELD_IS(u.master, "mymaster"),
		   "rediss-sentinel://: the sentinels and the master");
		ok(strcmp(u.text, "rediss-sentinel://h1:26379/mymaster") == 0,
		   "rediss-sentinel://: its text says TLS (\"%.512s\")", u.text);
	}

	bad("");
	bad("redis://");
	bad("redis://:@");
	bad("redis://:pw@");
	bad("redis://h:0");
	bad("redis://h:65536");
	bad("redis://h:99999");
	bad("redis://h:-1");
	bad("redis://h:");
	bad("redis://h:abc");
	bad("redis://h:6379x");
	bad("redis://h/abc");
	bad("redis://h/-1");
	bad("redis://[::1");
	bad("redis://:p%zz@h");
	bad("http://x");
	bad("x");
	bad("127.0.0.1:6379");
	bad("unix:");
	bad("unix:relative/sock");
	bad("unix:/tmp/x?db=x");
	bad("unix:/tmp/x?db=-1");
	bad("redis-sentinel://h1:26379");
	bad("redis-sentinel://h1:0/m");
	bad("redis-sentinel://h1/m?dlock_wait=poll");
	bad("rediss-sentinel://h1/m#x");
	bad("redis-sentinel://h1:1,h2:2,h3:3,h4:4,h5:5,h6:6,h7:7,h8:8,h9:9/m");

	memset(long_s, 0, sizeof long_s);
	strcpy(long_s, "unix:/");
	memset(long_s + 6, 'a', 200);
	bad(long_s);
	memset(long_s, 0, sizeof long_s);
	strcpy(long_s, "redis://");
	memset(long_s + 8, 'h', 300);
	bad(long_s);

	bad("rediss://");
	bad("rediss-sentinel://h1");
	bad("rediss:/h");
	ok(parse("redis://:s3cr3t@h:0") == -1 && !strstr(err, "s3cr3t"),
	   "an error does not echo the password (%s)", err);

	mask_tests();
	return done_testing();
}
