/* test_config.c - config_parse (src/configfile.h), config_parse_servers */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "configfile.h"
#include "tap.h"
#include "url.h"

static struct config_file cf;
static char err[256];
static char buf[1024];

static int parse(const char *text)
{
	memset(&cf, 0, sizeof cf);
	err[0] = '\0';
	strcpy(buf, text);
	return config_parse(buf, strlen(buf), &cf, err, sizeof err);
}

static int is(const char *got, const char *want)
{
	return got && strcmp(got, want) == 0;
}

/* refused TEXT LINE: config_parse fails with "LINE: ..." in err */
static void refused(const char *what, const char *text, int line)
{
	char want[16];
	int r = parse(text);

	snprintf(want, sizeof want, "%d:", line);
	ok(r == -1 && strncmp(err, want, strlen(want)) == 0,
	   "%s: refused at line %d (err \"%s\")", what, line, err);
}

static struct url *urls;
static const struct engine *engine;

/* config_split_servers() then config_parse_servers(), as config.c runs
 * them: urls the Redis engine's parsed URLs. */
static int servers(const char *list, size_t max, size_t *n)
{
	char *texts[8];
	void *parsed = NULL;
	int r;

	if (engine && urls)
		engine_free_servers(engine, urls, 0);
	urls = NULL;
	*n = 0;
	r = config_split_servers(list, texts, max, n, err, sizeof err);
	if (r == 0)
		r = config_parse_servers(texts, *n, &engine, &parsed, err, sizeof err);
	for (size_t i = 0; i < *n; i++)
		free(texts[i]);
	urls = parsed;
	return r;
}

/* How many URLs config_split_servers() finds in list; -1 refused. No
 * engine is asked to parse them: a module's are not loaded here. */
static int split_n(const char *list)
{
	char *texts[8];
	size_t n = 0;
	int r;

	err[0] = '\0';
	r = config_split_servers(list, texts, 8, &n, err, sizeof err);

	for (size_t i = 0; i < n; i++)
		free(texts[i]);
	return r < 0 ? -1 : (int)n;
}

