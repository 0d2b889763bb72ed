/* conn.c - a connection to MySQL/MariaDB over Connector/C's non-blocking
 * API (conn.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <sys/socket.h>
#include <errmsg.h>
#include <mysqld_error.h>
#include "clock.h"
#include "conn.h"
#include "net.h"
#include <mysql/plugin_auth.h>

/* The stack Connector/C runs a non-blocking call on: its default (60 KB)
 * is tight for an OpenSSL 3 handshake. */
#define NONBLOCK_STACK (256 * 1024)

/* The server versions the engine needs (see dlock(1)): MySQL 5.7.5, whose
 * GET_LOCK is the metadata lock (names compared without case, 64
 * characters); MariaDB 10.1.2, whose GET_LOCK waits fractions of a second
 * (MDEV-4018). */
#define MYSQL_OLDEST 50705
#define MYSQL_OLDEST_TEXT "5.7.5"
#define MARIADB_OLDEST 100102
#define MARIADB_OLDEST_TEXT "10.1.2"

/* tls=: TLS or nothing, decided before anything of ours is sent.
 * Connector/C 3.3 falls back to clear text when the server offers no TLS,
 * MYSQL_OPT_SSL_ENFORCE or not, unless the certificate's host name is
 * verified (verify-full). It runs the client's authentication plugin
 * between reading the server's greeting and sending the first packet: a
 * plugin of ours, the connection's first, looks at the greeting's
 * CLIENT_SSL there. It then sends its empty answer (over TLS: the library
 * starts it with that first packet), and the server names the account's
 * own plugin, which the library runs: one round trip more, with tls=
 * only. step() checks the cipher after the handshake too. */
#define TLS_GUARD "dlock_tls_guard"
#define NO_TLS "the server offers no TLS (tls= in the URL): refused before logging in"

static int tls_guard(MYSQL_PLUGIN_VIO *vio, MYSQL *m)
{
	unsigned char *pkt;

	if (!(m->server_capabilities & CLIENT_SSL)) {
		SET_CLIENT_ERROR(m, CR_SSL_CONNECTION_ERROR, "HY000", NO_TLS);
		return CR_ERROR;
	}
	/* -1: the server asks for another plugin (or refused us): the
	 * library takes it from there */
	return vio->read_packet(vio, &pkt) < 0 ? CR_ERROR : CR_OK_HANDSHAKE_COMPLETE;
}

/* An authentication plugin, as <mysql/client_plugin.h> lays it out (that
 * header includes one Debian's libmariadb-dev lacks: ma_compress.h). */
#define AUTH_PLUGIN_TYPE 2		/* MYSQL_CLIENT_AUTHENTICATION_PLUGIN */
#define AUTH_PLUGIN_INTERFACE 0x0100
struct auth_plugin {
	MYSQL_CLIENT_PLUGIN_HEADER
	int (*authenticate_user)(MYSQL_PLUGIN_VIO *vio, MYSQL *mysql);
};

static struct auth_plugin tls_guard_plugin = {
	AUTH_PLUGIN_TYPE, AUTH_PLUGIN_INTERFACE,
	TLS_GUARD, "dlock", "refuses a server that offers no TLS", { 1, 0, 0 },
	"MIT", NULL, NULL, NULL, NULL, tls_guard,
};

int my_library_init(bool tls, char *err, size_t errlen)
{
	MYSQL *m;

	if (mysql_library_init(0, NULL, NULL) != 0) {
		snprintf(err, errlen, "cannot initialise the MariaDB client library");
		return -1;
	}
	if (!tls)
		return 0;
	if (!(m = mysql_init(NULL)) ||
	    !mysql_client_register_plugin(m, (struct st_mysql_client_plugin *)&tls_guard_plugin)) {
		snprintf(err, errlen, "cannot set up the MariaDB client library's TLS check: %s",
			 m ? mysql_error(m) : "out of memory");
		if (m)
			mysql_close(m);
		return -1;
	}
	mysql_close(m);
	return 0;
}

void my_init(struct my_conn *c, const struct my_url *u, const char *password,
	     const struct tls_options *tls)
{
	*c = (struct my_conn){ .u = u, .password = password, .tls = tls };
}

bool my_pending(const struct my_conn *c)
{
	return c->m && c->op != OP_NONE;
}

bool my_paused(const struct my_conn *c)
{
	return my_pending(c) && c->op == OP_NEXT && !c->started &&
	       c->stop_at && c->n_results >= c->stop_at;
}

int my_fd(const struct my_conn *c)
{
	return c->m ? (int)mysql_get_socket(c->m) : -1;
}

