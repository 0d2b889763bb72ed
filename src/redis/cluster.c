/* cluster.c - MOVED and ASK replies of a Redis Cluster followed to the
 * node that owns the lock's slot; the owner cached per URL for the run.
 *
 *   -MOVED 3999 127.0.0.1:6381    the slot lives there now: cache, go
 *   -MOVED 3999 :6381             same host as this connection, that port
 *   -ASK 3999 127.0.0.1:6381      being migrated: ASKING + the command
 *                                 there, this round only
 *
 * TRYAGAIN (a multi-key command during a migration) is a passing state,
 * waited out like LOADING by conn.c. The cache is shared by the main
 * thread and the renewal thread, hence the mutex. A redirection that
 * names a host name is looked up then (all its addresses, net.c), on the
 * main thread only: the renewal thread never blocks in getaddrinfo(). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "cluster.h"

#define MAX_CACHED 16

struct owner {
	const struct url *url;
	struct net_addrs addr;
	char text[80];
	char host[256];		/* for TLS: the name the MOVED gave */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct owner owners[MAX_CACHED];
/* Slots from n_owners on were never used, and are not read either: each
 * is over 4 KiB (its addresses), so a look through all 16 cost five page
 * faults on every run. Under lock. */
static int n_owners;
static bool seen;	/* under lock */

bool cluster_seen(void)
{
	bool r;

	pthread_mutex_lock(&lock);
	r = seen;
	pthread_mutex_unlock(&lock);
	return r;
}

void cluster_note_seen(void)
{
	pthread_mutex_lock(&lock);
	seen = true;
	pthread_mutex_unlock(&lock);
}

/* "HOST:PORT" for messages: the host as the redirection named it, or the
 * address of this connection's peer when it named none. */
static void endpoint_text(const char *host, const struct net_addrs *a, int port,
			  char *out, size_t len)
{
	bool v6 = strchr(host, ':') != NULL;

	if (*host && strcmp(host, "?") != 0)
		snprintf(out, len, "%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", port);
	else
		net_addr_text(&a->addr[0], out, len);
}

/* host (an address, a name, or "" for this connection's host) and port as
 * addresses: all of a name's, in getaddrinfo()'s order. Returns 0, or -1
 * with why. */
static int endpoint(const struct cluster_conn *c, const char *host, int port,
		    struct net_addrs *a, char *why, size_t whylen)
{
	struct net_addr *one = &a->addr[0];

	if (!*host || strcmp(host, "?") == 0) {
		one->len = sizeof one->sa;
		if (c->fd < 0 ||
		    getpeername(c->fd, (struct sockaddr *)&one->sa, &one->len) < 0 ||
		    (one->sa.ss_family != AF_INET && one->sa.ss_family != AF_INET6)) {
			snprintf(why, whylen, "redirected to port %d of an unknown host",
				 port);
			return -1;
		}
		if (one->sa.ss_family == AF_INET)
			((struct sockaddr_in *)&one->sa)->sin_port = htons((uint16_t)port);
		else
			((struct sockaddr_in6 *)&one->sa)->sin6_port = htons((uint16_t)port);
		a->n = 1;
		return 0;
	}
	if (url_numeric_addr(host, port, a) == 0)
		return 0;
	if (c->no_resolve) {	/* the renewal thread: no blocking lookup */
		snprintf(why, whylen, "cannot resolve %s: not resolved before the "
			 "lease started", host);
		return -1;
	}
	return net_resolve(host, port, AF_UNSPEC, a, why, whylen);
}

/* "MOVED 3999 host:port" into its parts. Returns 0 or -1. */
static int parse(const char *s, size_t skip, char *host, size_t hostlen,
		 int *port)
{
	const char *p = s + skip, *colon, *end;
	char *stop;
	long slot, pt;

	errno = 0;
	slot = strtol(p, &stop, 10);
	if (stop == p || *stop != ' ' || errno || slot < 0 || slot > 16383)
		return -1;
	p = stop + 1;
	end = p + strcspn(p, " ");
	if (*end)
		return -1;
	colon = NULL;
	for (const char *q = p; q < end; q++)
		if (*q == ':')
			colon = q;
	if (!colon || (size_t)(colon - p) >= hostlen)
		return -1;
	pt = strtol(colon + 1, &stop, 10);
	if (stop == colon + 1 || stop != end || pt <= 0 || pt > 65535)
		return -1;
	memcpy(host, p, (size_t)(colon - p));
	host[colon - p] = '\0';
	/* "[::1]:6380" as well as "::1:6380" */
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	*port = (int)pt;
	return 0;
}

static struct owner *find(const struct url *url, bool add)
{
	struct owner *free_one = NULL;