int main(void)
{
	size_t n;

	ok(parse("# dlock settings\n"
		 "\n"
		 "servers = redis://a:1, redis://b:2\n"
		 "prefix=jobs:\n"
		 "   \n"
		 "# ttl = 99\n"
		 "ttl =  7  \n"
		 "password-file = /etc/dlock.pw\n"
		 "tls-ca = /etc/ssl/redis-ca.pem\n"
		 "tls-cert = /etc/dlock/client.crt\n"
		 "tls-key = /etc/dlock/client.key\n"
		 "tls-insecure = no\n"
		 "node-timeout = 0.2") == 0, "a full file parses (%s)", err);
	ok(is(cf.tls_ca, "/etc/ssl/redis-ca.pem") && is(cf.tls_cert, "/etc/dlock/client.crt") &&
	   is(cf.tls_key, "/etc/dlock/client.key") && is(cf.tls_insecure, "no"),
	   "tls-ca, tls-cert, tls-key, tls-insecure");
	ok(is(cf.servers, "redis://a:1, redis://b:2"), "servers (got \"%s\")",
	   cf.servers ? cf.servers : "(null)");
	ok(is(cf.prefix, "jobs:"), "prefix without spaces around '='");
	ok(is(cf.ttl, "7"), "ttl, spaces around the value trimmed (got \"%s\")",
	   cf.ttl ? cf.ttl : "(null)");
	ok(is(cf.password_file, "/etc/dlock.pw"), "password-file");
	ok(is(cf.node_timeout, "0.2"), "node-timeout on a last line without newline");

	ok(parse("") == 0 && !cf.servers && !cf.prefix && !cf.ttl &&
	   !cf.password_file && !cf.node_timeout, "an empty file sets nothing");
	ok(parse("# only\n\n# comments\n") == 0 && !cf.servers && !cf.ttl,
	   "comments and blank lines set nothing");
	ok(parse("ttl = 5\n") == 0 && is(cf.ttl, "5") && !cf.servers && !cf.prefix,
	   "unset keys stay NULL");
	ok(parse("prefix =\n") == 0 && is(cf.prefix, ""), "an empty value (empty prefix)");
	ok(parse("servers = redis://:a=b@h\n") == 0 && is(cf.servers, "redis://:a=b@h"),
	   "a value may contain '='");

	refused("unknown key", "servers = unix:/x\n\ncolour = blue\n", 3);
	refused("no '='", "# c\njust words\n", 2);
	refused("duplicate key", "ttl = 1\nprefix = a\n\nttl = 2\n", 4);
	refused("empty key", "= 5\n", 1);
	refused("unknown key on line 1", "serverz = unix:/x\n", 1);
	refused("empty servers", "ttl = 5\nservers =\n", 2);
	refused("empty servers, blanks only", "servers =  \t\n", 1);
	refused("empty ttl", "# c\n\nttl=\n", 3);
	refused("empty password-file", "password-file =\n", 1);

	/* Values: their form is checked where the file says them. */
	refused("ttl with a comment after it", "ttl=5 # seconds\n", 1);
	refused("servers with a comment after it", "\nservers = unix:/a\t# the local one\n", 2);
	refused("tls-insecure maybe", "# c\ntls-insecure = maybe\n", 2);
	refused("ttl soon", "ttl = soon\n", 1);
	refused("ttl below the minimum", "ttl = 0.001\n", 1);
	refused("node-timeout 0", "prefix = p\nnode-timeout = 0\n", 2);
	refused("history -1", "history = -1\n", 1);
	refused("min-hold 1e3", "min-hold = 1e3\n", 1);
	refused("unavailable RUN", "unavailable = RUN\n", 1);
	refused("a bad server URL", "ttl = 5\n\nservers = http://x\n", 3);
	ok(parse("password-file = /etc/dlock#1.pw\nservers = redis://:p#w@h\n") == 0 &&
	   is(cf.password_file, "/etc/dlock#1.pw") && is(cf.servers, "redis://:p#w@h"),
	   "a '#' within a value is the value's (%s)", err);
	ok(parse("ttl = 0.2\nnode-timeout = 0.005\nhistory = 0\nmin-hold = 0\n"
		 "unavailable = run\ntls-insecure = yes\n") == 0,
	   "the smallest and the word values parse (%s)", err);

	/* A NUL byte: refused on its line, not the line cut short there. */
	memset(&cf, 0, sizeof cf);
	memcpy(buf, "ttl = 5\nprefix = a\0junk\n", 25);
	ok(config_parse(buf, 25, &cf, err, sizeof err) == -1 && strncmp(err, "2: ", 3) == 0 &&
	   strstr(err, "NUL"), "a NUL byte is refused on its line (err \"%s\")", err);
	memcpy(buf, "\0", 1);
	ok(config_parse(buf, 1, &cf, err, sizeof err) == -1 && strncmp(err, "1: ", 3) == 0,
	   "a NUL byte alone (err \"%s\")", err);

	ok(servers("unix:/a,unix:/b", 4, &n) == 0 &&
	   n == 2 && strcmp(urls[0].path, "/a") == 0 && strcmp(urls[1].path, "/b") == 0,
	   "servers split on a comma (%s)", err);
	ok(servers("unix:/a, redis://h:7 ,unix:/c", 4, &n) == 0 &&
	   n == 3 && urls[1].kind == URL_TCP && urls[1].port == 7 &&
	   strcmp(urls[2].path, "/c") == 0, "servers split on commas with blanks (%s)", err);
	ok(servers("unix:/a unix:/b\tunix:/c", 4, &n) == 0 &&
	   n == 3 && strcmp(urls[2].path, "/c") == 0, "servers split on blanks (%s)", err);
	ok(servers("  unix:/a  ", 4, &n) == 0 &&
	   n == 1 && strcmp(urls[0].path, "/a") == 0, "leading and trailing blanks (%s)", err);
	ok(servers("unix:/a,http://x", 4, &n) == -1 &&
	   err[0] != '\0', "a bad URL in the list is refused (%s)", err);
	ok(servers("unix:/a,unix:/b,unix:/c", 2, &n) == -1,
	   "more servers than max are refused (%s)", err);
	ok(servers("redis-sentinel://h1:26379,h2:26380/mymaster", 4, &n) == 0 &&
	   n == 1 && urls[0].kind == URL_SENTINEL && urls[0].n_sentinels == 2 &&
	   urls[0].sentinels[1].port == 26380 && strcmp(urls[0].master, "mymaster") == 0,
	   "a sentinel URL's commas stay in it (%s)", err);
	ok(servers("unix:/a,redis-sentinel://h1,h2:7/m,unix:/c redis-sentinel://h3/n", 4, &n) == 0 &&
	   n == 4 && urls[1].n_sentinels == 2 && strcmp(urls[1].master, "m") == 0 &&
	   strcmp(urls[2].path, "/c") == 0 && urls[3].n_sentinels == 1 &&
	   strcmp(urls[3].master, "n") == 0,
	   "a list splits between sentinel URLs and others (%s)", err);
	ok(servers("rediss-sentinel://h1,h2:7/m,rediss://h3", 4, &n) == 0 &&
	   n == 2 && urls[0].tls && urls[0].n_sentinels == 2 && strcmp(urls[0].master, "m") == 0 &&
	   urls[1].tls && urls[1].kind == URL_TCP,
	   "a rediss-sentinel:// URL's commas stay in it too (%s)", err);
	ok(servers("redis+cluster://h1:7000,h2:7001,redis://h3 unix:/x", 4, &n) == 0 &&
	   n == 3 && urls[0].n_seeds == 2 && urls[0].seeds[1].port == 7001 &&
	   urls[1].kind == URL_TCP && urls[1].n_seeds == 0 && strcmp(urls[1].host, "h3") == 0 &&
	   strcmp(urls[2].path, "/x") == 0,
	   "a cluster URL's commas stay in it, up to the next URL (%s)", err);
	ok(servers("unix:/a,rediss+cluster://h1,h2,h3", 4, &n) == 0 && n == 2 && urls[1].tls && urls[1].n_seeds == 3,
	   "a rediss+cluster:// URL last in a list keeps its seeds (%s)", err);
	ok(servers("redis-sentinel://h1,h2", 4, &n) == -1 &&
	   strstr(err, "master name") != NULL,
	   "a sentinel URL without its master is refused whole (%s)", err);

	ok(split_n("zks://z1:2181,z2:2181/jobs,etcds://e1,e2 mysql://m1,mariadb://m2") == 4,
	   "each engine's table says which URLs name several hosts: zks:// too (%s)", err);
	ok(split_n("postgresql://p1,p2/app,zk://z1,z2,etcd://e1,e2") == 3,
	   "a list splits between several-host URLs of other engines (%s)", err);

	return done_testing();
}
