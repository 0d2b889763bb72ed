/* mysql.h - the MySQL/MariaDB engine (src/engine.h): GET_LOCK() on a
 * connection of the lock's own, over MariaDB Connector/C's non-blocking
 * API. Its state for one lock (struct lock's e) and what its files share;
 * included by no other folder.
 *
 *   engine.c    the struct engine: its settings over url.c, the rest
 *               wired to the functions below
 *   url.c/.h    mysql:// and mariadb:// URLs: pure, unit-tested, fuzzed
 *   conn.c/.h   one connection, every wait bounded by a deadline; the
 *               server's answers sorted into exit codes
 *   names.c/.h  a lock's NAME as GET_LOCK's name (hashed with '#' when
 *               long), the key of its rows, the SQL literals: pure,
 *               unit-tested against collisions, fuzzed
 *   lock.c      the lock operations: try, the blocking wait, the probe
 *               that extends, the watch, release
 *   acquire.c   the batch that asks for the lock, and what its answers
 *               say (the checks, the fence row, the tables)
 *   history.c   the history's events in dlock_history, and its trims
 *   inspect.c   status, the list of locks, history, release --force */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "conn.h"
#include "engine.h"
#include "names.h"
#include "url.h"

/* The tables, created on first use in the URL's database (dlock(1) prints
 * the same, for an administrator to create them ahead). dlock_locks: one
 * row per lock name, its fencing counter and its last holder; the holder
 * is the one IS_USED_LOCK() names only while conn is that connection's
 * id. InnoDB: the fence is durable (the redo log flushed) before the job
 * starts. dlock_history: events, newest last, trimmed to --history. Names
 * are VARBINARY: compared byte for byte (a _ci collation makes Foo and
 * foo, and any PAD SPACE one 'a' and 'a ', one row). */
#define MY_DDL_LOCKS \
	"CREATE TABLE IF NOT EXISTS dlock_locks (" \
	"name VARBINARY(64) NOT NULL PRIMARY KEY, " \
	"fence BIGINT UNSIGNED NOT NULL, " \
	"conn BIGINT UNSIGNED NOT NULL, " \
	"token VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, " \
	"holder VARBINARY(1024) NOT NULL, " \
	"ttl_ms BIGINT UNSIGNED NOT NULL, " \
	"lock_name VARBINARY(1024) NOT NULL" \
	") ENGINE=InnoDB"
/* The history is a record for people, not a safety mechanism: a table
 * whose writes flush nothing (an InnoDB one costs every release a second
 * flush of the redo log, the fence's being the first), repaired by the
 * server after a crash, the last rows maybe lost. MariaDB: Aria without
 * its transaction log (MyISAM there flushes its files at every INSERT ...
 * SELECT); MySQL: MyISAM, unless the server enforces GTID consistency,
 * which refuses it in a transaction with the fence row. MY_DDL_HISTORY
 * is followed by one of the engines; a server that refuses the fast one
 * (enforce_storage_engine, disabled_storage_engines) gets InnoDB. */
#define MY_DDL_HISTORY \
	"CREATE TABLE IF NOT EXISTS dlock_history (" \
	"id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, " \
	"name VARBINARY(64) NOT NULL, " \
	"at_ms BIGINT NOT NULL, " \
	"event ENUM('acquired', 'broken', 'released', 'lost', 'killed') NOT NULL, " \
	"token VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, " \
	"holder VARBINARY(1024) NOT NULL, " \
	"by_info VARBINARY(1024) NULL, " \
	"fence BIGINT UNSIGNED NULL, " \
	"exit_status INT NULL, " \
	"held_ms BIGINT NULL, " \
	"KEY name_id (name, id)" \
	") "
#define MY_HISTORY_MARIADB "ENGINE=Aria TRANSACTIONAL=0"
#define MY_HISTORY_MYSQL "ENGINE=MyISAM"
#define MY_HISTORY_DURABLE "ENGINE=InnoDB"

/* Where each statement's result is in a batch that acquires; -1: not
 * in it. */
struct my_batch {
	int set, check, get, fence, history, count;
};

