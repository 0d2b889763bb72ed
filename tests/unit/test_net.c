/* test_net.c - net.c on real sockets: names resolved to every address, a
 * dial that walks them past addresses that refuse (a closed port) or
 * drop SYNs (a listener whose accept queue is full), blocking and from a
 * poll loop, and the words when none connects. No /etc/hosts needed:
 * address lists are numeric or built by hand. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "clock.h"
#include "net.h"
#include "tap.h"

/* A listener on family's loopback, any port; backlog as given. */
static int listener(int family, int backlog, int *port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;

		s->sin6_family = AF_INET6;
		s->sin6_addr = in6addr_loopback;
		len = sizeof *s;
	} else {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;

		s->sin_family = AF_INET;
		s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof *s;
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, backlog) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
		      ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* A port where nothing listens (bound, closed). */
static int closed_port(int family)
{
	int port = 0, fd = listener(family, 1, &port);

	if (fd < 0)
		return -1;
	close(fd);
	return port;
}

static int held[16], n_held;

/* A listener that drops SYNs: backlog 0, its accept queue filled by
 * connections nobody accepts, so that the next SYN goes unanswered. */
static int dropping(int *port)
{
	int fd = listener(AF_INET, 0, port);
	struct net_addrs a;
	char why[200];

	if (fd < 0 || net_resolve("127.0.0.1", *port, AF_UNSPEC, &a, why, sizeof why) < 0)
		return -1;
	while (n_held < 16) {
		int c;

		if (net_dial(&a, clock_now_ms() + 300, &c, why, sizeof why) < 0)
			return fd;	/* timed out: the queue is full */
		held[n_held++] = c;
	}
	return -1;
}

static void add(struct net_addrs *a, const char *ip, int port)
{
	struct net_addrs one;
	char why[200];

	if (net_resolve(ip, port, AF_UNSPEC, &one, why, sizeof why) == 0 &&
	    a->n < NET_ADDRS_MAX)
		a->addr[a->n++] = one.addr[0];
}

static int peer_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
		     ((struct sockaddr_in *)&ss)->sin_port);
}

static void test_resolve(bool v6)
{
	struct net_addrs a;
	char why[200], text[64];

	ok(net_resolve("127.0.0.1", 2379, AF_UNSPEC, &a, why, sizeof why) == 0 &&
	   a.n == 1 && strcmp(net_addr_text(&a.addr[0], text, sizeof text),
			      "127.0.0.1:2379") == 0, "a numeric IPv4 address: one, with its port");
	if (v6)
		ok(net_resolve("::1", 2379, AF_UNSPEC, &a, why, sizeof why) == 0 &&
		   a.n == 1 && strcmp(net_addr_text(&a.addr[0], text, sizeof text),
				      "[::1]:2379") == 0, "a numeric IPv6 address, bracketed");
	ok(net_resolve("localhost", 1, AF_UNSPEC, &a, why, sizeof why) == 0 && a.n >= 1,
	   "localhost: %zu address(es)", a.n);
	ok(net_resolve("127.0.0.1", 1, AF_INET6, &a, why, sizeof why) < 0,
	   "an IPv4 address asked as IPv6: none");
	ok(net_resolve("no-such-host.invalid", 1, AF_UNSPEC, &a, why, sizeof why) < 0 &&
	   strncmp(why, "cannot resolve no-such-host.invalid: ", 37) == 0,
	   "a name that does not resolve says so: %s", why);
}

