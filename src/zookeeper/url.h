/* url.h - zk:// URLs (pure: no I/O, unit-tested and fuzzed)
 *
 *   zk://[user[:password]@]host[:port][,host[:port]...][/chroot]
 *
 * One URL is one ensemble: the client library fails over between its
 * hosts. Port 2181 by default; an IPv6 host in brackets. user info is a
 * digest identity ("user:password"), %XX-decoded. zks:// is refused:
 * Debian's C client is built without TLS. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define ZK_URL_MAX_HOSTS 16
#define ZK_DEFAULT_PORT 2181

struct zk_url {
	char hosts[1024];	/* "h:p,h:p" for zookeeper_init(): ports
				 * given, IPv6 without brackets (the
				 * library splits at the last ':') */
	size_t n_hosts;
	char chroot[512];	/* "" or "/a/b": what our paths start with */
	char user[128];		/* "" for none */
	char password[256];
	bool has_password;
	char text[1024];	/* for messages: the password masked */
};

/* Parses s into url, a struct zk_url (engine settings' parse_url).
 * Returns 0, or -1 with the reason in why (never the password). */
int zk_url_parse(const char *s, void *url, char *why, size_t whylen);
/* The URL as messages name it (engine settings' url_text). */
const char *zk_url_text(const void *url);

/* Whether path (absolute, from the root of the ensemble) is one a
 * ZooKeeper server takes: "/" then components, none empty, "." or "..",
 * no control characters. Returns NULL, or why not. */
const char *zk_path_invalid(const char *path);
