/* test_mysql_url.c - the MySQL engine's URLs and lock names
 * (src/mysql/url.h): every form, what it refuses, the names' rule */
#include <string.h>

#include "mysql/url.h"
#include "tap.h"

static struct my_url u;
static char err[256];

static int parse(const char *s)
{
	memset(&u, 0x5a, sizeof u);
	err[0] = '\0';
	return my_url_parse(s, &u, err, sizeof err);
}

static void good(const char *s, const char *host, int port, const char *user,
		 const char *password, const char *db, const char *sock,
		 enum my_tls tls, const char *text)
{
	int r = parse(s);

	ok(r == 0, "%s parses (%s)", s, err);
	if (r != 0)
		return;
	ok(strcmp(u.host, host) == 0, "%s: host \"%s\" (got \"%s\")", s, host, u.host);
	ok(u.port == port, "%s: port %d (got %d)", s, port, u.port);
	ok(strcmp(u.user, user) == 0, "%s: user \"%s\" (got \"%s\")", s, user, u.user);
	ok(strcmp(u.password, password ? password : "") == 0 &&
	   u.has_password == (password != NULL), "%s: password", s);
	ok(strcmp(u.database, db) == 0, "%s: database \"%s\" (got \"%s\")", s, db, u.database);
	ok(strcmp(u.socket, sock) == 0, "%s: socket \"%s\" (got \"%s\")", s, sock, u.socket);
	ok(u.tls == tls, "%s: tls %d (got %d)", s, tls, u.tls);
	ok(strcmp(u.text, text) == 0, "%s: text \"%s\" (got \"%s\")", s, text, u.text);
}

static void bad(const char *s)
{
	int r = parse(s);

	ok(r == -1 && err[0] != '\0', "\"%s\" is refused (%s)", s, err);
	ok(!strstr(err, "hunter2"), "\"%s\": the error names no password", s);
}

/* Not SHA-256: every byte is 16 * the prefix's length + the key's. */
static int fake(const void *a, size_t alen, const void *b, size_t blen,
		unsigned char *md)
{
	memset(md, (int)(alen * 16 + blen), 32);
	(void)a;
	(void)b;
	return 0;
}

/* A digest that fails (libcrypto out of memory, a provider missing) */
static int failing(const void *a, size_t alen, const void *b, size_t blen,
		   unsigned char *md)
{
	memset(md, 0, 32);
	return -1;
}

static void name_is(const char *prefix, const char *key, const char *want)
{
	char name[MY_NAME_MAX + 1];
	int r = my_lock_name(prefix, key, fake, name);

	ok(r == 0 && strcmp(name, want) == 0, "name of \"%s\" + \"%s\": \"%s\" (got \"%s\")",
	   prefix, key, want, name);
}

