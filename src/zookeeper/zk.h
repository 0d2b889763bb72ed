/* zk.h - the ZooKeeper engine (src/engine.h): the ephemeral-sequential
 * recipe over libzookeeper-mt, as kazoo and Curator take locks (names.h),
 * so that they and dlock exclude each other. Its state for one lock and
 * what its files share; included by no other folder. (Not zookeeper.h:
 * the modules build with -Isrc, where src/zookeeper/zookeeper.h would
 * shadow the client library's <zookeeper/zookeeper.h>.)
 *
 * A lock is the znode /PREFIX NAME under the URL's chroot; its contenders
 * are ephemeral sequential children, ordered by the sequence number the
 * server appends; a waiter watches the one node whose deletion may let it
 * in. The lease is the session: the server deletes our node once it has
 * not heard from us for the session timeout (from --ttl, bounded by the
 * server's min and max). The server says a session expired only once we
 * reconnect, so the loss clock is ours: each renewal round proves the
 * session alive at the leader (a sync, which the leader answers only for
 * a live session, then an exists of our node) and moves valid_until_ms to
 * the round's start plus the timeout; a round that fails leaves it, and
 * the core stops the job before it runs out. Our node deleted (release
 * --force, an operator) is loss at once, through a watch on it.
 * DLOCK_FENCE is our node's czxid: zxids grow across the whole ensemble
 * and its restarts, sequence numbers are 32-bit and per parent.
 *
 * The file set every engine has (src/engine.h):
 *   engine.c    the struct engine: its settings over url.c, the rest
 *               wired to the functions below
 *   url.c/.h    zk:// URLs and znode paths: pure, unit-tested, fuzzed
 *   conn.c/.h   the session with the ensemble over the library's threads
 *               (its events on an eventfd, its errors into exit codes),
 *               and a lock's session (zk_session(): which one, and the
 *               lease its timeout gives)
 *   names.c/.h  a lock's NAME as znode paths, the contenders' names and
 *               who of them holds: pure, unit-tested, fuzzed
 *   lock.c      the lock operations
 *   inspect.c   status, the list of locks, history, release --force,
 *               the separate steps (extend and release --token)
 * and ZooKeeper's own, each the part of one above that would take it
 * past 800 lines:
 *   request.c   conn's: the session's requests, each waited for until a
 *               deadline (declared in conn.h)
 *   recipe.c    lock's: one round of the recipe, for lock.c's try()
 *   history.c   lock's and inspect's: the history's event nodes, written
 *               and read back */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "engine.h"
#include "conn.h"
#include "names.h"
#include "url.h"

struct zk {
	struct lock *lk;
	const struct zk_url *u;
	struct zk_sess *s;
	char digest[400];	/* "user:password" or "" */
	char *path;		/* the lock's znode */
	char *hist;		/* its history's parent */
	/* the session, as its first connection said */
	clientid_t id;
	int64_t timeout_ms;	/* negotiated */
	bool told;		/* --verbose said it */
	/* an acquisition */
	char rand[17];		/* 16 hex digits of this acquisition */
	char guid[ZK_GUID_LEN + 1];
	char *own;		/* our contender's path, or NULL */
	long long czxid;	/* its creation's zxid: the fence */
	bool fresh;		/* own was made in this round: its create,
				 * a write, proved the session */
	bool create_tried;	/* a create whose reply never came may have
				 * made a node: look for it first */
	bool event_unheard;	/* that create's multi may have made our
				 * "acquired" event too: find_event() */
	bool reentry_asked;
	bool held;		/* acquired and not given back */
	bool waited;		/* own was made before the round that won */
	uint64_t seen;		/* session changes before the last round */
	int64_t eval_ms;	/* when that round was; -1 none */
	char held_by[LOCK_INFO_MAX];
	long queue_pos;
	/* holding */
	bool own_watched;
	struct zc *watch_req;	/* the exists that sets that watch */
	char *acq_path;		/* our "acquired" event, once made */
	struct zc *acq_event;	/* that event, sent after a wait (a round
				 * that made our node wins at once, and its
				 * multi made it too): answer not read yet */
	bool set_pending;	/* after a wait: our node's data, the holder
				 * info, whose since is then, not when we
				 * started to wait; written once the job runs
				 * (a waiter behind us watches that data: it
				 * wakes, and sleeps again) */
	struct zc *set_req;
	char *stale_event;	/* an "acquired" event our node's multi made
				 * in a round that did not win: deleted */
	struct zc *stale_req;
	int last_state;
	bool adopted;		/* -F's helper took the session over */
};