	for (int i = 0; i < n_owners; i++) {
		if (owners[i].url == url)
			return &owners[i];
		if (!owners[i].url && !free_one)
			free_one = &owners[i];
	}
	if (add && !free_one && n_owners < MAX_CACHED)
		free_one = &owners[n_owners++];
	if (add && free_one)
		free_one->url = url;
	return add ? free_one : NULL;
}

enum cluster_reply cluster_redirect(struct cluster_round *r,
				    const struct cluster_conn *c, const char *s,
				    struct error *err)
{
	bool moved = strncmp(s, "MOVED ", 6) == 0, ask = strncmp(s, "ASK ", 4) == 0;
	char host[256], why[384], text[sizeof owners[0].text];
	struct net_addrs a = { .n = 0 };
	int port;

	if (!moved && !ask)
		return CLUSTER_NONE;
	cluster_note_seen();
	if (c->url->kind != URL_TCP) {
		error_set(err, EX_SOFTWARE, "a cluster redirection on a %s: %.200s",
			  c->url->kind == URL_UNIX ? "unix socket" : "sentinel's master",
			  s);
		return CLUSTER_ERROR;
	}
	if (parse(s, moved ? 6 : 4, host, sizeof host, &port) < 0) {
		error_set(err, EX_SOFTWARE, "bad cluster redirection: %.200s", s);
		return CLUSTER_ERROR;
	}
	if (++r->n_redirects > CLUSTER_MAX_REDIRECTS) {
		error_set(err, EX_UNAVAILABLE, "%d cluster redirections in a row, "
			  "the last %.200s: the cluster is being reconfigured",
			  CLUSTER_MAX_REDIRECTS, s);
		return CLUSTER_ERROR;
	}
	if (endpoint(c, host, port, &a, why, sizeof why) < 0) {
		error_set(err, EX_UNAVAILABLE, "%s: %s", s, why);
		return CLUSTER_ERROR;
	}
	endpoint_text(host, &a, port, text, sizeof text);
	/* The node's certificate names that node (its address, or the
	 * cluster's announced host name), not the seed: checked against what
	 * the redirection named; no host there is this connection's host. */
	if (!*host || strcmp(host, "?") == 0)
		snprintf(host, sizeof host, "%s", c->tls_host);
	if (ask) {
		r->ask = a;
		snprintf(r->ask_host, sizeof r->ask_host, "%s", host);
		snprintf(r->ask_text, sizeof r->ask_text, "%s", text);
		r->asking = true;
		return CLUSTER_FOLLOW;
	}
	pthread_mutex_lock(&lock);
	{
		struct owner *o = find(c->url, true);
		const struct url *other = NULL;

		for (int i = 0; i < n_owners && !other; i++)
			if (owners[i].url && owners[i].url != c->url &&
			    (url_addrs_shared(&owners[i].url->addr, &a) >= 0 ||
			     url_addrs_shared(&owners[i].addr, &a) >= 0))
				other = owners[i].url;
		if (other) {
			pthread_mutex_unlock(&lock);
			error_set(err, EX_USAGE, "a node of the same Redis Cluster as %s: "
				  "several servers are RedLock over independent masters; "
				  "give one URL of a cluster (redis+cluster:// for several seed nodes)", other->text);
			return CLUSTER_ERROR;
		}
		if (o) {
			o->addr = a;
			snprintf(o->text, sizeof o->text, "%s", text);
			snprintf(o->host, sizeof o->host, "%s", host);
		}
	}
	pthread_mutex_unlock(&lock);
	/* An earlier ASK of this round is over: the slot has moved. */
	r->asking = false;
	return CLUSTER_FOLLOW;
}

bool cluster_target(const struct cluster_round *r, const struct url *url,
		    struct net_addrs *a, char *text, size_t textlen, char *host,
		    size_t hostlen)
{
	const struct owner *o;
	bool found = false;

	if (r->asking) {
		*a = r->ask;
		snprintf(host, hostlen, "%s", r->ask_host);
		snprintf(text, textlen, "%s", r->ask_text);
		return true;
	}
	pthread_mutex_lock(&lock);
	/* every TCP URL is known here, so that a MOVED to another URL's
	 * server is noticed (several seeds of one cluster given as RedLock) */
	o = find(url, true);
	if (o && o->addr.n) {
		*a = o->addr;
		snprintf(text, textlen, "%s", o->text);
		snprintf(host, hostlen, "%s", o->host);
		found = true;
	}
	pthread_mutex_unlock(&lock);
	return found;
}

void cluster_forget(const struct url *url)
{
	struct owner *o;

	pthread_mutex_lock(&lock);
	o = find(url, false);
	if (o)
		o->addr.n = 0;
	pthread_mutex_unlock(&lock);
}

void cluster_drop(const struct url *url)
{
	struct owner *o;

	pthread_mutex_lock(&lock);
	o = find(url, false);
	if (o)
		*o = (struct owner){ .url = NULL };
	pthread_mutex_unlock(&lock);
}
