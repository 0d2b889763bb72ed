/* url.h - MySQL/MariaDB server URLs and lock names (pure: no I/O, no
 * client library; unit-tested and fuzzed).
 *
 *   mysql://[user[:password]@]host[:port][/database][?param&...]
 *   mariadb://...                      the same engine
 *   params: socket=PATH (a unix socket; host is then only a name),
 *           tls=required|verify-ca|verify-full
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
	char text[400];		/* for messages: scheme://host:port, no user
				 * or password; a socket's path after ?socket=;
				 * scheme://localhost for the default socket */
};

/* Parses s into u. Returns 0, or -1 with the reason in err (never the
 * URL itself: it may hold a password). */
int my_url_parse(const char *s, struct my_url *u, char *err, size_t errlen);

/* The engine's settings over an array of n of them (struct engine's
 * free_servers, server_text, uses_tls): frees it, its passwords wiped
 * first; server i's text; whether any asks for TLS. */
void my_free_urls(void *servers, size_t n);
const char *my_url_text(const void *servers, size_t i);
bool my_uses_tls(const void *servers, size_t n);

/* The longest GET_LOCK name MySQL takes (MariaDB takes 192 bytes). */
#define MY_NAME_MAX 64
/* What marks a hashed name: a plain name never has it. */
#define MY_NAME_MARK '#'

/* The GET_LOCK name of prefix + key: itself when it is at most 64 bytes of
 * printable ASCII (0x20-0x7e) other than '#'; otherwise its first 31 bytes
 * (all of it when shorter), each '#' or byte that is not printable ASCII
 * as '_', then '#', then the first 32 hex digits (lower case) of the
 * SHA-256 of the whole name. So a plain name has no '#' and a hashed one
 * always has: no key takes another key's hashed name. sha256 hashes a then
 * b (32 bytes out) and returns 0, or -1 when it failed. out has room for
 * MY_NAME_MAX + 1 bytes. Returns 0, or -1 (out empty) when the name needs
 * the hash and sha256 failed: never a name from a digest not computed. */
int my_lock_name(const char *prefix, const char *key,
		 int (*sha256)(const void *a, size_t alen, const void *b,
			       size_t blen, unsigned char *md),
		 char *out);

/* s in ASCII lower case (MySQL's lock names compare without case): out
 * has room for strlen(s) + 1 bytes. */
void my_lower(const char *s, char *out);

/* Bytes as an SQL hex literal, X'...' ("''" for none): out needs
 * 2 * len + 4 bytes. Every name and token dlock sends is one, so that no
 * sql_mode (NO_BACKSLASH_ESCAPES) and no character set changes it. */
void my_hex_literal(const void *data, size_t len, char *out);