static inline struct zk *ZK(const struct lock *lk)
{
	return lk->e;
}

/* conn.c: the lock's session.
 *
 * Opens (the first time) and connects the lock's session, with deadline.
 * After fork() (-F's helper), takes the parent's session over. Returns 0,
 * or -1 with err; *expired: the session is over (a new one was made when
 * allowed, and own forgotten). */
int zk_session(struct zk *z, int64_t deadline_ms, bool renew_expired,
	       bool *expired, struct error *err);
/* A session that takes over the one of a token (the separate steps):
 * 0, 1 when that session is over, else an exit status with err. */
int zk_resume(struct zk *z, const char *token, int64_t deadline_ms,
	      struct error *err);
/* The session's id and password from a token: 0, or -1 when it carries
 * none (a -k token, or none of ours). */
int zk_token_session(const char *token, clientid_t *id);

/* The server refused to delete our node own (code rc: an ACL that lets
 * anyone create but not delete): the session ended instead, which
 * deletes it at once, and said in one line (0); -1 with err when the
 * close did not reach the server either (it lapses with the session).
 * The session and own are gone either way. */
int zk_end_session(struct zk *z, int rc, struct error *err);

/* Requests whose answers we no longer read: their completions free them. */
void zk_drop_requests(struct zk *z);
/* Ours no more: the session is over, so is anything it held. */
void zk_forget_own(struct zk *z);

/* recipe.c: the recipe, a round at a time.
 *
 * One round: our node made or found, the children read, and either the
 * lock ours or a watch set on what keeps it from us. LOCK_HELD with
 * *again: something changed meanwhile, another round now. */
enum lock_result zk_round(struct zk *z, bool *again, struct error *err);
/* The children of dir as contenders, sorted; *kids owns the names (give
 * both to zk_contenders_free). rc as the library's (ZNONODE: none). */
struct zk_contenders {
	struct zc *req;
	struct zk_contender *c;
	size_t n;
};
int zk_contenders(struct zk_contenders *out, struct zc *children);
void zk_contenders_free(struct zk_contenders *cs);

/* history.c: the lock's history.
 *
 * An event's data: each field a "key=value" line. token: the holder's
 * GUID (zk_event_token()); fence ZK_FENCE_TXN: the event's own czxid (it
 * was made in the same multi as the contender). */
#define ZK_FENCE_TXN (-2)
int zk_event_data(char *out, size_t len, const char *kind, const char *token,
		  long long fence, long long exit, long long held_ms,
		  const char *holder, const char *by);
/* Our event of kind sent (not waited for): NULL out of memory. */
struct zc *zk_send_event(struct zk *z, const char *kind, long long exit,
			 long long held_ms);
/* An event of the holder of token (its GUID) that no one is left to
 * read the answer of: made and waited for, the history's znode made
 * again first when it went (the watchdog's "killed", release --token's
 * "released"); the holder info holder (NULL: lk->info), and by, who
 * released it (NULL: none). */
void zk_write_event(struct zk *z, const char *kind, const char *token,
		    long long fence, long long held_ms, const char *holder,
		    const char *by, int64_t deadline_ms);
/* The "acquired" event our node's multi made when its answer was lost:
 * its path, or NULL. */
char *zk_find_event(struct zk *z, int64_t deadline_ms);
/* event (its path, ours now), made by a round that did not win, deleted;
 * zk_check_stale(), at the next round, reads the delete's answer and
 * sends it again if the connection lost it. */
void zk_forget_event(struct zk *z, char *event);
void zk_check_stale(struct zk *z);
/* The oldest events deleted, from the history's children kids, once it
 * holds an eighth more than --history N. */
void zk_trim_history(struct zk *z, struct zc *kids);
/* Whether this release, whose multi m made the history's event, reads
 * the history's children to trim it: not every time, when N is large. */
bool zk_trim_due(const struct zk *z, const struct zc *m);
/* An event node read (get, named name) into ev: 0, or -1 not one of
 * ours. */
int zk_event_parse(const struct zc *get, const char *name,
		   struct history_event *ev);

/* lock.c: the lock operations (struct engine_lock_ops); inspect.c: the
 * inspection and repair operations (engine_inspect_ops) */
ENGINE_DECLARE(zk);

/* The session alive at the ensemble's leader, and our node own there
 * (watch: watched): ZOK, ZNONODE, or the failure's code; sets czxid. */
int zk_prove(struct zk *z, const char *own, bool watch, int64_t deadline_ms);
/* Until when a session last heard of at t0 is surely alive. */
int64_t zk_valid_from(const struct zk *z, int64_t t0);