short my_events(const struct my_conn *c)
{
	short ev = 0;

	if (c->wait & MYSQL_WAIT_READ)
		ev |= POLLIN;
	if (c->wait & MYSQL_WAIT_WRITE)
		ev |= POLLOUT;
	if (c->wait & MYSQL_WAIT_EXCEPT)
		ev |= POLLPRI;
	return ev;
}

void my_done(struct my_conn *c)
{
	for (size_t i = 0; i < c->n_results; i++)
		if (c->results[i].res)
			mysql_free_result(c->results[i].res);
	c->n_results = 0;
	c->err_no = 0;
	c->err_at = 0;
	c->err_msg[0] = '\0';
	free(c->sql);
	c->sql = NULL;
}

static void fail(struct my_conn *c, unsigned err_no, const char *msg)
{
	if (c->err_no)
		return;
	c->err_no = err_no;
	c->err_at = c->n_results;
	snprintf(c->err_msg, sizeof c->err_msg, "%s", msg);
	log_lower_first(c->err_msg);
	if (my_gone(err_no))
		c->broken = true;
	if (err_no == CR_SSL_CONNECTION_ERROR)
		c->tls_failed = true;
	if (err_no == ER_CON_COUNT_ERROR || err_no == ER_TOO_MANY_USER_CONNECTIONS)
		c->full = true;
}

/* The call under way failed with the library's error: it is over. */
static void fail_mysql(struct my_conn *c)
{
	fail(c, mysql_errno(c->m) ? mysql_errno(c->m) : CR_UNKNOWN_ERROR,
	     mysql_error(c->m)[0] ? mysql_error(c->m) : "unknown error");
	c->op = OP_NONE;
}

/* Every socket dlock opens is close-on-exec (-o, and the job must not
 * keep a lock's connection alive); Connector/C's are not. The socket
 * changes while a connect tries one address after another. */
