/* net.c - a host name's addresses, and a dial that walks them (net.h). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include "clock.h"
#include "log.h"
#include "net.h"

int net_resolve(const char *host, int port, int family, struct net_addrs *out,
		char *why, size_t whylen)
{
	struct addrinfo hints = {
		.ai_family = family, .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV,
	}, *res, *ai;
	char service[8], reason[128];
	int e;

	out->n = 0;
	snprintf(service, sizeof service, "%d", port);
	if ((e = getaddrinfo(host, service, &hints, &res)) != 0) {
		snprintf(reason, sizeof reason, "%s",
			 e == EAI_SYSTEM ? strerror(errno) : gai_strerror(e));
		log_lower_first(reason);
		snprintf(why, whylen, "cannot resolve %s: %s", host, reason);
		return -1;
	}
	for (ai = res; ai && out->n < NET_ADDRS_MAX; ai = ai->ai_next) {
		struct net_addr *a = &out->addr[out->n];
		bool seen = false;

		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof a->sa)
			continue;
		for (size_t i = 0; i < out->n && !seen; i++)
			seen = out->addr[i].len == ai->ai_addrlen &&
			       memcmp(&out->addr[i].sa, ai->ai_addr, ai->ai_addrlen) == 0;
		if (seen)
			continue;
		memset(a, 0, sizeof *a);
		memcpy(&a->sa, ai->ai_addr, ai->ai_addrlen);
		a->len = ai->ai_addrlen;
		out->n++;
	}
	freeaddrinfo(res);
	if (out->n == 0) {
		snprintf(why, whylen, "cannot resolve %s: no IPv4 or IPv6 address", host);
		return -1;
	}
	return 0;
}

const char *net_addr_text(const struct net_addr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (a->sa.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&a->sa;

		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof ip);
		snprintf(buf, len, "[%s]:%u", ip, ntohs(s->sin6_port));
	} else {
		const struct sockaddr_in *s = (const struct sockaddr_in *)&a->sa;

		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof ip);
		snprintf(buf, len, "%s:%u", ip, ntohs(s->sin_port));
	}
	return buf;
}

void net_dial_start(struct net_dial *d, const struct net_addrs *a,
		    int64_t deadline_ms)
{
	*d = (struct net_dial){ .addrs = a, .fd = -1, .deadline_ms = deadline_ms };
}

void net_dial_end(struct net_dial *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

int64_t net_dial_wake_ms(const struct net_dial *d)
{
	return d->attempt_end_ms;
}

/* The attempt in progress: 1 connected, 0 not yet, -1 failed (*e). */
static int attempt_done(struct net_dial *d, int *e)
{
	struct pollfd p = { d->fd, POLLOUT, 0 };
	socklen_t elen = sizeof *e;
	int n;

	while ((n = poll(&p, 1, 0)) < 0 && errno == EINTR)
		;
	if (n < 0) {
		*e = errno;
		return -1;
	}
	if (n == 0)
		return 0;
	*e = 0;
	if (getsockopt(d->fd, SOL_SOCKET, SO_ERROR, e, &elen) < 0)
		*e = errno;
	return *e ? -1 : 1;
}

/* Starts the attempt on the next address: 1 connected at once, 0 under
 * way, -1 failed at once (recorded). */
static int attempt_start(struct net_dial *d)
{
	const struct net_addr *a = &d->addrs->addr[d->next];
	int64_t now_ms = clock_now_ms(), left_ms = d->deadline_ms - now_ms;
	size_t remaining = d->addrs->n - d->next;
	int one = 1, fd;

	d->at = d->next++;
	/* Each address an equal share of what is left, at least
	 * NET_ADDR_MIN_MS; the last one all of it. */
	if (remaining > 1) {
		int64_t share_ms = left_ms / (int64_t)remaining;

		if (share_ms < NET_ADDR_MIN_MS)
			share_ms = left_ms < NET_ADDR_MIN_MS ? left_ms : NET_ADDR_MIN_MS;
		left_ms = share_ms;
	}
	d->attempt_end_ms = now_ms + (left_ms > 0 ? left_ms : 0);
	fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    IPPROTO_TCP);
	if (fd < 0) {
		d->errs[d->at] = errno;
		return -1;
	}
	/* a request is one write, its answer one read */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	d->fd = fd;
	if (connect(fd, (const struct sockaddr *)&a->sa, a->len) == 0)
		return 1;
	if (errno == EINPROGRESS || errno == EINTR)
		return 0;
	d->errs[d->at] = errno;
	net_dial_end(d);
	return -1;
}

static void lowered(int e, char *buf, size_t len)
{
	snprintf(buf, len, "%s", strerror(e));
	log_lower_first(buf);
}

/* What the addresses tried said: the error alone for one address, or
 * when all said the same, with the addresses; else each its own. */
