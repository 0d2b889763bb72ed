/* test_node.c - conn.c looks a server's name up once, before the first
 * round, and never where no_resolve is set (the renewal thread); a name's
 * addresses are tried in turn, past one that refuses or drops SYNs, for
 * the lock's own connections, a sentinel's and a MOVED's target. This
 * program's getaddrinfo() stands in for the C library's, which node.o and
 * net.o, linked in statically, then call: it counts the lookups, and knows
 * a few names (known[] below), each with its addresses in order. A thread
 * answers as a Redis server and a sentinel would on 127.0.0.1; the other
 * addresses refuse (127.0.0.2) or drop SYNs (127.0.0.3, a listener whose
 * accept queue is full). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "clock.h"
#include "fanout.h"
#include "conn.h"
#include "tap.h"

static int n_lookups;

static const struct {
	const char *name;
	const char *ips[3];
} known[] = {
	{ "db.test", { "127.0.0.1" } },
	{ "two.test", { "127.0.0.2", "127.0.0.1" } },	/* the first refuses */
	{ "drop.test", { "127.0.0.3", "127.0.0.1" } },	/* the first is silent */
	{ "dead.test", { "127.0.0.2", "127.0.0.3" } },	/* neither answers */
};

struct fake_ai {
	struct addrinfo ai;
	struct sockaddr_in in;
};

int getaddrinfo(const char *host, const char *service,
		const struct addrinfo *hints, struct addrinfo **res)
{
	struct addrinfo *head = NULL, **tail = &head;

	n_lookups++;
	for (size_t k = 0; k < sizeof known / sizeof *known; k++) {
		if (strcmp(host, known[k].name) != 0)
			continue;
		for (int i = 0; i < 3 && known[k].ips[i]; i++) {
			struct fake_ai *r = calloc(1, sizeof *r);

			if (!r) {
				freeaddrinfo(head);
				return EAI_MEMORY;
			}
			r->in.sin_family = AF_INET;
			r->in.sin_port = htons((uint16_t)(service ? atoi(service) : 0));
			inet_pton(AF_INET, known[k].ips[i], &r->in.sin_addr);
			r->ai.ai_family = AF_INET;
			r->ai.ai_socktype = SOCK_STREAM;
			r->ai.ai_addr = (struct sockaddr *)&r->in;
			r->ai.ai_addrlen = sizeof r->in;
			*tail = &r->ai;
			tail = &r->ai.ai_next;
		}
		*res = head;
		return 0;
	}
	return EAI_NONAME;
}

void freeaddrinfo(struct addrinfo *res)
{
	while (res) {
		struct addrinfo *next = res->ai_next;

		free(res);	/* the first member of its struct fake_ai */
		res = next;
	}
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

	node_end(&n);	/* the last test's replies and connection */
	node_close(&n);
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

/* A listener on ip:port (port 0: any free one, then in *port). */
static int listener(const char *ip, int *port, int backlog)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)*port) };
	socklen_t len = sizeof in;
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, ip, &in.sin_addr);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (struct sockaddr *)&in, sizeof in) < 0 || listen(fd, backlog) < 0 ||
	    getsockname(fd, (struct sockaddr *)&in, &len) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(in.sin_port);
	return fd;
}

/* A listener on ip:port that drops SYNs: backlog 0, its accept queue full
 * of connections nobody accepts. Returns 0, or -1. */
static int silent(const char *ip, int port)
{
	struct net_addrs a;
	char why[200];
	int fd = listener(ip, &port, 0);

	/* no getaddrinfo(): this program's knows names only */
	if (fd < 0 || url_numeric_addr(ip, port, &a) < 0)
		return -1;
	for (int i = 0; i < 16; i++) {
		int c;

		if (net_dial(&a, clock_now_ms() + 300, &c, why, sizeof why) < 0)
			return 0;	/* timed out: the queue is full */
	}
	return -1;
}

static int live_fd, live_port;

/* What a Redis server and a sentinel answer to what arrived on c: +PONG
 * to each PING, and to SENTINEL MASTER a master on 127.0.0.1 at this very
 * port. Returns false when c is done with. */
static bool answer(int c, const char *master)
{
	char buf[4096];
	ssize_t r = read(c, buf, sizeof buf - 1);
	bool ok_write = r > 0;

	if (r <= 0)
		return false;
	buf[r] = '\0';
	for (const char *p = buf; ok_write && (p = strstr(p, "PING")); p += 4)
		ok_write = write(c, "+PONG\r\n", 7) == 7;
	if (ok_write && strstr(buf, "SENTINEL"))
		ok_write = write(c, master, strlen(master)) == (ssize_t)strlen(master);
	return ok_write;
}

/* The server on 127.0.0.1: any number of connections at once. */
static void *serve(void *arg)
{
	struct pollfd p[64] = { { live_fd, POLLIN, 0 } };
	char port[8], master[160];
	nfds_t n_p = 1;

	snprintf(port, sizeof port, "%d", live_port);
	snprintf(master, sizeof master,
		 "*4\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n$%zu\r\n%s\r\n",
		 strlen(port), port);
	while (poll(p, n_p, -1) >= 0) {
		for (nfds_t i = n_p; i-- > 1;)
			if (p[i].revents && !answer(p[i].fd, master)) {
				close(p[i].fd);
				p[i] = p[--n_p];
			}
		if ((p[0].revents & POLLIN) && n_p < 64) {
			int c = accept(live_fd, NULL, NULL);

			if (c >= 0)
				p[n_p++] = (struct pollfd){ c, POLLIN, 0 };
		}
	}
	return NULL;
}

/* A round of one PING on n, as the lock's rounds go (fanout.c); whether
 * +PONG came back from 127.0.0.1 (the second address of every name
 * that has two), in *ms how long it took. */
