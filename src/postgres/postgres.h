/* postgres.h - the PostgreSQL engine (src/engine.h): session-level
 * advisory locks over libpq. Its state for one lock and what its files
 * share; included by no other folder.
 *
 * The lock is pg_advisory_lock(hashtextextended(PREFIX || NAME, 0)), the
 * key computed by the server, so that psql takes the same lock with the
 * same words. It belongs to the session that took it: one connection per
 * lock, kept for the whole job; the lease is that connection. dlock
 * proves it alive every TTL/3 (a heartbeat), and the session is set up
 * so that the server ends it, and frees the lock, when dlock falls silent
 * for about the TTL (idle_session_timeout, TCP keepalives,
 * tcp_user_timeout). A waiter waits inside the server, in its lock queue
 * (arrival order), woken by the reply; at its deadline the call is
 * cancelled and the connection closed, which gives back a lock granted
 * just before the cancel arrived. With dlock_wait=poll a waiter holds
 * no backend: each try connects, asks pg_try_advisory_lock and, refused,
 * disconnects; the core paces the tries (lock.waits_polling).
 *
 * The session must be ours alone: a pooler in transaction mode hands its
 * backend to other clients between our statements (and their advisory
 * locks re-enter). Each statement that would take or set anything checks
 * first, in the same statement (enum pg_guard), and takes nothing when the
 * check fails; through a pooler a few statements more tell session
 * pooling from transaction pooling first (pg_pooler_check()). Later
 * statements check the backend and our mark on it (dlock.session).
 *
 * Every statement a holder runs carries a comment, "dlock mode=M
 * token=T fence=F slot=S key=K holder=INFO", which pg_stat_activity
 * shows to other sessions: status reads holders from it, a nested dlock
 * its caller's token, fence and mode, and a shared holder the mode the
 * others hold in (the try statement says its mode too: "dlock try
 * mode=M"). The short fields come first, as pg_stat_activity cuts a
 * statement at track_activity_query_size.
 *
 * The fence is a counter row per lock, public.dlock_fences, written in
 * the statement that took the lock (only when it did) and committed with
 * synchronous_commit on: durable before the job starts, so that a crash
 * never hands it out again (a transaction ID that wrote nothing is not:
 * its commit is not flushed). Its value is the larger of the row's + 1
 * and the server's clock in microseconds, as Redis's: a standby promoted
 * without the last update still counts past it.
 *
 * Modes: -x is pg_advisory_lock(K), -s pg_advisory_lock_shared(K), and
 * --limit N takes K shared too (so -x excludes it) and one of the slots
 * 1..N: slot i is the two-int advisory lock on the halves of
 * hashtextextended(PREFIX || NAME, i), a space no lock's name reaches
 * (those are one-bigint locks). Shared holders and --limit holders, or --limit N and M, are
 * told apart by their comments: a holder that finds others in another
 * mode gives its lock back and says so (64), as Redis does.
 *
 * The file set every engine has (src/engine.h):
 *   engine.c    the struct engine: its settings over url.c, the rest
 *               wired to the functions below; what it cannot do
 *   url.c/.h    postgres:// URLs, checked with libpq's parser, and
 *               dlock_pooling taken out: pure
 *   conn.c/.h   a connection driven with deadlines, its errors into exit
 *               codes; a lock's session, its settings, the check each
 *               statement makes that the session is ours alone, and the
 *               pooler checks
 *   names.c/.h  a lock's NAME as the keys the server locks: the key, the
 *               --limit slots, the fence row: pure, unit-tested
 *   lock.c      the lock operations: the try statement, the wait in the
 *               server's queue, the heartbeat, the watch, the release,
 *               -k's fence
 *   inspect.c   status and release --force
 * and PostgreSQL's own, each the part of one above that would take it
 * past 800 lines:
 *   comment.c/.h  the holder's comment its statements carry, written and
 *               read back: pure, unit-tested
 *   fence.c     lock's: the fencing counter's table, made on first use,
 *               and what writing it meets
 *   holders.c   lock's: the other holders a try sees (a nested dlock's
 *               caller, who holds it, in which mode) */
#pragma once
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libpq-fe.h>
#include "comment.h"
#include "conn.h"
#include "engine.h"
#include "names.h"

/* What the statement that would take the lock checks first, in its own
 * WITH query, so that nothing is taken (nor set) on a session that is
 * not ours alone (a pooler's): */
enum pg_guard {
	GUARD_DIRECT,	/* a new connection's first statement: its backend
			 * is the one the connection reported, no pooler */
	GUARD_POOLED,	/* through a pooler: the backend of the check, one
			 * transaction later (nobody else's in between), and
			 * holding no advisory lock (nobody's left over) */
	GUARD_OURS,	/* afterwards: the backend, and dlock's mark on it */
};

