/* conn.h - one ZooKeeper session over libzookeeper-mt, as dlock's
 * threads use it: every request with a deadline, every event on an
 * eventfd the core's poll loop watches.
 *
 * The library runs two threads of its own (I/O, completions). Watches and
 * completions run on the completion thread: they only record what
 * happened under the session's mutex, wake whoever waits on its condition
 * variable and write the eventfd. A request whose deadline passes is
 * abandoned: the completion frees it when it comes (zookeeper_close()
 * calls every pending one), so no deadline depends on the library's own
 * timeouts (two thirds of the session timeout). */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>
#include <zookeeper/zookeeper.h>
#include "log.h"

/* Not a code of the library's: the deadline passed first. */
#define ZK_TIMEDOUT (-9901)
/* The oldest server dlock works with: create2 (its czxid, the fence) is
 * 3.5's; a 3.4 server answers it ZUNIMPLEMENTED. Multi ops are 3.4's. */
#define ZK_MIN_VERSION "3.5"

struct zk_sess;

struct zk_sess_opts {
	const char *hosts;	/* "h:p,h:p" */
	const char *url_text;	/* for messages */
	const char *digest;	/* "user:password", or NULL */
	int timeout_ms;		/* asked for; the server bounds it */
	const clientid_t *resume;	/* a session to take over, or NULL */
	bool verbose;
};

/* A session, not connected yet (nothing contacted). NULL: out of memory. */
struct zk_sess *zs_new(const struct zk_sess_opts *o);
/* Connects (zookeeper_init() the first time; the library reconnects a
 * session that began by itself after) and waits until the session is
 * connected or deadline_ms; for a session that never began, until every
 * server was tried and failed too, and then its handle ends: the next
 * call starts afresh, when the caller's pause says, not the library's.
 * Returns 0, or -1 with err: 69 unreachable, 77 refused credentials, 75
 * a session to resume that expired (*expired set). */
int zs_connect(struct zk_sess *s, int64_t deadline_ms, bool *expired,
	       struct error *err);
/* Whether the last zs_connect() failed because the server closed each
 * connection before a session began (its maxClientCnxns, or not
 * serving): a server that is there and busy, not one that is down. */
bool zs_turned_away(const struct zk_sess *s);
/* Ends the session (its ephemeral nodes go) and frees it, once every
 * request sent has its answer or deadline_ms has passed. Returns ZOK
 * when the session's close was sent to the server, else the library's
 * code (the session then ends with its timeout). */
int zs_free(struct zk_sess *s, int64_t deadline_ms);
/* Frees nothing and ends nothing: the session outlives this process until
 * its timeout (dlock acquire), or belongs to a process we were forked
 * from, whose threads did not come along (-F). */
void zs_keep(struct zk_sess *s);

/* What the watches and the session's state said. */
struct zk_state {
	int state;		/* the library's ZOO_*_STATE; 0 before */
	bool expired;		/* the session is over: a new one is needed */
	bool auth_failed;
	uint64_t changes;	/* session events and watches fired so far */
	bool own_deleted;	/* the node given to zs_watch_own() went */
	int64_t timeout_ms;	/* negotiated; 0 before the first connect */
	clientid_t id;		/* the session's id and password */
};
void zs_state(struct zk_sess *s, struct zk_state *st);
/* The node whose deletion counts as losing the lock; NULL: none. */
void zs_watch_own(struct zk_sess *s, const char *path);
/* The eventfd written on each session event and watch; -1 before the
 * first connect. Reading it clears it. */
int zs_event_fd(struct zk_sess *s);
void zs_event_clear(struct zk_sess *s);
/* The process the session's threads run in: another one after fork(). */
pid_t zs_pid(const struct zk_sess *s);

/* ---- requests (request.c) ---------------------------------------------- */

enum zc_kind { ZC_CREATE, ZC_DELETE, ZC_EXISTS, ZC_GET, ZC_CHILDREN, ZC_SET,
	       ZC_MULTI, ZC_SYNC };

#define ZC_MAX_OPS 4

/* One request. Read its results only once zc_wait() has returned; give it
 * to zc_free() either way. */
struct zc {
	struct zk_sess *s;
	enum zc_kind kind;
	int rc;			/* after zc_wait(): ZOK, ZNONODE..., ZK_TIMEDOUT */
	struct Stat stat;	/* create, exists, get, children, set */
	char *path;		/* create: the node made */
	char *data;		/* get: NUL-terminated copy */
	int data_len;		/* -1: no data */
	char **kids;		/* children */
	int n_kids;
	/* multi: the ops and their results stay here until the reply */
	zoo_op_t ops[ZC_MAX_OPS];
	zoo_op_result_t res[ZC_MAX_OPS];
	char *made[ZC_MAX_OPS];	/* multi: each create's node, as the reply
				 * writes it (zc_made() reads it) */
	int made_len[ZC_MAX_OPS];
	char *strs[ZC_MAX_OPS * 2];
	int n_ops;
	/* private */
	int done_rc;
	bool done, abandoned;
	bool notify;		/* sets a watch: its answer writes the eventfd */
};

/* Each sends one request (never blocks) and returns it, already done with
 * an error when it could not be sent; NULL only when out of memory.
 * watch: the node (exists, get) or its children change: zs_state()'s
 * changes counts it, and the eventfd is written. */
