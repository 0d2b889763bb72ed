/* url.h - MySQL/MariaDB server URLs (pure: no I/O, no client library;
 * unit-tested and fuzzed).
 *
 *   mysql://[user[:password]@]host[:port][/database][?param&...]
 *   mariadb://...                      the same engine
 *   params: socket=PATH (a unix socket; host is then only a name),
 *           tls=required|verify-ca|verify-full,
 *           dlock_wait=server|poll (poll: a waiter holds no connection
 *           between its tries; server, the default: it waits in GET_LOCK)
 * user, password, database and PATH are percent-decoded. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

enum my_tls { MY_TLS_OFF, MY_TLS_REQUIRED, MY_TLS_VERIFY_CA, MY_TLS_VERIFY_FULL };

struct my_url {
	char scheme[8];		/* "mysql" or "mariadb", as given */
	char host[256];		/* name or address, IPv6 without brackets */
	int port;		/* 0: not given (the option files', or 3306) */
	char socket[108];	/* "" unless ?socket= */
	char user[128];		/* "": not given (option files, login name) */
	char password[256];
	bool has_password;
	char database[65];	/* "": none */
	enum my_tls tls;
	bool poll_wait;		/* dlock_wait=poll */
	char text[400];		/* for messages: scheme://host:port, no user
				 * or password; a socket's path after ?socket=;
				 * scheme://localhost for the default socket */
};

/* Parses s into u. Returns 0, or -1 with the reason in err (never the
 * URL itself: it may hold a password). */
int my_url_parse(const char *s, void *url, char *err, size_t errlen);

/* The engine's settings over a URL parsed (free_url, url_text, url_tls):
 * its password wiped; its text; whether it asks for TLS. */
void my_url_free(void *url);
const char *my_url_text(const void *url);
bool my_url_tls(const void *url);