static void explain(const struct net_dial *d, char *why, size_t whylen)
{
	size_t tried = 0, used = 0;
	bool same = true;
	char text[64], reason[96];

	for (size_t i = 0; i < d->addrs->n; i++)
		if (d->errs[i]) {
			same &= d->errs[i] == d->errs[0];
			tried++;
		}
	if (tried == 0) {
		snprintf(why, whylen, "no address to connect to");
		return;
	}
	if (tried == 1 || same) {
		lowered(d->errs[0], reason, sizeof reason);
		used = (size_t)snprintf(why, whylen, "%s", reason);
	}
	for (size_t i = 0, k = 0; tried > 1 && i < d->addrs->n && used < whylen; i++) {
		if (!d->errs[i])
			continue;
		net_addr_text(&d->addrs->addr[i], text, sizeof text);
		lowered(d->errs[i], reason, sizeof reason);
		if (same)
			used += (size_t)snprintf(why + used, whylen - used, "%s%s%s",
						 k ? ", " : " (", text,
						 k + 1 == tried ? ")" : "");
		else
			used += (size_t)snprintf(why + used, whylen - used, "%s%s: %s",
						 k ? ", " : "", text, reason);
		k++;
	}
	if (tried < d->addrs->n && used < whylen)
		snprintf(why + used, whylen - used, "; %zu more address%s not tried in time",
			 d->addrs->n - tried, d->addrs->n - tried > 1 ? "es" : "");
}

int net_dial_step(struct net_dial *d, int *fd, char *why, size_t whylen)
{
	for (;;) {
		int e = 0, r;

		if (d->fd >= 0) {
			r = attempt_done(d, &e);
			if (r == 0 && clock_now_ms() < d->attempt_end_ms)
				return 0;
			if (r > 0)
				goto connected;
			d->errs[d->at] = r < 0 ? e : ETIMEDOUT;
			net_dial_end(d);
		}
		if (d->next >= d->addrs->n ||
		    (d->next > 0 && clock_now_ms() >= d->deadline_ms)) {
			explain(d, why, whylen);
			return -1;
		}
		r = attempt_start(d);
		if (r > 0)
			goto connected;
		if (r == 0)
			return 0;
	}
connected:
	*fd = d->fd;
	d->fd = -1;
	return 1;
}

/* Per thread: the renewal thread never has one. Once a wait has ended at
 * it, it is disarmed until net_take_stop(): what the try does next (an
 * undo of what it may have set) gets its own deadlines, not a wait that
 * ends at once. */
static _Thread_local int stop_fd = -1;
static _Thread_local bool stopped;

void net_set_stop_fd(int fd)
{
	stop_fd = fd;
	stopped = false;
}

int net_stop_fd(void)
{
	return stopped ? -1 : stop_fd;
}

void net_note_stop(void)
{
	stopped = true;
}

bool net_stopped(void)
{
	return stopped;
}

bool net_take_stop(void)
{
	bool was = stopped;

	stopped = false;
	return was;
}

int net_wait(int fd, short events, int64_t deadline_ms)
{
	for (;;) {
		struct pollfd p[2] = { { fd, events, 0 }, { net_stop_fd(), POLLIN, 0 } };
		int64_t left_ms = deadline_ms - clock_now_ms();
		int n;

		if (left_ms <= 0)
			return 0;
		n = poll(p, p[1].fd >= 0 ? 2 : 1, clock_poll_ms(left_ms));
		if (n > 0 && !p[0].revents) {	/* a stop signal */
			stopped = true;
			return 0;
		}
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

bool net_local_failure(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS;
}

bool net_local_failure_said(const char *msg)
{
	static const int errs[] = { EMFILE, ENFILE, ENOMEM, ENOBUFS };

	for (size_t i = 0; msg && i < sizeof errs / sizeof errs[0]; i++)
		if (strstr(msg, strerror(errs[i])))
			return true;
	return false;
}

/* The local failure one of d's addresses met, else 0. */
static int local_failure(const struct net_dial *d)
{
	for (size_t i = 0; i < d->addrs->n; i++)
		if (net_local_failure(d->errs[i]))
			return d->errs[i];
	return 0;
}

int net_dial(const struct net_addrs *a, int64_t deadline_ms, int *fd, char *why,
	     size_t whylen)
{
	struct net_dial d;
	int r;

	net_dial_start(&d, a, deadline_ms);
	while ((r = net_dial_step(&d, fd, why, whylen)) == 0) {
		struct pollfd p[2] = { { d.fd, POLLOUT, 0 }, { net_stop_fd(), POLLIN, 0 } };
		int n = poll(p, p[1].fd >= 0 ? 2 : 1,
			     clock_poll_ms(net_dial_wake_ms(&d) - clock_now_ms()));

		if (n < 0 && errno != EINTR) {
			int e = errno;

			lowered(e, why, whylen);
			net_dial_end(&d);
			errno = net_local_failure(e) ? e : 0;
			return -1;
		}
		if (n > 0 && !p[0].revents) {	/* a stop signal: as at the deadline */
			stopped = true;
			snprintf(why, whylen, "no answer in time");
			net_dial_end(&d);
			errno = 0;
			return -1;
		}
	}
	if (r < 0)
		errno = local_failure(&d);
	return r > 0 ? 0 : -1;
}
