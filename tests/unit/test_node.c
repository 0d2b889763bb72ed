/* test_node.c - node.c looks a server's name up once, before the first
 * round, and never where no_resolve is set (the renewal thread). This
 * program's getaddrinfo() stands in for the C library's, which node.o,
 * linked in statically, then calls: it counts the lookups, and knows one
 * name, "db.test", as 127.0.0.1. The connections go to a port nobody
 * listens on; what counts is which lookups were made. */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "clock.h"
#include "node.h"
#include "tap.h"

static int n_lookups;

int getaddrinfo(const char *host, const char *service,
		const struct addrinfo *hints, struct addrinfo **res)
{
	struct {
		struct addrinfo ai;
		struct sockaddr_in in;
	} *r;

	n_lookups++;
	if (strcmp(host, "db.test") != 0)
		return EAI_NONAME;
	r = calloc(1, sizeof *r);
	if (!r)
		return EAI_MEMORY;
	r->in.sin_family = AF_INET;
	r->in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	r->ai.ai_family = AF_INET;
	r->ai.ai_socktype = SOCK_STREAM;
	r->ai.ai_addr = (struct sockaddr *)&r->in;
	r->ai.ai_addrlen = sizeof r->in;
	*res = &r->ai;
	return 0;
}

void freeaddrinfo(struct addrinfo *res)
{
	free(res);
}

static struct url u;
static struct node n;

/* A free loopback port: bound, never listened on, so connecting to it is
 * refused. Kept bound so nobody else takes it meanwhile. */
static int refused_port(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t len = sizeof in;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&in, sizeof in) < 0 ||
	    getsockname(fd, (struct sockaddr *)&in, &len) < 0)
		return -1;
	return ntohs(in.sin_port);
}

/* setup("redis://h:", port, "/m", ...): a node for "redis://h:PORT/m" */
static void setup(const char *pre, int port, const char *post, bool no_resolve)
{
	char s[128], err[256];

	snprintf(s, sizeof s, "%s%d%s", pre, port, post);
	if (url_parse(s, &u, err, sizeof err) < 0)
		diag("%s: %s", s, err);
	node_init(&n, &u, NULL);
	n.no_resolve = no_resolve;
	n_lookups = 0;
}

/* One round's start; the node's state or error afterwards. */
static void begin(void)
{
	static const char *argv[] = { "PING" };
	static const struct cmd ping = { NULL, 1, argv, NULL };

	node_end(&n);
	node_close(&n);
	node_begin(&n, &ping, 1, clock_now_ms() + 1000);
}

static bool failed_with(const char *words)
{
	return n.state == NODE_FAILED && n.err.exit == 69 &&
	       strstr(n.err.msg, words) != NULL;
}

