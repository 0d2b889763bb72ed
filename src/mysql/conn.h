/* conn.h - one connection to a MySQL/MariaDB server over Connector/C's
 * non-blocking API: every wait is a poll() with dlock's own deadline (the
 * library's timeouts are whole seconds), and a call still waiting at its
 * deadline stays pending, to be taken up again (a blocking GET_LOCK, a
 * probe whose answer is late) or abandoned. A batch is several statements
 * sent at once (CLIENT_MULTI_STATEMENTS): one round trip; each statement's
 * result is kept until my_done(). One thread uses a connection at a time. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <mysql.h>
#include "engine.h"
#include "url.h"

#define MY_MAX_STMTS 12
/* err_no of a server older than the engine needs (dlock's own, beyond
 * the library's and the server's numbers) */
#define MY_ER_TOO_OLD 90001

/* One statement's outcome, in the order sent. */
struct my_result {
	MYSQL_RES *res;		/* its rows; NULL for a statement with none */
	unsigned long long affected, insert_id;
};

enum my_op { OP_NONE, OP_CONNECT, OP_QUERY, OP_STORE, OP_NEXT };

struct my_conn {
	MYSQL *m;			/* NULL: closed */
	const struct my_url *u;
	const char *password;		/* for a URL without one; NULL */
	const struct tls_options *tls;
	unsigned long thread_id;	/* the handshake's connection id */
	bool mariadb;			/* the handshake's server is MariaDB */
	unsigned long version;		/* its version, 100011 for 10.0.11 */
	enum my_op op;			/* the call under way */
	bool started;			/* its _start() was called */
	int wait;			/* MYSQL_WAIT_* it waits for */
	char *sql;			/* the batch, owned */
	struct my_result results[MY_MAX_STMTS];
	size_t n_results;
	/* 0, or the batch pauses once it has that many results: the rest
	 * stays the server's to send until my_run() is asked again with
	 * stop_at 0 (my_paused()) */
	size_t stop_at;
	/* The batch's first failure: the statement it stopped at (index),
	 * the server's or library's error number (0: none) and words. */
	size_t err_at;
	unsigned err_no;
	char err_msg[256];
	bool broken;			/* the connection is gone */
	bool tls_failed;		/* the TLS handshake failed: a
					 * setting to fix, not an outage */
	bool full;			/* the server had no connection to
					 * give (1040, 1203): it answers, it
					 * is busy, not down */
};

/* Sets up c for u; nothing is contacted. */
void my_init(struct my_conn *c, const struct my_url *u, const char *password,
	     const struct tls_options *tls);
/* Starts connecting (TLS, authentication, the database). Returns 0, or -1
 * with err when the client library could not even begin. */
int my_connect_start(struct my_conn *c, struct error *err);
/* Starts a batch of statements separated by ';' (at most MY_MAX_STMTS
 * results are kept). The connection must be idle. Returns 0 or -1 (out
 * of memory, with err). */
int my_send(struct my_conn *c, const char *sql, struct error *err);
/* The same, pausing once stop_at results are in (0: never). */
int my_send_part(struct my_conn *c, const char *sql, size_t stop_at,
		 struct error *err);
/* Drives the call under way until it is over, paused or deadline_ms
 * passes (poll() on the socket). Returns 0 when it is over or paused (see
 * err_no for a statement's failure, broken for the connection's), 1 when
 * it is still pending at the deadline. */
int my_run(struct my_conn *c, int64_t deadline_ms);
/* Connects c, bounded by deadline_ms. Returns 0, or -1 with err (the
 * connection closed). */
int my_connect(struct my_conn *c, int64_t deadline_ms, struct error *err);
/* Sends sql on c and waits for the whole batch until deadline_ms.
 * Returns 0 (a statement's failure is in c->err_no), or -1 with err when
 * the connection failed or did not answer in time (then it is closed). */
int my_query(struct my_conn *c, const char *sql, int64_t deadline_ms,
	     struct error *err);
/* Whether a call is under way (paused or not); whether it is paused
 * (my_run() returns 0 then, until c->stop_at is 0 again); its descriptor
 * and poll() events. */
bool my_pending(const struct my_conn *c);
bool my_paused(const struct my_conn *c);
int my_fd(const struct my_conn *c);
short my_events(const struct my_conn *c);
/* Frees the last batch's results. */
void my_done(struct my_conn *c);
/* Ends the connection: a call under way is cut off (the socket shut down
 * and the call run to its failure), then the handle closed (COM_QUIT,
 * unless the socket was shut: nothing waits for the server). */
void my_conn_close(struct my_conn *c);
/* Cuts the call under way off, as my_conn_close, but keeps nothing either. */
void my_abandon(struct my_conn *c);

/* The first column of row r of statement i as a number; false when there
 * is no such row, or the value is NULL or not a whole number. */
bool my_int(const struct my_conn *c, size_t i, size_t r, long long *out);
/* Column col of the first row of statement i; NULL when NULL or absent.
 * *len gets its length. */
const char *my_field(const struct my_conn *c, size_t i, size_t col,
		     size_t *len);

/* Fills err from the batch's failure or the connection's, prefixed with
 * the server's URL (its password left out), with my_exit_of()'s exit
 * status (70 becomes 69 when the failure ended the connection). what,
 * when not NULL, says what was being done ("creating dlock_locks"). */
void my_error(const struct my_conn *c, const char *what, struct error *err);
/* Whether err_no says the server or the connection went away (the lock
 * with it), rather than a statement failing. */
bool my_gone(unsigned err_no);
/* The exit status err_no means: 77 refused credentials or rights, 64 a
 * setting to fix (no such database), 69 unreachable, gone or busy now, 70
 * anything else (dlock(1) lists them). */
int my_exit_of(unsigned err_no);

/* Once, before any connection and thread: the client library, and with
 * tls the check that refuses a server offering no TLS before we log in.
 * Returns 0, or -1 with the reason in err. */
int my_library_init(bool tls, char *err, size_t errlen);
