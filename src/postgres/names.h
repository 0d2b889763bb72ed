/* names.h - PostgreSQL: the one place where a lock's NAME becomes what
 * the server locks (names.c). The statements pass the text PREFIX NAME as
 * $1 and the server hashes it, so that psql takes the same lock with the
 * same words:
 *   the lock     pg_advisory_lock(hashtextextended($1, 0)): one bigint
 *   --limit's    slot i (1..N), the two-int lock on the halves of
 *   slots        hashtextextended($1, i): pg_locks tells one-bigint
 *                locks (objsubid 1) from two-int ones (2), so no slot is
 *                ever a name's lock, whatever the hashes
 *   the fence    the row of public.dlock_fences whose lock_key is the
 *                lock's key
 * Pure: no I/O, no libpq; unit-tested (tests/unit/test_postgres.c). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* One statement tries every slot: its size grows with --limit N. */
#define PG_LIMIT_MAX 1000

/* The lock's key: the name's text ($1) hashed by the server. */
#define PG_KEY_OF "hashtextextended($1, 0)"
/* The fencing counter: one row per lock in this table, by the lock's
 * key (fence.c makes the table). */
#define PG_FENCE_TABLE "public.dlock_fences"
#define PG_FENCE_KEY PG_KEY_OF
/* The rows of pg_locks (l) of the lock's key, with each session (a): an
 * advisory lock on one bigint shows as its halves, objsubid 1. */
#define PG_LOCKS_OF_KEY \
	"FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid " \
	"WHERE l.locktype = 'advisory' AND l.objsubid = 1 " \
	"AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) " \
	"AND l.classid = ((" PG_KEY_OF " >> 32) & 4294967295)::oid " \
	"AND l.objid = (" PG_KEY_OF " & 4294967295)::oid "

/* The same rows, granted, for the hot paths (a waiter's look before it
 * waits, a shared grant's): the functions behind the views, whose
 * rewriting and joins cost a new backend about 2 ms of CPU more than the
 * rest of its statement (pgbench -C). The holder's statement is
 * (SELECT query FROM pg_stat_get_activity(l.pid)): NULL once it ended. */
#define PG_HOLDERS_OF_KEY \
	"FROM pg_lock_status() l " \
	"WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted " \
	"AND l.database = (SELECT datid FROM pg_stat_get_activity(pg_backend_pid())) " \
	"AND l.classid = ((" PG_KEY_OF " >> 32) & 4294967295)::oid " \
	"AND l.objid = (" PG_KEY_OF " & 4294967295)::oid "
#define PG_HOLDER_QUERY "(SELECT query FROM pg_stat_get_activity(l.pid))"

/* The text the server hashes: prefix and name, malloc'd; NULL: out of
 * memory. */
char *pg_key_text(const char *prefix, const char *name);
/* The server hashes the text as the database's encoding holds it, and
 * dlock's sessions speak UTF-8: 0, or -1 with why (a setting to fix)
 * when key is not well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF). */
int pg_name_check(const char *key, char *why, size_t len);
/* The call of the advisory lock function fn ("pg_try_advisory_lock",
 * "pg_advisory_unlock"...; shared: its _shared form) on the lock's key
 * (slot 0) or on --limit's slot 1..PG_LIMIT_MAX, as snprintf() writes
 * and counts. */
int pg_call(char *out, size_t len, const char *fn, bool shared, long slot);