static void cloexec(const struct my_conn *c)
{
	int fd = my_fd(c), flags;

	if (fd >= 0 && (flags = fcntl(fd, F_GETFD)) >= 0 && !(flags & FD_CLOEXEC))
		fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

/* The handshake is over: what it says of the server, checked. */
static void connected(struct my_conn *c)
{
	unsigned long v = mysql_get_server_version(c->m);

	c->mariadb = mariadb_connection(c->m);
	c->version = v;
	if (c->u->tls != MY_TLS_OFF && !mysql_get_ssl_cipher(c->m)) {
		fail(c, CR_SSL_CONNECTION_ERROR, NO_TLS);
		c->broken = true;
		return;
	}
	if (v < (c->mariadb ? MARIADB_OLDEST : MYSQL_OLDEST)) {
		char why[200];

		snprintf(why, sizeof why, "the server is %s %lu.%lu.%lu, too old: dlock needs MySQL " MYSQL_OLDEST_TEXT " or MariaDB " MARIADB_OLDEST_TEXT " or later",
			 c->mariadb ? "MariaDB" : "MySQL", v / 10000, v / 100 % 100, v % 100);
		fail(c, MY_ER_TOO_OLD, why);
		c->broken = true;
		return;
	}
	c->thread_id = mysql_thread_id(c->m);
}

/* One step of the call under way, given what poll() saw (0 for a first
 * step). Sets c->wait, or c->op to OP_NONE once the call is over. */
static void step(struct my_conn *c, int ready)
{
	for (;;) {
		int w = 0, ierr = 0;
		MYSQL *ret = NULL;
		MYSQL_RES *res = NULL;
		bool first = !c->started;

		c->started = true;
		switch (c->op) {
		case OP_NONE:
			return;
		case OP_CONNECT:
			w = first ? mysql_real_connect_start(&ret, c->m,
				c->u->host[0] ? c->u->host : "localhost",
				c->u->user[0] ? c->u->user : NULL,
				c->u->has_password ? c->u->password : c->password,
				c->u->database[0] ? c->u->database : NULL,
				(unsigned)c->u->port,
				c->u->socket[0] ? c->u->socket : NULL,
				CLIENT_MULTI_STATEMENTS) :
				mysql_real_connect_cont(&ret, c->m, ready);
			cloexec(c);
			if (w)
				break;
			c->op = OP_NONE;
			if (!ret) {
				fail_mysql(c);
				c->broken = true;
			} else {
				connected(c);
			}
			return;
		case OP_QUERY:
			w = first ? mysql_real_query_start(&ierr, c->m, c->sql,
							   strlen(c->sql)) :
				mysql_real_query_cont(&ierr, c->m, ready);
			if (w)
				break;
			if (ierr) {
				fail_mysql(c);
				return;
			}
			c->op = OP_STORE;
			c->started = false;
			continue;
		case OP_STORE:
			w = first ? mysql_store_result_start(&res, c->m) :
				mysql_store_result_cont(&res, c->m, ready);
			if (w)
				break;
			if (!res && mysql_field_count(c->m) > 0) {
				fail_mysql(c);
				return;
			}
			if (c->n_results < MY_MAX_STMTS)
				c->results[c->n_results++] = (struct my_result){
					.res = res,
					.affected = mysql_affected_rows(c->m),
					.insert_id = mysql_insert_id(c->m),
				};
			else if (res)
				mysql_free_result(res);
			c->op = mysql_more_results(c->m) ? OP_NEXT : OP_NONE;
			c->started = false;
			if (c->op == OP_NONE)
				return;
			if (my_paused(c)) {
				c->wait = 0;	/* nothing asked of the socket */
				return;
			}
			continue;
		case OP_NEXT:
			w = first ? mysql_next_result_start(&ierr, c->m) :
				mysql_next_result_cont(&ierr, c->m, ready);
			if (w)
				break;
			if (ierr > 0) {
				fail_mysql(c);
				return;
			}
			c->op = ierr == 0 ? OP_STORE : OP_NONE;
			c->started = false;
			if (c->op == OP_NONE)
				return;
			continue;
		}
		c->wait = w;
		return;
	}
}

int my_connect_start(struct my_conn *c, struct error *err)
{
	const struct tls_options *t = c->tls;
	my_bool no = 0, yes = 1;
	size_t stack = NONBLOCK_STACK;
	unsigned no_infile = 0;

	my_done(c);
	c->broken = false;
	c->tls_failed = false;
	c->full = false;
	if (!(c->m = mysql_init(NULL))) {
		error_set(err, EX_OSERR, "%s: out of memory", c->u->text);
		return -1;
	}
	mysql_options(c->m, MYSQL_OPT_NONBLOCK, &stack);
	/* never: a new connection holds none of the old one's locks */
	mysql_options(c->m, MYSQL_OPT_RECONNECT, &no);
	mysql_options(c->m, MYSQL_OPT_LOCAL_INFILE, &no_infile);
	/* [client], [client-server], [client-mariadb] and [dlock] of the
	 * option files the mysql client reads (~/.my.cnf...): a password,
	 * a user, a port the URL leaves out */
	mysql_options(c->m, MYSQL_READ_DEFAULT_GROUP, "dlock");
	if (c->u->tls != MY_TLS_OFF) {
		bool insecure = t && t->insecure;

		mysql_options(c->m, MYSQL_OPT_SSL_ENFORCE, &yes);
		mysql_options(c->m, MYSQL_DEFAULT_AUTH, TLS_GUARD);
		mysql_options(c->m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT,
			      c->u->tls == MY_TLS_VERIFY_FULL && !insecure ? &yes : &no);
		/* A CA given is checked (as libpq's sslmode=require does
		 * with a root certificate); verify-ca without one checks
		 * against the system's. */
		if (t && t->ca && !insecure)
			mysql_options(c->m, MYSQL_OPT_SSL_CA, t->ca);
		else if (c->u->tls == MY_TLS_VERIFY_CA && !insecure)
			mysql_options(c->m, MYSQL_OPT_SSL_CAPATH, "/etc/ssl/certs");
		if (t && t->cert && t->key) {
			mysql_options(c->m, MYSQL_OPT_SSL_CERT, t->cert);
			mysql_options(c->m, MYSQL_OPT_SSL_KEY, t->key);
		}
	}
	c->op = OP_CONNECT;
	c->started = false;
	c->wait = 0;
	step(c, 0);
	return 0;
}

int my_send(struct my_conn *c, const char *sql, struct error *err)
{
	return my_send_part(c, sql, 0, err);
}

int my_send_part(struct my_conn *c, const char *sql, size_t stop_at,
		 struct error *err)
{
	my_done(c);
	c->stop_at = stop_at;
	if (!(c->sql = strdup(sql))) {
		error_set(err, EX_OSERR, "%s: out of memory", c->u->text);
		return -1;
	}
	c->op = OP_QUERY;
	c->started = false;
	c->wait = 0;
	step(c, 0);
	return 0;
}

int my_run(struct my_conn *c, int64_t deadline_ms)
{
	if (my_paused(c))
		return 0;
	/* taken up again after a pause (the library may hold the rest) */
	if (my_pending(c) && c->op == OP_NEXT && !c->started)
		step(c, 0);
	while (my_pending(c) && !my_paused(c)) {
		struct pollfd p[2] = { { my_fd(c), my_events(c), 0 },
				       { net_stop_fd(), POLLIN, 0 } };
		struct pollfd pfd;
		int64_t left_ms = deadline_ms - clock_now_ms();
		int timeout = clock_poll_ms(left_ms), r, ready = 0;
		bool lib_timeout = false;

		if (c->wait & MYSQL_WAIT_TIMEOUT) {
			unsigned lib_ms = mysql_get_timeout_value_ms(c->m);

			if ((int64_t)lib_ms < left_ms) {
				timeout = (int)lib_ms;
				lib_timeout = true;
			}
		}
		if (left_ms <= 0 && !lib_timeout) {
			/* at the deadline: one look, no wait */
			if (poll(p, 1, 0) <= 0)
				return 1;
		} else if ((r = poll(p, p[1].fd >= 0 ? 2 : 1, timeout)) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		} else if (r > 0 && !p[0].revents) {
			net_note_stop();
			return 1;	/* a stop signal: as at the deadline */
		} else if (r == 0) {
			if (!lib_timeout)
				continue;	/* the loop looks at the deadline */
			ready = MYSQL_WAIT_TIMEOUT;
		}
		pfd = p[0];
		if (pfd.revents & (POLLIN | POLLERR | POLLHUP))
			ready |= MYSQL_WAIT_READ;
		if (pfd.revents & (POLLOUT | POLLERR | POLLHUP))
			ready |= MYSQL_WAIT_WRITE;
		if (pfd.revents & POLLPRI)
			ready |= MYSQL_WAIT_EXCEPT;
		step(c, ready & (c->wait | MYSQL_WAIT_TIMEOUT));
	}
	return 0;
}

int my_connect(struct my_conn *c, int64_t deadline_ms, struct error *err)
{
	if (my_connect_start(c, err) < 0)
		return -1;
	if (my_run(c, deadline_ms) == 1) {
		my_conn_close(c);
		error_set(err, EX_UNAVAILABLE, "%s: no answer in time (connecting)",
			  c->u->text);
		return -1;
	}
	if (c->err_no || !c->thread_id) {
		my_error(c, NULL, err);
		my_conn_close(c);
		return -1;
	}
	return 0;
}

int my_query(struct my_conn *c, const char *sql, int64_t deadline_ms,
	     struct error *err)
{
	if (my_send(c, sql, err) < 0)
		return -1;
	if (my_run(c, deadline_ms) == 1) {
		my_conn_close(c);
		error_set(err, EX_UNAVAILABLE, "%s: no answer in time", c->u->text);
		return -1;
	}
	if (c->broken) {
		my_error(c, NULL, err);
		my_conn_close(c);
		return -1;
	}
	return 0;
}

void my_abandon(struct my_conn *c)
{
	int fd = my_fd(c);

	if (!my_pending(c))
		return;
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
	/* Reads see the end and writes fail at once now: the call ends,
	 * freeing what it holds. A bound, in case it would not. */
	for (int i = 0; i < 1000 && my_pending(c); i++)
		step(c, c->wait);
	c->broken = true;
}

void my_conn_close(struct my_conn *c)
{
	if (!c->m)
		return;
	my_abandon(c);
	my_done(c);
	if (c->broken) {
		int fd = my_fd(c);

		/* no COM_QUIT on a dead connection: nothing to wait for */
		if (fd >= 0)
			shutdown(fd, SHUT_RDWR);
	}
	mysql_close(c->m);
	c->m = NULL;
	c->op = OP_NONE;
	c->thread_id = 0;
}

static MYSQL_ROW row_of(const struct my_conn *c, size_t i, size_t r,
			unsigned long **lengths)
{
	MYSQL_RES *res = i < c->n_results ? c->results[i].res : NULL;
	MYSQL_ROW row;

	if (!res || r >= mysql_num_rows(res))
		return NULL;
	mysql_data_seek(res, r);
	row = mysql_fetch_row(res);
	if (row && lengths)
		*lengths = mysql_fetch_lengths(res);
	return row;
}

bool my_int(const struct my_conn *c, size_t i, size_t r, long long *out)
{
	MYSQL_ROW row = row_of(c, i, r, NULL);
	const char *s;
	long long v = 0;
	bool neg;

	if (!row || !row[0])
		return false;
	s = row[0];
	neg = *s == '-';
	s += neg;
	if (!*s || strlen(s) > 18)
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return false;
		v = v * 10 + (*s - '0');
	}
	*out = neg ? -v : v;
	return true;
}