int main(void)
{
	int port = refused_port();

	if (!ok(port > 0, "a free port (%s)", strerror(errno)))
		return done_testing();

	setup("redis://127.0.0.1:", port, "", false);
	node_resolve(&n);
	begin();
	begin();
	ok(n_lookups == 0, "an address is never looked up (%d lookups)", n_lookups);

	setup("redis://db.test:", port, "", false);
	node_resolve(&n);
	ok(n_lookups == 1 && u.addr.len > 0, "a name is looked up once, at start");
	begin();
	begin();
	n.no_resolve = true;
	begin();
	ok(n_lookups == 1, "then every connect uses its address (%d lookups)", n_lookups);
	ok(n.state != NODE_FAILED || strstr(n.err.msg, "refused"),
	   "and gets as far as connecting (%s)", n.err.msg);

	setup("redis://nowhere.test:", port, "", false);
	node_resolve(&n);
	begin();
	ok(n_lookups == 1, "a name that does not resolve: not looked up again at once");
	ok(failed_with("cannot resolve nowhere.test: "), "69, \"%s\"", n.err.msg);
	begin();
	ok(n_lookups == 2, "the main thread's next try looks again (%d lookups)", n_lookups);

	setup("redis://nowhere.test:", port, "", true);
	begin();
	begin();
	ok(n_lookups == 0, "no_resolve: no lookup ever (%d)", n_lookups);
	ok(failed_with("cannot resolve nowhere.test: not resolved before the lease started"),
	   "no_resolve: 69, \"%s\"", n.err.msg);

	setup("redis-sentinel://nowhere.test:", port, "/mymaster", true);
	begin();
	ok(n_lookups == 0 && failed_with("sentinel nowhere.test:"),
	   "no_resolve: nor for a sentinel (%d lookups, \"%s\")", n_lookups, n.err.msg);

	setup("redis-sentinel://db.test:", port, "/mymaster", false);
	node_resolve(&n);
	n.no_resolve = true;
	begin();
	ok(n_lookups == 1 && failed_with("sentinel db.test:") &&
	   strstr(n.err.msg, "refused"),
	   "a sentinel resolved at start is reached by address (%d lookups, \"%s\")",
	   n_lookups, n.err.msg);

	node_end(&n);
	node_close(&n);

	{
		static const char sha[] = "30c08b77f046cc48dac35bc03b6059d868097571";
		/* as embed.py maps them: a 30-line header, wake.lua (16 lines)
		 * included at the body's line 20 */
		static const struct script_line lines[] = {
			{ 1, "acquire.lua", 32 }, { 20, "lib/wake.lua", 1 },
			{ 36, "acquire.lua", 52 }, { 0, NULL, 0 },
		};
		const struct script acquire = { .name = "acquire", .lines = lines };
		const struct script release = { .name = "release" };
		const struct script *const ac = &acquire, *const rel = &release;
		char in[512], out[512];

		snprintf(in, sizeof in, "WRONGTYPE Operation against a key holding the wrong kind of value script: %s, on @user_script:13.", sha);
		node_script_error(in, ac, out, sizeof out);
		ok(strcmp(out, "WRONGTYPE Operation against a key holding the wrong kind of value (acquire script, line 44)") == 0,
		   "Redis 7: no SHA-1, the script and its file's line instead (%s)", out);
		snprintf(in, sizeof in, "ERR Error running script (call to f_%s): @user_script:13: WRONGTYPE Operation against a key holding the wrong kind of value", sha);
		node_script_error(in, ac, out, sizeof out);
		ok(strcmp(out, "WRONGTYPE Operation against a key holding the wrong kind of value (acquire script, line 44)") == 0,
		   "Redis 6: unwrapped, no SHA-1 (%s)", out);
		snprintf(in, sizeof in, "ERR bad thing script: %s, on @user_script:24.", sha);
		node_script_error(in, ac, out, sizeof out);
		ok(strcmp(out, "ERR bad thing (acquire script, lib/wake.lua line 5)") == 0,
		   "a line of an included file: that file's line (%s)", out);
		snprintf(in, sizeof in, "ERR bad thing script: %s, on @user_script:40.", sha);
		node_script_error(in, ac, out, sizeof out);
		ok(strcmp(out, "ERR bad thing (acquire script, line 56)") == 0,
		   "after the include: the script's own line again (%s)", out);
		snprintf(in, sizeof in, "OOM command not allowed when used memory > 'maxmemory'. script: %s, on @user_script:23.", sha);
		node_script_error(in, rel, out, sizeof out);
		ok(strcmp(out, "OOM command not allowed when used memory > 'maxmemory'. (release script, line 23)") == 0,
		   "OOM: no SHA-1 (%s)", out);
		node_script_error("WRONGTYPE dlock:K is a hash, not a lock", ac, out, sizeof out);
		ok(strcmp(out, "WRONGTYPE dlock:K is a hash, not a lock") == 0,
		   "the script's own error is left as it is (%s)", out);
		snprintf(in, sizeof in, "ERR Error running script (call to f_%s): @user_script:1: @user_script: 1: -READONLY You can't write against a read only replica.", sha);
		node_script_error(in, ac, out, sizeof out);
		ok(strcmp(out, "READONLY You can't write against a read only replica. (acquire script, line 32)") == 0,
		   "Redis 6, a redis.call() error: unwrapped twice (%s)", out);
		node_script_error("ERR Error running script (call to f_x): @user_script:1: READONLYISH",
				  ac, out, sizeof out);
		ok(strcmp(out, "ERR Error running script (call to f_x): @user_script:1: READONLYISH") == 0,
		   "Redis 6 form without a SHA-1: left as it is (%s)", out);
		node_script_error("ERR bad script: thing", ac, out, sizeof out);
		ok(strcmp(out, "ERR bad script: thing") == 0,
		   "' script: ' without a SHA-1 is left as it is (%s)", out);
	}
	return done_testing();
}