static bool pong(int64_t timeout_ms, int64_t *ms)
{
	static const char *argv[] = { "PING" };
	static const struct cmd ping = { NULL, 1, argv, NULL };
	struct sockaddr_in peer;
	socklen_t len = sizeof peer;
	int64_t start_ms = clock_now_ms();
	bool answered;

	node_close(&n);
	answered = fanout_round(&n, 1, &ping, 1, timeout_ms) == 1 &&
		   n.replies[0]->type == REDIS_REPLY_STATUS &&
		   strcmp(n.replies[0]->str, "PONG") == 0 &&
		   getpeername(node_fd(&n), (struct sockaddr *)&peer, &len) == 0 &&
		   peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK);
	*ms = clock_now_ms() - start_ms;
	if (!answered)
		diag("no PONG: %s", n.err.msg);
	return answered;
}

/* A name's addresses in turn: the first refuses, or is silent, and the
 * next answers; the renewal thread (no_resolve) too, with the addresses
 * looked up before. */
static void test_addresses(void)
{
	char want[200];
	int64_t ms = 0;
	bool answered;

	setup("redis://two.test:", live_port, "", false);
	node_resolve(&n);
	ok(u.addr.n == 2, "every address of a name is kept (%zu)", u.addr.n);
	answered = pong(2000, &ms);
	ok(answered, "the first address refuses: the second answers (%lld ms)",
	   (long long)ms);
	n.no_resolve = true;
	ok(pong(2000, &ms) && n_lookups == 1,
	   "on the renewal thread too, with no lookup (%d lookups)", n_lookups);

	setup("redis://drop.test:", live_port, "", false);
	node_resolve(&n);
	answered = pong(2000, &ms);
	ok(answered && ms >= NET_ADDR_MIN_MS && ms < 1900,
	   "the first address is silent: the second answers after its share of "
	   "the round's 2 s (%lld ms)", (long long)ms);

	setup("redis://dead.test:", live_port, "", false);
	node_resolve(&n);
	snprintf(want, sizeof want, "127.0.0.2:%d: connection refused, 127.0.0.3:%d: "
		 "connection timed out", live_port, live_port);
	answered = pong(1000, &ms);
	ok(!answered && failed_with(want) && ms < 1500,
	   "no address answers: 69, each address's words (%s)", n.err.msg);

	/* a BLPOP's round has no deadline: its connect still has one */
	setup("redis://dead.test:", live_port, "", false);
	node_resolve(&n);
	n.connect_ms = 600;
	{
		static const char *argv[] = { "BLPOP", "k", "0" };
		static const struct cmd blpop = { NULL, 3, argv, NULL };
		int64_t start_ms = clock_now_ms();

		node_begin(&n, &blpop, 1, INT64_MAX);
		while (n.state == NODE_BUSY && clock_now_ms() - start_ms < 3000) {
			struct pollfd p = { node_fd(&n), node_events(&n), 0 };

			poll(&p, 1, clock_poll_ms(node_wake_ms(&n) - clock_now_ms()));
			if (p.revents)
				node_step(&n, p.revents);
			node_check_deadline(&n, clock_now_ms());
		}
		ms = clock_now_ms() - start_ms;
	}
	ok(failed_with("connection timed out") && ms < 1500,
	   "a round without a deadline: its connect gives up after connect_ms (%lld ms, %s)",
	   (long long)ms, n.err.msg);
	node_end(&n);
	node_close(&n);

	/* a sentinel by name: the same; the master it names is 127.0.0.1 */
	setup("redis-sentinel://two.test:", live_port, "/m", false);
	node_resolve(&n);
	ok(pong(2000, &ms), "a sentinel's first address refuses: the second answers");
	setup("redis-sentinel://drop.test:", live_port, "/m", false);
	node_resolve(&n);
	answered = pong(2000, &ms);
	ok(answered, "a sentinel's first address is silent: the second answers (%lld ms)",
	   (long long)ms);

	/* a MOVED naming a host: all its addresses */
	setup("redis://127.0.0.1:", live_port, "", false);
	{
		struct cluster_round round = { .n_redirects = 0 };
		const struct cluster_conn conn = { &u, -1, false, "" };
		struct net_addrs a;
		struct error err = { 0 };
		char moved[64], text[80], host[256];

		snprintf(moved, sizeof moved, "MOVED 42 two.test:%d", live_port);
		snprintf(want, sizeof want, "two.test:%d", live_port);
		a.n = 0;
		answered = cluster_redirect(&round, &conn, moved, &err) == CLUSTER_FOLLOW &&
			   cluster_target(&round, &u, &a, text, sizeof text, host,
					  sizeof host);
		ok(answered && a.n == 2 && strcmp(text, want) == 0 &&
		   strcmp(host, "two.test") == 0,
		   "MOVED to a name: its %zu addresses, shown as %s", a.n, answered ? text : "");
		ok(pong(2000, &ms) && strcmp(n.via, want) == 0,
		   "and the round goes there: the first refuses, the second answers (via %s)",
		   n.via);
		cluster_drop(&u);
	}
	node_end(&n);
	node_close(&n);
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
	ok(n_lookups == 1 && u.addr.n > 0, "a name is looked up once, at start");
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

	live_port = 0;
	live_fd = listener("127.0.0.1", &live_port, 16);
	if (ok(live_fd >= 0 && silent("127.0.0.3", live_port) == 0,
	       "a listener on 127.0.0.1, a silent one on 127.0.0.3, port %d", live_port)) {
		pthread_t t;

		pthread_create(&t, NULL, serve, NULL);
		pthread_detach(t);
		test_addresses();
	}

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