struct zc *zc_create(struct zk_sess *s, const char *path, const char *data,
		     int len, int flags);
struct zc *zc_delete(struct zk_sess *s, const char *path);
struct zc *zc_exists(struct zk_sess *s, const char *path, bool watch);
struct zc *zc_get(struct zk_sess *s, const char *path, bool watch);
struct zc *zc_children(struct zk_sess *s, const char *path, bool watch);
/* version: the data's version it must still have; -1 any */
struct zc *zc_set(struct zk_sess *s, const char *path, const char *data, int len,
		  int version);
/* sync: the server we talk to catches up with the leader, which checks
 * the session on its way (the proof that it is alive there, with no
 * write); what this session asks next sees at least that much. */
struct zc *zc_sync(struct zk_sess *s, const char *path);
/* A multi: zc_multi_new(), then each op, then zc_multi_send(). */
struct zc *zc_multi_new(struct zk_sess *s);
void zc_multi_delete(struct zc *c, const char *path);
void zc_multi_create(struct zc *c, const char *path, const char *data, int len,
		     int flags);
struct zc *zc_multi_send(struct zc *c);
/* The node op i of an answered multi made: NULL when it made none, or
 * when the path the reply wrote is not the one asked for with a sequence
 * number after it (cut short, or garbled): never take that for a node of
 * ours, nor for another client's. */
const char *zc_made(const struct zc *c, int i);

/* Waits until every one of c[0..n-1] (NULLs skipped) is answered, or
 * deadline_ms; those unanswered get rc ZK_TIMEDOUT. Returns how many were
 * answered. */
size_t zc_wait(struct zc **c, size_t n, int64_t deadline_ms);
void zc_free(struct zc *c);
/* A request's code once zc_wait() has returned; ZSYSTEMERROR for one
 * never made (out of memory). */
static inline int zc_rc(const struct zc *c)
{
	return c ? c->rc : ZSYSTEMERROR;
}

/* An exists of path, waited for until deadline_ms: its code, and the
 * node's stat into *stat when ZOK. */
int zc_stat(struct zk_sess *s, const char *path, int64_t deadline_ms,
	    struct Stat *stat);
/* Creates the missing ancestors of paths[0..n-1] and those paths
 * (persistent, empty), all in one round trip: 0, or -1 with err. */
int zc_ensure(struct zk_sess *s, const char *const *paths, size_t n,
	      int64_t deadline_ms, struct error *err);

/* The ACL for a node dlock creates with these flags. Without a digest
 * identity, open (world:anyone, all). With one: a persistent node that
 * is not sequential (the lock's znode, the ancestors dlock makes, the
 * history's znodes) is shared by everyone who takes the lock: the
 * creator's all, and read, create and delete for anyone, so that one
 * identity's first run closes the name to no other (only the creator
 * may change its data or ACL); a sequential one (a contender, an event)
 * is its creator's, readable by anyone (status and history read them).
 * An ACL an administrator set on an existing node is never changed. */
struct ACL_vector *zs_acl(const struct zk_sess *s, int flags);

/* An error for a library code: "what: no such node" with the exit status
 * that code calls for (zs_exit_of()). */
void zs_error(struct error *err, int rc, const char *what);
/* 77 the credentials or an ACL refused (ZNOAUTH, ZAUTHFAILED,
 * ZSESSIONCLOSEDREQUIRESASLAUTH); 69 unreachable or unusable for now
 * (connection loss, timeouts, an expired or moved session, a read-only
 * member, throttling) or a server too old (ZUNIMPLEMENTED); 64 a name
 * to fix (ZBADARGUMENTS, ZNOCHILDRENFOREPHEMERALS); 71 out of memory
 * (ZSYSTEMERROR); 70 anything else. */
int zs_exit_of(int rc);
/* Whether rc means "ask again, maybe elsewhere": connection lost, timed
 * out, closing. */
bool zs_transient(int rc);

/* Sets FD_CLOEXEC on the descriptors the library opened without it (its
 * pipe and its socket: Debian's build has no SOCK_CLOEXEC), so that no
 * command dlock starts inherits them. Descriptors that were open before
 * the first session are the caller's, and left alone. */
void zs_cloexec(void);

/* ---- conn.c's and request.c's own -------------------------------------- */

/* The session's inside: the other files use the functions above. */
struct zk_sess {
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* on CLOCK_MONOTONIC */
	zhandle_t *zh;
	int efd;
	pid_t pid;
	char *hosts, *url_text, *digest;
	int timeout_ms;
	clientid_t resume;
	bool has_resume;
	struct zk_state st;
	char *own;
	int pending;		/* requests sent, their completion not come */
	bool turned_away;	/* the last connect: closed by the server */
	unsigned connect_failures;	/* the library tried every server */
	bool auth_added;	/* the digest is in the library's list */
};

/* The library's watcher for the session and for each watch a request
 * sets: records the event under mu, wakes the waiters, writes the
 * eventfd. */
void zs_watcher(zhandle_t *zh, int type, int state, const char *path,
		void *ctx);
/* deadline_ms (clock.h's clock) as an absolute CLOCK_MONOTONIC time, for
 * the session's cv */
struct timespec zs_abs_time(int64_t deadline_ms);
