/* cluster.h - Redis Cluster: a server URL may name any node of a cluster.
 * dlock learns that it talks to a cluster only from a MOVED or ASK reply
 * (no CLUSTER command up front, so a plain server costs nothing more),
 * follows it to the node that owns the lock's slot, and remembers that
 * owner for the run. All of one lock's keys share a hash tag, so one slot
 * and one owner per URL. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "log.h"
#include "url.h"

/* Redirections followed in one round before giving up (69): a cluster
 * that sends us in circles is one that is being reconfigured. */
#define CLUSTER_MAX_REDIRECTS 5

enum cluster_reply {
	CLUSTER_NONE,		/* not a redirection: the caller handles it */
	CLUSTER_FOLLOW,		/* start the round again on the new target */
	CLUSTER_ERROR,		/* err says why (70 unparsable, 69 too many) */
};

/* What one connection (conn.c) knows of the cluster in its round: the
 * ASK target, for this round only, and the redirections followed. */
struct cluster_round {
	struct net_addrs ask;
	char ask_host[256];	/* the name TLS checks the ASK target against */
	char ask_text[80];	/* "HOST:PORT", for messages */
	bool asking;
	int n_redirects;
};

/* The connection a redirection came on: its URL, its socket (an empty
 * endpoint, "MOVED 3999 :6380", means that socket's peer), whether it may
 * look names up (not on the renewal thread), and the name its
 * certificate was checked against. */
struct cluster_conn {
	const struct url *url;
	int fd;
	bool no_resolve;
	const char *tls_host;
};

/* s is an error reply to one of the connection's commands. MOVED: the
 * owner of the slot is cached for its URL, for every connection of this
 * run. ASK: the target is set for this round only (r->ask), ASKING is
 * sent before each command there, and the cache is left alone. Call
 * before closing the connection. */
enum cluster_reply cluster_redirect(struct cluster_round *r,
				    const struct cluster_conn *c, const char *s,
				    struct error *err);

/* Where a connection of url goes instead of its URL's address: this
 * round's ASK target, or the owner a MOVED named. Fills a (every address
 * of a name the redirection gave, looked up when it came), the text
 * "HOST:PORT" (for messages) and the name TLS checks that node's
 * certificate against (the host the redirection named; the redirecting
 * connection's when it named none) and returns true; false: the URL's own
 * address. */
bool cluster_target(const struct cluster_round *r, const struct url *url,
		    struct net_addrs *a, char *text, size_t textlen, char *host,
		    size_t hostlen);

/* The owner cached for url was not reachable: ask the URL's node again,
 * which names the current owner (after a failover, say). */
void cluster_forget(const struct url *url);

/* url is freed: forget all about it. */
void cluster_drop(const struct url *url);

/* Whether a MOVED or ASK was met in this run, or listing found a cluster
 * (cluster_note_seen()): then commands for several locks go one lock a
 * round. */
bool cluster_seen(void);
void cluster_note_seen(void);