const char *my_field(const struct my_conn *c, size_t i, size_t col, size_t *len)
{
	unsigned long *lengths = NULL;
	MYSQL_ROW row = row_of(c, i, 0, &lengths);
	MYSQL_RES *res = i < c->n_results ? c->results[i].res : NULL;

	if (!row || col >= mysql_num_fields(res) || !row[col])
		return NULL;
	*len = lengths[col];
	return row[col];
}

bool my_gone(unsigned err_no)
{
	switch (err_no) {
	case CR_CONNECTION_ERROR:
	case CR_CONN_HOST_ERROR:
	case CR_UNKNOWN_HOST:
	case CR_SERVER_GONE_ERROR:
	case CR_SERVER_LOST:
	case CR_SERVER_LOST_EXTENDED:
	case CR_SSL_CONNECTION_ERROR:
	case CR_COMMANDS_OUT_OF_SYNC:
	case ER_CON_COUNT_ERROR:
	case ER_TOO_MANY_USER_CONNECTIONS:
	case ER_USER_LIMIT_REACHED:
	case ER_SERVER_SHUTDOWN:
	case ER_NORMAL_SHUTDOWN:
	case ER_CONNECTION_KILLED:
	case ER_NET_READ_ERROR:
	case ER_NET_READ_INTERRUPTED:
	case ER_NET_ERROR_ON_WRITE:
	case ER_NET_WRITE_INTERRUPTED:
	case ER_NET_PACKETS_OUT_OF_ORDER:
	case ER_HOST_IS_BLOCKED:
	case MY_ER_TOO_OLD:
		return true;
	}
	return false;
}

