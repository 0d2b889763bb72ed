/* names.h - where a lock's NAME becomes znode paths and names (pure:
 * unit-tested and fuzzed): the lock's znode and its history's, and the
 * contenders under the lock's znode, as kazoo and Curator name them, and
 * who of them holds the lock.
 *
 * A lock NAME with --prefix PREFIX is the znode /PREFIXNAME under the
 * URL's chroot; its history, /.dlock-history/PREFIXNAME, persistent
 * sequential events "e-" and a sequence number.
 *
 * A contender is an ephemeral sequential child whose name ends in a
 * marker and the sequence number the server appended:
 *
 *   GUID__lock__0000000042     kazoo Lock / WriteLock: exclusive
 *   GUID__rlock__0000000043    kazoo ReadLock: shared
 *   _c_GUID-lock-0000000044    Curator InterProcessMutex (and the Go
 *                              client): exclusive
 *
 * dlock's own GUID says whose, in what mode and with what session
 * timeout, so that status can tell without asking anyone:
 *
 *   -G-MODE-TIMEOUT__lock__SEQ     MODE x (exclusive) or lN (--limit N)
 *   -G-s-TIMEOUT__rlock__SEQ       shared (-s)
 *
 * G is 32 hex digits (the session's id and 16 random ones, or the -k
 * token), TIMEOUT the session's in ms. The leading '-' sorts before any
 * digit: Curator orders children by what follows their last "lock-", and
 * a name without one by the whole name, so that it puts dlock's before
 * its own and never takes a lock a dlock contender holds or waits for.
 * Everyone else orders by the sequence number alone (ZOOKEEPER-3162). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define ZK_GUID_LEN 32
/* Persistent sequential event nodes under a lock's history parent. */
#define ZK_HISTORY_DIR "/.dlock-history"
#define ZK_EVENT_PREFIX "e-"

/* The lock's znode, chroot/PREFIXNAME (chroot "" or "/a/b"), and the
 * parent of its history's events, chroot/.dlock-history/PREFIXNAME
 * (malloc'd; NULL out of memory). */
char *zk_lock_path(const char *chroot, const char *prefix, const char *name);
char *zk_history_path(const char *chroot, const char *prefix, const char *name);
/* Why name cannot name a lock, beside what zk_path_invalid() says of its
 * path: NULL when it can. */
const char *zk_name_invalid(const char *name);
/* dlock status without KEY, for prefix DIR/TAIL: the walk starts at
 * chroot/DIR (malloc'd; NULL out of memory), whose children named TAIL...
 * are the first level. zk_list_top(): for such a child, what follows
 * TAIL (the lock name's start), or NULL when it is none of those (nor
 * the history's parent, nor ZooKeeper's own /zookeeper). */
char *zk_list_root(const char *chroot, const char *prefix);
const char *zk_list_top(const char *chroot, const char *prefix,
			const char *child);
/* An event's name, "e-" and ten digits: 0 with its sequence number, or
 * -1 (none of ours). */
int zk_event_seq(const char *name, long long *seq);

struct zk_contender {
	const char *name;
	long long seq;		/* the server's suffix, signed as printed */
	bool shared;		/* __rlock__ */
	bool ours;		/* dlock's name */
	long limit;		/* ours: --limit N; 0 exclusive or shared */
	long long timeout_ms;	/* ours: the session timeout; -1 */
};

/* Parses a child's name: 0 a contender, -1 not one (left alone). */
int zk_contender_parse(const char *name, struct zk_contender *c);

/* Sorts by sequence number (then name, for equal ones). */
void zk_contenders_sort(struct zk_contender *c, size_t n);

/* Whether contender i of the sorted c[0..n-1] holds the lock: shared,
 * no exclusive one before it; ours with --limit N, among the first N and
 * only --limit N ones before it (never beside another N: see
 * zk_contender_mode()); else the first. */
bool zk_holds(const struct zk_contender *c, size_t n, size_t i);

/* A contender's mode, as lock_params.limit says it: -1 shared (dlock -s,
 * kazoo's ReadLock), N for dlock --limit N, 0 exclusive (anything else).
 * Holders are all of one mode, the first contender's: a non-exclusive
 * request of another mode is refused while they hold (engine.c). */
long zk_contender_mode(const struct zk_contender *c);

/* Whom contender i waits for: the index of the node whose deletion may
 * let it in (the one just before it; for a shared one the nearest
 * exclusive one before it), or -1 when any change among those before it
 * may (--limit: watch the lock's children). */
long zk_waits_for(const struct zk_contender *c, size_t n, size_t i);

/* The name dlock creates (without the sequence number): "-G-MODE-T__lock__"
 * into out. Returns 0, or -1 when it does not fit. */
int zk_name_prefix(const char *guid, long limit, long long timeout_ms,
		   char *out, size_t outlen);

/* Whether name is one of ours made with guid. */
bool zk_name_has_guid(const char *name, const char *guid);

/* What history events name a contender by: dlock's GUID (as DLOCK_TOKEN
 * starts, without the session's password, and known before the node's
 * sequence number), another client's node name. out: ZK_GUID_LEN + 1. */
const char *zk_event_token(const struct zk_contender *c, char *out, size_t len);

/* A holder's node data (from the server, whoever set it): the holder
 * info, then, once dlock extend changed the session's timeout, a NUL and
 * "timeout_ms=N". Returns the info's length; *timeout_ms the one written,
 * or -1. */
size_t zk_node_info(const char *data, int len, long long *timeout_ms);

/* dir + "/" + name, as one path (malloc'd; NULL out of memory). */
char *zk_join(const char *dir, const char *name);
/* What follows path's last '/' (all of it without one). */
const char *zk_base_name(const char *path);
/* b[0..n-1] as 2n lowercase hex digits and a NUL, into out. */
void zk_hex(const unsigned char *b, size_t n, char *out);
