/* url.h - etcd:// and etcds:// URLs (pure: unit-tested through the fuzz
 * target, no I/O). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define ETCD_MAX_ENDPOINTS 16

struct etcd_endpoint {
	char host[256];		/* a name or an address, IPv6 unbracketed */
	int port;		/* default 2379 */
	bool v6;		/* host is an IPv6 address: [host] in URLs */
};

/* One cluster: its members, tried in turn. */
struct etcd_url {
	bool tls;		/* etcds:// */
	struct etcd_endpoint ep[ETCD_MAX_ENDPOINTS];
	size_t n_ep;
	char user[128];		/* "" for none */
	char password[256];
	bool has_password;
	char text[1024];	/* for messages, the password masked */
};

/* etcd[s]://[user[:password]@]host[:port][,host[:port]...][/]
 * Returns 0, or -1 with the reason (never the password) in err. */
int etcd_url_parse(const char *s, void *url, char *err, size_t errlen);

/* The engine's settings over a URL parsed (url_text, url_tls): its text;
 * whether it asks for TLS (etcds://). */
const char *etcd_url_text(const void *url);
bool etcd_url_tls(const void *url);