struct pg {
	const struct pg_url *url;
	PGconn *c;
	char *key;		/* the text hashed: PREFIX NAME */
	char *comment;		/* what the holder's statements carry */
	bool checked;		/* the session passed the check: ours alone,
				 * its settings and mark made */
	bool waiting;		/* a blocking pg_advisory_lock runs */
	bool beat_pending;	/* a statement's result is still to be read */
	bool held;
	bool stolen;		/* a statement found the session not ours */
	bool told_db;		/* pg_say_database() said it */
	char hidden_holder[80];	/* a nested dlock: the role of a holder
				 * whose statements this role cannot read
				 * (its caller's, perhaps); "": none */
	long slot;		/* --limit: the slot held, 1..N */
	char pid[16];		/* the backend our statements run on */
	char mark[24];		/* dlock.session on it: this connection's */
	char vxid[32];		/* GUARD_POOLED: the lock's statement's
				 * virtual transaction ID */
};

static inline struct pg *P(const struct lock *lk)
{
	return lk->e;
}

/* conn.c: a lock's session.
 *
 * Connects lk's session when it has none (for_lock: with dlock's
 * settings, else status and --force, which any pooler passes); a new
 * session gets a new mark. 0, or -1 with err. */
int pg_connect_once(struct lock *lk, bool for_lock, struct error *err);
/* Closes the session, which frees whatever it held. */
void pg_disconnect(struct pg *pg);
/* --verbose, status: the database the lock lives in, where the URL names
 * none; once. */
void pg_say_database(struct lock *lk);
/* The WITH query that makes the session's settings, for the statement
 * that passes the check ("s AS MATERIALIZED (...), "). */
void pg_settings_sql(const struct lock *lk, char *out, size_t len);
/* The check of g as SQL, and how many parameters its statement takes. */
const char *pg_guard_sql(enum pg_guard g, int *n_params);
enum pg_guard pg_guard_of(const struct pg *pg);
/* Through a pooler the URL declares: whether it keeps the session ours
 * alone (session pooling); 0, or -1 with err (69). */
int pg_pooler_check(struct lock *lk, const char *first_pid, struct error *err);
/* The next statement runs on our backend as its next transaction: 1 yes,
 * 0 no, -1 err; *left: an advisory lock or dlock's mark is on it. */
int pg_next_is_ours(struct lock *lk, bool *left, struct error *err);
/* "B/L" -> "B/(L+1)"; -1 when vxid is not one. */
int pg_vxid_next(const char *vxid, char *out, size_t len);
/* err (69): a pooler shares the session; one the URL does not declare. */
void pg_pooler_error(struct lock *lk, struct error *err);
void pg_undeclared_pooler(struct lock *lk, const char *backend,
			  struct error *err);

/* fence.c: the fencing counter.
 *
 * A WITH query that writes the next fence when l took the lock (l.slot >
 * 0), returning it; the server's clock in microseconds when that is more
 * (a counter that lost its last updates in a failover counts on past
 * them). */
#define PG_FENCE_CTE \
	"f AS (INSERT INTO " PG_FENCE_TABLE " AS t (lock_key, fence) " \
	"SELECT " PG_FENCE_KEY ", (extract(epoch FROM clock_timestamp()) * 1000000)::bigint " \
	"FROM l WHERE l.slot > 0 ON CONFLICT (lock_key) DO UPDATE " \
	"SET fence = GREATEST(t.fence + 1, excluded.fence) RETURNING t.fence)"
/* err says what a statement that writes the counter met (why: its
 * SQLSTATE) in words that say what to do: the rights it takes (77), a
 * standby or a read-only session (69); anything else as it was. */
void pg_fence_failed(struct lock *lk, const struct pg_failure *why,
		     struct error *err);
/* The counter's table, made on first use (connecting lk's session): 0,
 * or -1 with err (the session closed). */
int pg_create_fences(struct lock *lk, struct error *err);

/* lock.c, for fence.c's pg_raise_fence (the -k fence, declared by
 * ENGINE_DECLARE): the comment a holder's statements carry, made again
 * (lk->fence changed); the reply to the heartbeat sent before, read
 * before the next statement: 0, -1 not yet, -2 the session ended, -3 it
 * is not ours alone. */
int pg_make_comment(struct lock *lk, struct error *err);
int pg_drain_beat(struct lock *lk, int64_t deadline_ms, struct error *err);

/* holders.c: the other sessions that hold the lock.
 *
 * A nested dlock (lk->reentry_token): 1 its caller holds the lock (token
 * and fence set: re-entered), 0 not (pg->hidden_holder: a holder whose
 * statements this role cannot read), -1 err (64: a mode it cannot
 * re-enter; else a failed statement, the session closed). */
int pg_reentered(struct lock *lk, struct error *err);
/* Who holds it (lk->held_by) and whether in a mode ours cannot share
 * (64): 0, or -1 with err (the session closed if it broke). */
int pg_look_at_holders(struct lock *lk, struct error *err);

/* lock.c: the lock operations (struct engine_lock_ops); inspect.c: the
 * inspection operations (struct engine_inspect_ops). */
ENGINE_DECLARE(pg);
/* A lock's name the server can hash (names.h): 0, or -1 with err (64). */
int pg_check_name(const char *key, struct error *err);
