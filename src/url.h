/* url.h - server URLs: redis://, unix:, rediss://, redis-sentinel:// (pure) */
#pragma once
#include <stddef.h>

enum url_kind { URL_TCP, URL_UNIX, URL_SENTINEL };

#define URL_MAX_SENTINELS 8

struct url {
	enum url_kind kind;
	char host[256];		/* TCP: name or address, IPv6 without brackets */
	int port;		/* TCP: 1..65535, default 6379 */
	char path[108];		/* UNIX: absolute socket path */
	int db;			/* SELECT db, default 0 */
	char user[128];		/* ACL user, "" for none */
	char password[256];	/* "" for none */
	int has_password;
	/* SENTINEL: the sentinels and the master's name */
	struct { char host[256]; int port; } sentinels[URL_MAX_SENTINELS];
	int n_sentinels;
	char master[128];
	char text[512];		/* the URL for messages, password masked */
};

/* Parses s into u. Returns 0, or -1 with a reason in err (no URL echo). */
int url_parse(const char *s, struct url *u, char *err, size_t errlen);