int main(void)
{
	char lit[200], key[100];

	good("mysql://h", "h", 0, "", NULL, "", "", MY_TLS_OFF, "mysql://h:3306");
	good("mariadb://dl:secret@db.internal:3307/app", "db.internal", 3307, "dl",
	     "secret", "app", "", MY_TLS_OFF, "mariadb://db.internal:3307");
	good("mysql://dl@h/app?tls=verify-full", "h", 0, "dl", NULL, "app", "",
	     MY_TLS_VERIFY_FULL, "mysql://h:3306");
	good("mysql://d%40l:p%40ss%3A@[::1]:3306/my%20db?tls=required", "::1", 3306,
	     "d@l", "p@ss:", "my db", "", MY_TLS_REQUIRED, "mysql://[::1]:3306");
	good("mysql://u:p:q@h/x?tls=verify-ca", "h", 0, "u", "p:q", "x", "",
	     MY_TLS_VERIFY_CA, "mysql://h:3306");
	/* the last '@' ends the user info, as the command line's masking */
	good("mysql://u:a@b@h/x", "h", 0, "u", "a@b", "x", "", MY_TLS_OFF, "mysql://h:3306");
	good("mysql://u:@h", "h", 0, "u", "", "", "", MY_TLS_OFF, "mysql://h:3306");
	good("mysql:///app?socket=/run/mysqld/mysqld.sock", "", 0, "", NULL, "app",
	     "/run/mysqld/mysqld.sock", MY_TLS_OFF,
	     "mysql://localhost?socket=/run/mysqld/mysqld.sock");
	good("mysql://localhost/app", "localhost", 0, "", NULL, "app", "", MY_TLS_OFF,
	     "mysql://localhost");
	good("mysql://localhost:3306/app", "localhost", 3306, "", NULL, "app", "",
	     MY_TLS_OFF, "mysql://localhost:3306");

	bad("mysql://");
	bad("mysql:///app");
	bad("mysql://h:0");
	bad("mysql://h:65536");
	bad("mysql://h:-1");
	bad("mysql://h:3306x");
	bad("mysql://dl:hunter2@h:99999/app");
	bad("mysql://h/app?tls=maybe");
	bad("mysql://h/app?tls=required&tls=required");
	bad("mysql://h/app?charset=utf8");
	bad("mysql://h/app?socket");
	bad("mysql://h/app?socket=relative");
	bad("mysql://h/app?tls=required&");
	bad("mysql://h:3306/app?socket=/s");
	bad("mysql://h/app?socket=/s&tls=required");
	bad("mysql://dl:hunter2@h/db%zz");
	bad("mysql://dl:hunter2%00@h/db");
	bad("mysql://h/a/b");
	bad("mysql://h o/app");
	bad("mysql://[::1/app");
	bad("mysql://[h]/app");
	bad("mysql://h/0123456789012345678901234567890123456789012345678901234567890123456789");
	bad("redis://h");
	bad("mysql:/h");

	name_is("dlock:", "nightly", "dlock:nightly");
	name_is("", "", "");
	memset(key, 'a', 58);
	key[58] = '\0';
	name_is("dlock:", key, "dlock:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	key[58] = 'a';
	key[59] = '\0';	/* 65 bytes: hashed, first 31 kept, then '#' */
	name_is("dlock:", key, "dlock:aaaaaaaaaaaaaaaaaaaaaaaaa#" "9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b");
	/* not printable: hashed even when short, each such byte as '_' */
	name_is("dlock:", "\xc3\xa9t\xc3\xa9", "dlock:__t__#" "65656565656565656565656565656565");
	name_is("dlock:", "tab\there", "dlock:tab_here#" "68686868686868686868686868686868");
	name_is("p:", "'x\\", "p:'x\\");
	/* '#' marks hashed names: a key with one is hashed, so that no key
	 * is another's hashed name (a long key's, here) */
	name_is("dlock:", "a#b", "dlock:a_b#" "63636363636363636363636363636363");
	memset(key, 'x', 70);
	key[70] = '\0';
	{
		char hashed[MY_NAME_MAX + 1], crafted[MY_NAME_MAX + 1];

		my_lock_name("dlock:", key, fake, hashed);
		/* the hashed name less the prefix, as a key of its own */
		my_lock_name("dlock:", hashed + 6, fake, crafted);
		ok(strlen(hashed) == 64 && strcmp(crafted, hashed) != 0,
		   "a key equal to a long key's hashed name is another lock (%s, %s)",
		   hashed, crafted);
		ok(my_lock_name("dlock:", key, failing, hashed) == -1 && hashed[0] == '\0',
		   "a failed SHA-256 is an error, never a name");
		ok(my_lock_name("dlock:", "short", failing, hashed) == 0 &&
		   strcmp(hashed, "dlock:short") == 0, "a plain name needs no digest");
	}
	my_lower("dlock:NightLy#AB", key);
	ok(strcmp(key, "dlock:nightly#ab") == 0, "my_lower (%s)", key);

	my_hex_literal("\x01\xff", 2, lit);
	ok(strcmp(lit, "X'01ff'") == 0, "my_hex_literal (%s)", lit);
	my_hex_literal("", 0, lit);
	ok(strcmp(lit, "''") == 0, "my_hex_literal of nothing (%s)", lit);
	return done_testing();
}