struct mylock {
	struct lock *lk;
	const struct my_url *u;
	struct my_names names;		/* its names in SQL (names.h) */
	struct my_conn c;			/* the lock's own connection */
	bool session_set;	/* wait_timeout set, the server checked */
	bool no_wsrep;		/* the server has no @@wsrep_on (MySQL) */
	bool held;		/* c holds the lock */
	bool waiting;		/* c waits in a blocking GET_LOCK */
	struct my_batch wait_batch;	/* the batch that waits */
	int64_t wait_ends_ms;	/* when the server gives that up */
	bool probing;		/* a probe's answer is late: still pending */
	int64_t probe_ms;	/* when it was sent */
	bool reentry_asked;
	long long fence;	/* -1: none */
	unsigned long long event_id;	/* our 'acquired' event; 0 */
	bool no_history;	/* dlock_history failed us: no more events */
	/* The batch that took the lock, whose history statements (its
	 * tail) the job did not wait for: my_finish_tail() reads them */
	struct my_batch tail;
	bool tail_pending;	/* its answers are still to be read */
	bool tail_ours;		/* it took the lock: they are the history's */
	/* the lock's events in dlock_history once ours was written, when
	 * this release trims the oldest beyond --history (-1: it does not) */
	long long history_rows;
};

static inline struct mylock *M(const struct lock *lk)
{
	return lk->e;
}

/* acquire.c: the batch that asks for the lock, and its answers. What
 * my_acquire_sql() puts in a batch besides the fence row and the history
 * event (which are written only if the lock is ours): */
#define WITH_GET 1		/* GET_LOCK (and, first, the session's set-up) */
/* The statements that take the lock, as one batch (b: where what is in
 * it): the session set up and checked (first time), GET_LOCK waiting secs
 * (with WITH_GET), the fence row and the history event when granted.
 * NULL: out of memory; else the caller frees it. */
char *my_acquire_sql(struct lock *lk, double secs, int with,
		     struct my_batch *b);
/* Sends it and waits until deadline_ms for its answers up to the fence
 * row's (the history's are my_finish_tail()'s). Returns 0, or -1 with err
 * (the connection closed). */
int my_query_head(struct mylock *m, const char *sql,
		  const struct my_batch *b, int64_t deadline_ms, struct error *err);
/* What its answers say: LOCK_ACQUIRED (the fence taken, the tables
 * created on first use), LOCK_HELD, or LOCK_FAILED with err. */
enum lock_result my_answer(struct lock *lk, const struct my_batch *b,
			   int64_t start_ms, int64_t deadline_ms,
			   struct error *err);
/* A statement on the fence row failed: err says what to grant. */
void my_fence_error(struct lock *lk, struct error *err);
/* Creates dlock_locks and dlock_history on m's connection. Returns 0, or
 * -1 with err. */
int my_create_tables(struct lock *lk, int64_t deadline_ms,
		     struct error *err);

/* history.c: the history's events. The statements of the batch that
 * acquires which write its 'acquired' event if the lock is ours (b's
 * count and history), from statement n: returns the next n. */
int my_acquired_sql(FILE *f, struct lock *lk, const char *tok,
		    const char *info, struct my_batch *b, int n);
/* The answers to the tail of the batch that took the lock (or that did
 * not: then only read), before anything else is asked on the connection,
 * until deadline_ms. Returns 0 when done (the connection may have died:
 * c.broken), 1 when answers are still to come at deadline_ms. */
int my_finish_tail(struct lock *lk, int64_t deadline_ms);
/* The statements of the release's batch before RELEASE_LOCK: the event
 * and the trim, or the acquisition forgotten. Returns how many (0 with
 * no history), or -1: out of memory. */
int my_released_sql(FILE *f, struct lock *lk, const struct release_how *how);
/* The lease lost: its 'lost' event, from a connection of its own. */
void my_record_lost(struct lock *lk, const struct release_how *how);
/* Runs the event's insert on c, then trims names' events to the newest
 * keep. Best effort. */
void my_event_trimmed(struct my_conn *c, const struct my_names *names,
		      long keep, const char *insert, int64_t deadline_ms);

/* lock.c: the lock part of struct engine (src/engine.h), note_killed
 * history.c's; inspect.c: status, list, history, force */
ENGINE_DECLARE(my);
/* Fills n for prefix + key but the row key (my_names_make() with
 * libcrypto's SHA-256). Returns 0, or -1 with err (70, naming u) when the
 * SHA-256 a long name needs failed. */
int my_names(struct my_names *n, const struct my_url *u, const char *prefix,
	     const char *key, struct error *err);
