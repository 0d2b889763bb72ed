/* url.h - server URLs: redis://, rediss://, unix:, redis-sentinel://,
 * rediss-sentinel://, redis+cluster://, rediss+cluster:// (pure) */
#pragma once
#include <stddef.h>
#include "net.h"

enum url_kind { URL_TCP, URL_UNIX, URL_SENTINEL };

#define URL_MAX_SENTINELS 8
#define URL_MAX_SEEDS 8

/* A sentinel, or a Cluster's seed node. */
struct url_host {
	char host[256];
	int port;
	struct net_addrs addr;
};

/* Where a TCP host is reached (struct net_addrs, src/net.h): a numeric
 * host's one address is filled in by url_parse(); a name's addresses, all
 * of them, by node_resolve() (conn.h), once, on the main thread, so that
 * no later connection waits on a name lookup. n 0: not known yet. */
struct url {
	enum url_kind kind;
	int tls;		/* rediss://, rediss-sentinel://: TLS to the
				 * server (and to the sentinels) */
	char host[256];		/* TCP: name or address, IPv6 without brackets */
	int port;		/* TCP: 1..65535, default 6379 */
	struct net_addrs addr;	/* TCP: host and port as addresses */
	char path[108];		/* UNIX: absolute socket path */
	int db;			/* SELECT db, default 0 */
	char user[128];		/* ACL user, "" for none */
	char password[256];	/* "" for none */
	int has_password;
	/* SENTINEL: the sentinels and the master's name. redis+cluster://:
	 * nodes of one Redis Cluster, tried in turn until one answers;
	 * seeds[0] is also host, port and addr above. A URL names sentinels
	 * or seeds, never both: they share their room, 10 KiB fewer for
	 * every URL to zero (a plain one's parse touches them all). */
	union {
		struct url_host sentinels[URL_MAX_SENTINELS];
		struct url_host seeds[URL_MAX_SEEDS];
	};
	int n_sentinels;
	char master[128];
	int n_seeds;		/* 0 for any URL but redis+cluster:// */
	char text[512];		/* the URL for messages, password masked */
};

/* Parses s into u. Returns 0, or -1 with a reason in err (no URL echo). */
int url_parse(const char *s, struct url *u, char *err, size_t errlen);
/* The engine's settings over one URL (parse_url, url_text, url_tls):
 * url_parse() into url, a struct url; its text; whether it asks for TLS. */
int redis_url_parse(const char *s, void *url, char *why, size_t whylen);
const char *redis_url_text(const void *url);
bool redis_url_tls(const void *url);

/* Fills a with host:port, its one address, when host is a numeric IPv4 or
 * IPv6 address (no lookup). Returns 0, or -1 (a->n 0) when host is a name. */
int url_numeric_addr(const char *host, int port, struct net_addrs *a);
/* Whether a and b share an address (and port): one server under two names,
 * or a name and its address. Returns the index in a of the first address
 * that b has too, or -1. */
int url_addrs_shared(const struct net_addrs *a, const struct net_addrs *b);