/* The server's (or the library's) error as an exit status: the table in
 * dlock(1)'s MySQL section. */
int my_exit_of(unsigned err_no)
{
	switch (err_no) {
	/* refused credentials or rights: 77 */
	case ER_ACCESS_DENIED_ERROR:		/* 1045 */
	case ER_DBACCESS_DENIED_ERROR:		/* 1044: also a database the
						 * account cannot see */
	case ER_ACCESS_DENIED_NO_PASSWORD_ERROR:	/* 1698 */
	case ER_HOST_NOT_PRIVILEGED:		/* 1130 */
	case ER_TABLEACCESS_DENIED_ERROR:	/* 1142 */
	case ER_COLUMNACCESS_DENIED_ERROR:	/* 1143 */
	case ER_SPECIFIC_ACCESS_DENIED_ERROR:	/* 1227 */
	case ER_KILL_DENIED_ERROR:		/* 1095 */
	case ER_PASSWORD_NO_MATCH:		/* 1133 */
	case ER_NOT_SUPPORTED_AUTH_MODE:	/* 1251 */
	case ER_MUST_CHANGE_PASSWORD_LOGIN:	/* 1862 */
	case ER_ACCOUNT_HAS_BEEN_LOCKED:	/* 4151, MariaDB's */
	case 3118:				/* MySQL's account locked */
	case CR_AUTH_PLUGIN_CANNOT_LOAD:	/* 2059 */
	case CR_PLUGIN_NOT_ALLOWED:		/* 5010 */
		return EX_NOPERM;
	/* a setting to fix: 64 */
	case ER_BAD_DB_ERROR:			/* 1049: no such database */
	case ER_NO_DB_ERROR:			/* 1046 */
	case ER_WRONG_DB_NAME:			/* 1102 */
		return EX_USAGE;
	/* this host out of descriptors or memory, not the server: 71 */
	case CR_SOCKET_CREATE_ERROR:		/* 2001: socket(), unix */
	case CR_IPSOCK_ERROR:			/* 2004: socket(), TCP/IP */
	case CR_OUT_OF_MEMORY:			/* 2008 */
		return EX_OSERR;
	/* the lock cannot be taken now; the next try may: 69 */
	case ER_LOCK_DEADLOCK:			/* 1213 */
	case ER_LOCK_WAIT_TIMEOUT:		/* 1205 */
	case ER_OPTION_PREVENTS_STATEMENT:	/* 1290: read-only now */
		return EX_UNAVAILABLE;
	}
	return my_gone(err_no) ? EX_UNAVAILABLE : EX_SOFTWARE;
}

void my_error(const struct my_conn *c, const char *what, struct error *err)
{
	int exit = c->err_no ? my_exit_of(c->err_no) : EX_UNAVAILABLE;

	if (exit == EX_SOFTWARE && c->broken)
		exit = EX_UNAVAILABLE;
	error_set(err, exit, "%s: %s%s%s", c->u->text, what ? what : "",
		  what ? ": " : "", c->err_no ? c->err_msg : "connection lost");
}
