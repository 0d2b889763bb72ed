/* test_mysql_url.c - the MySQL engine's URLs (src/mysql/url.h): every
 * form, what it refuses (the lock names: test_mysql_names.c) */
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

int main(void)
{
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
	ok(parse("mysql://h/app") == 0 && !u.poll_wait, "no dlock_wait=: waits in GET_LOCK");
	ok(parse("mysql://h/app?dlock_wait=poll&tls=required") == 0 && u.poll_wait &&
	   u.tls == MY_TLS_REQUIRED, "dlock_wait=poll (%s)", err);
	ok(parse("mariadb://h/app?dlock_wait=server") == 0 && !u.poll_wait,
	   "dlock_wait=server (%s)", err);
	bad("mysql://h/app?dlock_wait=foo");
	bad("mysql://h/app?dlock_wait=");
	/* the last would win, whichever the reader saw */
	bad("mysql://h/app?dlock_wait=poll&dlock_wait=server");
	bad("mysql://h/app?dlock_wait=server&dlock_wait=poll");
	bad("mysql://h/app?dlock_wait=poll%00x");
	bad("mysql://h/app?dlock_pooling=session");
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

	return done_testing();
}