static void test_blocking(bool v6, int live_port, int refused4, int refused6,
			  int drop_port)
{
	struct net_addrs a = { .n = 0 };
	char why[300], want[300];
	int fd = -1;
	int64_t start_ms;

	/* localhost as a host with ::1 refusing and 127.0.0.1 listening */
	if (v6)
		add(&a, "::1", refused6);
	add(&a, "127.0.0.1", refused4);
	add(&a, "127.0.0.1", live_port);
	ok(net_dial(&a, clock_now_ms() + 2000, &fd, why, sizeof why) == 0 &&
	   peer_port(fd) == live_port, "refusing addresses first: the listening one connects");
	close(fd);

	a.n = 0;
	add(&a, "127.0.0.1", drop_port);
	add(&a, "127.0.0.1", live_port);
	start_ms = clock_now_ms();
	ok(net_dial(&a, start_ms + 2000, &fd, why, sizeof why) == 0 &&
	   peer_port(fd) == live_port, "an address that drops SYNs first: the next connects");
	ok(clock_now_ms() - start_ms < 2000,
	   "in time: the silent address got its share, not the deadline (%lld ms)",
	   (long long)(clock_now_ms() - start_ms));
	close(fd);

	a.n = 0;
	add(&a, "127.0.0.1", refused4);
	ok(net_dial(&a, clock_now_ms() + 1000, &fd, why, sizeof why) < 0 &&
	   strcmp(why, "connection refused") == 0, "one address refusing: %s", why);
	add(&a, "127.0.0.1", refused4);
	snprintf(want, sizeof want, "connection refused (127.0.0.1:%d, 127.0.0.1:%d)",
		 refused4, refused4);
	ok(net_dial(&a, clock_now_ms() + 1000, &fd, why, sizeof why) < 0 &&
	   strcmp(why, want) == 0, "two refusing, the same words: %s", why);
	a.n = 1;
	add(&a, "127.0.0.1", drop_port);
	snprintf(want, sizeof want, "127.0.0.1:%d: connection refused, 127.0.0.1:%d: connection timed out",
		 refused4, drop_port);
	ok(net_dial(&a, clock_now_ms() + 600, &fd, why, sizeof why) < 0 &&
	   strcmp(why, want) == 0, "each its own words: %s", why);

	a.n = 0;
	add(&a, "127.0.0.1", drop_port);
	add(&a, "127.0.0.1", drop_port);
	add(&a, "127.0.0.1", live_port);
	ok(net_dial(&a, clock_now_ms() + 300, &fd, why, sizeof why) < 0 &&
	   strstr(why, "; 1 more address not tried in time"),
	   "a deadline too short for every address: %s", why);
}

/* As an event loop drives it: poll the attempt's descriptor, step on
 * its events or at its wake-up time. */
static void test_loop(int live_port, int refused4, int drop_port)
{
	struct net_addrs a = { .n = 0 };
	struct net_dial d;
	char why[300];
	int fd = -1, r, steps = 0;
	size_t polled = 0;	/* the addresses whose attempt was polled */

	add(&a, "127.0.0.1", refused4);
	add(&a, "127.0.0.1", drop_port);
	add(&a, "127.0.0.1", live_port);
	net_dial_start(&d, &a, clock_now_ms() + 3000);
	while ((r = net_dial_step(&d, &fd, why, sizeof why)) == 0 && steps++ < 100) {
		struct pollfd p = { d.fd, POLLOUT, 0 };

		polled |= (size_t)1 << d.at;
		poll(&p, 1, clock_poll_ms(net_dial_wake_ms(&d) - clock_now_ms()));
	}
	ok(r == 1 && peer_port(fd) == live_port && d.fd == -1,
	   "from a poll loop: connected to the third address, the dial owns nothing");
	ok(d.errs[0] == ECONNREFUSED && d.errs[1] == ETIMEDOUT,
	   "the first refused, the second timed out (%d, %d)", d.errs[0], d.errs[1]);
	ok(polled & 2, "the loop polled the second address's attempt (%#zx)", polled);
	close(fd);

	net_dial_start(&d, &a, clock_now_ms() + 3000);
	net_dial_step(&d, &fd, why, sizeof why);
	net_dial_step(&d, &fd, why, sizeof why);
	net_dial_end(&d);
	net_dial_end(&d);
	ok(d.fd == -1, "given up: nothing left open");
}

int main(void)
{
	int live_port = 0, drop_port = 0, v6_port = 0;
	int live = listener(AF_INET, 16, &live_port), v6 = listener(AF_INET6, 1, &v6_port);
	int drop = dropping(&drop_port);
	int refused4 = closed_port(AF_INET), refused6 = v6 >= 0 ? closed_port(AF_INET6) : -1;

	if (live < 0 || drop < 0 || refused4 < 0) {
		printf("1..0 # SKIP no loopback listeners here\n");
		return 0;
	}
	if (v6 < 0)
		diag("no IPv6 loopback: its cases left out");
	test_resolve(v6 >= 0);
	test_blocking(v6 >= 0 && refused6 > 0, live_port, refused4, refused6, drop_port);
	test_loop(live_port, refused4, drop_port);
	for (int i = 0; i < n_held; i++)
		close(held[i]);
	close(drop);
	close(live);
	if (v6 >= 0)
		close(v6);
	return done_testing();
}
