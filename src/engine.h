/* engine.h - what the core asks of the store that keeps a lock.
 *
 * The core (options, settings, waiting, the lease's clock, the job, -k,
 * the inspection commands' output) is the same whatever keeps the lock;
 * an engine keeps it: Redis (src/redis/), PostgreSQL (src/postgres/),
 * MySQL/MariaDB (src/mysql/), ZooKeeper (src/zookeeper/), etcd
 * (src/etcd/). Each fills one struct engine; no core file includes a
 * client library's header, and no engine includes another's.
 *
 * One file set per engine, the same names in every folder, one role each
 * (as tooz keeps one driver per engine); an engine adds files for what is
 * its own (Redis's cluster, sentinel, TLS and Lua; etcd's HTTP and JSON),
 * never fewer. Adding an engine means filling these:
 *   NAME.h       its own state (the lock's struct) and what its files
 *                share, ENGINE_DECLARE(P) (the standard names, below);
 *                included by no other folder
 *   engine.c     the struct engine: its settings, lock and inspect parts
 *                wired to the functions below (ENGINE_OPS()...), its
 *                reasons for what it cannot do (caps.h),
 *                ENGINE_MODULE_ABI; nothing else
 *   url.c/.h     its URLs, one at a time (P_url_parse, P_url_text; the
 *                core keeps the list): strict, pure, fuzzed; the text
 *                messages show (url_mask()); whether one asks for TLS; no
 *                I/O
 *   conn.c/.h    a connection to the store, every wait bounded by a
 *                deadline and, while dlock waits for the lock, ended by a
 *                stop signal (net_wait(), or a poll() of net_stop_fd());
 *                the store's answers sorted into exit codes
 *                (64 a setting to fix, 69 unreachable or busy, 70 an
 *                unexpected answer, 77 refused credentials)
 *   names.c/.h   the one place where a lock's NAME (its --limit slots, its
 *                history, its fence) becomes the store's keys, paths or
 *                names: pure, unit-tested against collisions
 *   lock.c       begin, try, the wait, extend, the watch, release,
 *                raise_fence, note_killed: the lock_ops part
 *   inspect.c    status, list, history, release --token, --force, extend
 *                --token: the inspect part
 *   meson.build  the module (a meson feature found by pkg-config)
 * and its tests: tests/NAME.bats for what is native to the store (its own
 * clients, its own faults), the feature suites run on it by the matrix
 * (tests/README.md), and a fuzz target for what it parses.
 *
 * One loss clock for every engine: lock.valid_until_ms is a monotonic
 * bound (clock.h) until which the lock is surely ours. Only proof of life
 * moves it forward: a grant, a renewal the store confirmed, a probe the
 * store answered, a ZooKeeper session seen connected. The core tells the
 * job a tenth of the TTL before it runs out (lease.c, supervise.c, the
 * watchdog), whatever the engine.
 *
 * Threads: the core calls an engine from its main thread, except extend(),
 * which the renewal thread calls while the job runs; meanwhile the main
 * thread calls only watch_fds() and watch_events(), and never while a
 * renewal round runs. So a lock's connections have one user at a time. */
#pragma once
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "log.h"

#define LOCK_SHARED (-1)	/* lock_params.limit of a shared lock */
#define LOCK_EXIT_UNKNOWN (-1)	/* a job's exit status nobody knows */
/* lock_release_job(): the lock was no longer ours at the release (deleted,
 * lapsed, taken over between two renewals): a lease lost while the job
 * ran, unnoticed. err says so (75). */
#define LOCK_RELEASE_LOST 2
#define LOCK_TOKEN_MAX 64	/* the longest token, without its NUL */
#define LOCK_INFO_MAX 512	/* the longest holder info, with its NUL */
#define LOCK_FDS_MAX 64		/* the most descriptors one lock uses */
#define LOCK_ENV_MAX 4		/* variables an engine adds to the job's */
/* The longest a waiter sleeps between two tries (wait.c): Redis counts a
 * waiter gone after this, 2 s and two --node-timeouts without a try. */
#define LOCK_RETRY_MAX_MS 4000

enum lock_result {
	LOCK_ACQUIRED,
	LOCK_REENTERED,		/* our caller's lock: run without acquiring */
	LOCK_HELD,		/* someone else has it */
	LOCK_FAILED,		/* err says why: 69, 70 or 77 (64, 71) */
	LOCK_INTERRUPTED,	/* a signal arrived while waiting */
};

enum extend_result { EXTEND_OK, EXTEND_FAILED, EXTEND_LOST };

/* What an engine can do, one bit each. An option that needs a capability
 * the engine lacks is a usage error (64) naming engine and option, found
 * before anything is contacted (main.c), with the engine's reason. Each is
 * said once: by the functions the engine fills (derived), or in its
 * settings.flags (declared) where no function can show it. */
enum engine_cap {
	/* declared: behaviour the functions cannot show */
	CAP_SHARED = 1 << 0,		/* -s */
	CAP_LIMIT = 1 << 1,		/* --limit N */
	CAP_FAIR = 1 << 2,		/* --fair: honoured, or FIFO anyway */
	CAP_SEVERAL = 1 << 6,		/* several -S URLs (RedLock) */
	CAP_WAIT_REPLICAS = 1 << 7,	/* --wait-replicas */
	CAP_NO_FORK = 1 << 9,		/* -F: a forked helper can keep the
					 * lease (the connections survive
					 * fork()) */
	CAP_UNAVAILABLE_RUN = 1 << 10,	/* --unavailable run */
	/* derived from the inspection part (caps_of()) */
	CAP_STEPS = 1 << 3,		/* acquire, extend, release --token
					 * from separate processes:
					 * release_token and extend_token */
	CAP_HISTORY = 1 << 4,		/* dlock history: history */
	CAP_FORCE = 1 << 5,		/* release --force: force */
	CAP_LIST = 1 << 11,		/* dlock status with no KEY: list */
	/* declared traits: how the store keeps a lock. Nothing is refused
	 * for want of one, so none takes a reason. */
	CAP_MIN_HOLD_KEPT = 1 << 8,	/* the store keeps --min-hold after
					 * dlock exits; without it dlock
					 * keeps the lock itself until then */
	CAP_HELD_BY_CONNECTION = 1 << 12,	/* the store frees the lock the
					 * moment its connection closes (not
					 * at a lease's end): the watchdog
					 * holds the connection, should dlock
					 * be killed, until the job is stopped */
};
#define CAPS_DERIVED (CAP_STEPS | CAP_HISTORY | CAP_FORCE | CAP_LIST)
#define CAPS_TRAITS (CAP_MIN_HOLD_KEPT | CAP_HELD_BY_CONNECTION)
#define CAPS_ALL ((1u << 13) - 1)

/* Why an engine lacks a capability: settings.cannot lists one for each
 * it lacks (traits aside), and none for one it has (caps_check()). */
struct engine_cannot {
	unsigned cap;		/* one enum engine_cap; 0 ends the list */
	const char *why;	/* after "ENGINE cannot OPTION: " */
};

/* --tls-ca, --tls-cert, --tls-key, --tls-insecure (config.c resolves). */
struct tls_options {
	char *ca;		/* NULL: the system's CAs */
	char *cert, *key;	/* a client certificate: both or neither */
	bool insecure;		/* no verification at all */
};

struct engine;
struct settings;

/* What the lock is and how this caller takes it: built once, by main, from
 * the command line and the settings. */
struct lock_params {
	const char *name;	/* the lock's name as given, for messages */
	const char *prefix;	/* the store's name is prefix + name */
	const struct engine *engine;
	const void *servers;	/* the engine's parsed URLs (engine.parse) */
	size_t n_servers;
	char *const *server_texts;	/* the same as given */
	const char *password;	/* for URLs that carry none */
	const struct tls_options *tls;
	int64_t ttl_ms, node_timeout_ms;
	/* --connect-budget: how long servers that are down or full are
	 * tried again before the acquisition fails (69), see wait.c */
	int64_t connect_budget_ms;
	long limit;		/* 0 exclusive, LOCK_SHARED, or N holders */
	bool fair;		/* waiters take the lock in arrival order */
	bool waits;		/* a refusal counts the caller among waiters */
	int wait_replicas;	/* an acquisition counts once N replicas have it */
	const char *command;	/* the holder's command, for the holder info */
	int holder_pid;		/* the holder info's pid; 0: ours */
	long history;		/* events the lock's history keeps; 0: none */
	int64_t min_hold_ms;	/* --min-hold: kept that long at least; 0: off */
	bool no_fence;		/* --no-fence: no DLOCK_FENCE, no write for it */
	bool verbose;
	const char *token;	/* -k: the token of every acquisition, one
				 * for all the keys; NULL: a fresh one each */
};

/* One lock as the core holds it; the engine's own state hangs off e. */
struct lock {
	const struct lock_params *p;
	const struct engine *eng;
	void *e;		/* the engine's: open() to close() */
	char *key;		/* the lock's name in the store (DLOCK_KEY),
				 * set by open() */
	char token[LOCK_TOKEN_MAX + 1];	/* this holder's (DLOCK_TOKEN) */
	char fence[24];		/* DLOCK_FENCE; "" for none (--no-fence) */
	const char *reentry_token;	/* DLOCK_TOKEN, when DLOCK_KEY is our
					 * key and we run inside that job:
					 * try() re-enters if the store says
					 * that token holds the lock */
	/* "host\tpid\tuser\tsince_ms\tcommand", see show.h: what status and
	 * a waiter's line show of this holder; the core fills it, and
	 * stamps since_ms right before each try (lock_stamp_since()). */
	char info[LOCK_INFO_MAX];
	int64_t ttl_ms, node_timeout_ms;
	int64_t valid_until_ms;	/* the loss clock: ours at least until then */
	int64_t lapse_ms;	/* once nothing keeps it, the longest the store
				 * may hold it, counted from then (ZooKeeper:
				 * the session's timeout and a tick of the
				 * server's); 0: the TTL (lock_lapse_ms()) */
	int64_t acquired_ms;	/* when the acquiring round began */
	int64_t wait_deadline_ms;	/* the core's -w deadline, for blocking
					 * calls in the store; -1: none */
	/* what the last refusal said, for the wait line */
	char held_by[LOCK_INFO_MAX];	/* the holder's info, or "" */
	long queue_pos;		/* our place among waiters; 0: unknown */
	bool refused;		/* a server said the lock is held */
	bool misconfigured;	/* the failure is a setting to fix (a
				 * certificate), not an outage: no
				 * --unavailable run */
	bool lost_at_release;	/* the last release found the lock no longer
				 * ours: the lease was lost (75) */
	bool busy;		/* the last try's failures were all passing
				 * states a server answered with (TRYAGAIN,
				 * LOADING...), none a server unreachable */
	bool full_at_a_cost;	/* the last try was turned away by a full
				 * server at the price of a process
				 * (PostgreSQL forks a backend to say "too
				 * many clients"): its first pauses are longer */
	bool waits_polling;	/* set by open(): a refused try leaves nothing
				 * waiting in the store and no connection
				 * held (PostgreSQL's and MySQL's
				 * dlock_wait=poll), so that each try costs
				 * the server a connection: the pauses
				 * between tries grow (wait.c) */
	/* "NAME=value" strings the engine adds to the command's environment
	 * besides DLOCK_*, where its own tools set some (etcd: ETCD_LOCK_KEY
	 * and ETCD_LOCK_REV, as `etcdctl lock` does); NULL-terminated, set
	 * when try() acquires or re-enters, the engine's memory. */
	const char *env[LOCK_ENV_MAX + 1];
	size_t env_max;		/* the most env's strings will take, NULs
				 * counted: set by open(), for the check
				 * that the command's execve() fits */
};

/* A release: how, and what the history records. */
struct release_how {
	bool job;		/* a job ran; else an acquisition given back */
	int exit_status;	/* the job's, or LOCK_EXIT_UNKNOWN */
	bool min_hold;		/* keep the lock for what is left of
				 * --min-hold (CAP_MIN_HOLD_KEPT only) */
};

/* ---- what the inspection commands show (status.c, history.c print) --- */

struct status_holder {
	char *token;		/* the holder's token or value in the store */
	size_t token_len;
	char *info;		/* holder info (show.h); NULL: a foreign holder */
	size_t info_len;
	int64_t left_ms;	/* lease left; -1: no expiry; -2: unknown */
	long long fence;	/* -1: none */
	long slot;		/* --limit: its slot; -1 */
	size_t n_servers;	/* on how many servers (1 but for RedLock) */
	char *note;		/* the engine's words, or NULL ("session
				 * 0x1f, timeout 9s") */
};

struct status_waiter {
	char *token, *info;	/* info NULL: unknown */
	size_t token_len, info_len;
	long long ticket;	/* its place; -1 */
};

enum status_state { ST_HELD, ST_FREE, ST_OTHER, ST_SPLIT, ST_UNKNOWN };

/* What one server says (RedLock prints them all). */
struct status_server {
	char *url;		/* the URL, password masked */
	char *says;		/* a few words */
	bool failed;		/* says is the error */
	char kind[8];		/* "error", "free", "held", "other" */
	char type[16];		/* what the key is: "string", "hash"... */
	int64_t ttl_ms;		/* -1 none */
	long long fence;	/* -1 none */
	char **tokens;
	size_t n_tokens;
};

struct status_lock {
	char *name;		/* as given, or as listing found it */
	char *key;		/* the store's name for it */
	enum status_state state;
	char type[16];		/* the store's kind of thing; "" */
	char mode[24];		/* "s", "N" (--limit N), "" */
	bool foreign;		/* held by another client than dlock */
	int64_t ttl_ms;		/* the lock's own: -1 none, -2 unknown */
	struct status_holder *holders;
	size_t n_holders;
	struct status_waiter *waiters;	/* in queue order */
	size_t n_waiters;
	long long fence;	/* the fencing counter; -1: none */
	long long n_waiting, n_writers;	/* 0: none (or unknown) */
	size_t n_agree;		/* servers that agree */
	struct error err;	/* ST_UNKNOWN: why */
	struct status_server *servers;	/* n_servers of them, or NULL */
	size_t n_servers;
};

/* killed: dlock was killed (kill -9); its watchdog stopped the job and
 * wrote this, and the lock lapses with its lease. */
enum history_kind { EV_ACQUIRED, EV_BROKEN, EV_RELEASED, EV_LOST, EV_KILLED };

struct history_event {
	enum history_kind kind;
	int64_t time_ms;	/* wall clock, the store's */
	char *id;		/* the store's name for the event */
	char *token;
	size_t token_len;
	char *holder;		/* holder info, or NULL */
	size_t holder_len;
	char *by;		/* holder info of who broke or released it */
	size_t by_len;
	long long fence, exit, held_ms;	/* -1: none */
	size_t n_servers;
};

struct history_report {
	struct history_event *events;	/* newest first */
	size_t n_events;
	size_t n_servers, n_ok;
};

struct broken_holder {
	char *token, *info;	/* info NULL: a foreign holder */
	size_t token_len, info_len;
	int64_t left_ms;	/* lease left; -1: no expiry; -2: unknown (a
				 * foreign holder's, a session's) */
	size_t n_servers;
	long long fence;	/* its fence, where the store keeps it apart
				 * from info (info's own comes first); 0: none */
};

/* ---- the engine ---------------------------------------------------------
 *
 * An engine fills one struct engine in three parts: its settings (what the
 * core needs of it before any lock exists), its lock operations, and its
 * inspection and repair operations. A member marked [opt] may be NULL: the
 * engine has no such thing, and the core does without it or refuses what
 * needs it (64, with the engine's reason); the others must be there.
 * What it can do follows from what it fills (caps.h); a module declares
 * nothing twice. What the core knows of an engine without loading it (the
 * URL schemes it claims, how far a URL reaches in a list, --help's lines)
 * is its slot in src/engine.c. */

/* Part 1: the settings, before any lock. */
struct engine_settings {
	const char *name;	/* "Redis", "PostgreSQL"... for messages: its
				 * slot's name in src/engine.c */
	unsigned flags;		/* the declared enum engine_cap bits (none of
				 * CAPS_DERIVED: those follow from part 3) */
	/* Why it lacks each capability it lacks; { 0, NULL } ends it. */
	const struct engine_cannot *cannot;
	int64_t min_ttl_ms;	/* the shortest --ttl it can keep */
	/* Its server URLs, which the core keeps in one array of url_size
	 * bytes each, what lock_params.servers points to (engine_parse_servers()
	 * and the others below). parse_url: one URL into url, zeroed before;
	 * pure, a bad one is -1 with the reason in why (64), never echoing a
	 * password. */
	size_t url_size;
	int (*parse_url)(const char *s, void *url, char *why, size_t whylen);
	/* [opt] Frees what a parsed URL holds (MySQL wipes its password). */
	void (*free_url)(void *url);
	/* The URL as messages name it, its password masked. */
	const char *(*url_text)(const void *url);
	/* [opt] Whether it asks for TLS (--tls-* need one). */
	bool (*url_tls)(const void *url);
	/* [opt] Once, on the main thread, before any other thread and lock:
	 * load what the engine needs (OpenSSL for rediss://), given the
	 * settings (config.h); end undoes it at exit. */
	int (*init)(const struct settings *st, struct error *err);
	void (*end)(void);
};

/* Part 2: a lock. */
struct engine_lock_ops {
	/* How long the job runs before watch_fds() is asked: where watching
	 * costs connections of its own (Redis), a job that ends sooner never
	 * opens them; 0 where it is a socket the lock has anyway. */
	int64_t watch_after_ms;
	/* open fills lk->e and lk->key, contacting nothing yet; close frees
	 * what open and the rest made (connections closed: a lock that dies
	 * with its connection is given back then). */
	int (*open)(struct lock *lk, struct error *err);
	void (*close)(struct lock *lk);

	/* Acquiring. begin starts an acquisition: a fresh token (p->token
	 * when set), no place in any queue yet. try asks once: LOCK_HELD
	 * sets *retry_ms, when to ask again at the latest (-1: the core's
	 * pace); anything but LOCK_ACQUIRED gives back what was partly
	 * taken, and LOCK_ACQUIRED sets token, fence, valid_until_ms and
	 * acquired_ms. wait_fds, when the core is about to sleep after
	 * LOCK_HELD: the descriptors whose events wake the waiter (BLPOP
	 * connections, a blocking call's socket, an eventfd), at most max;
	 * wait_events takes their poll() results and says whether to try
	 * again now. end_wait: the acquisition is over with r; leave queues,
	 * cancel blocking calls, give back what was granted to a call that
	 * was cancelled too late. */
	int (*begin)(struct lock *lk, struct error *err);
	enum lock_result (*try)(struct lock *lk, int64_t *retry_ms,
				struct error *err);
	size_t (*wait_fds)(struct lock *lk, struct pollfd *pfd, size_t max);
	bool (*wait_events)(struct lock *lk, const struct pollfd *pfd, size_t n);
	void (*end_wait)(struct lock *lk, enum lock_result r);

	/* Holding. extend: one renewal round (or probe), each server bounded
	 * by timeout_ms; EXTEND_OK sets valid_until_ms from the round's
	 * start, EXTEND_LOST means the store says it is no longer ours. */
	enum extend_result (*extend)(struct lock *lk, int64_t timeout_ms,
				     struct error *err);
	/* [opt, both or neither] What tells the holder early that the lock
	 * may be gone (a release notice, a socket the server closed, a
	 * watch); watch_events returns true to ask for a renewal round now,
	 * with what it learnt in note (or ""). */
	size_t (*watch_fds)(struct lock *lk, struct pollfd *pfd, size_t max);
	bool (*watch_events)(struct lock *lk, const struct pollfd *pfd,
			     size_t n, char *note, size_t notelen);
	/* [opt, with history] dlock was killed (kill -9) while the job ran;
	 * its watchdog, in a process of its own, opened lk (p->token the
	 * holder's, fence and info set) to write the lock's history a
	 * "killed" event, bounded by --node-timeout. */
	void (*note_killed)(struct lock *lk, int64_t held_ms);
	/* Every descriptor the lock uses, for -F's helper, which closes all
	 * others, and the watchdog (CAP_HELD_BY_CONNECTION). */
	size_t (*fds)(const struct lock *lk, int *fds, size_t max);

	/* Releasing. 0 done, 1 done on a majority only (err says where
	 * not), -1 not done: the lock lapses with its lease. Sets
	 * lk->lost_at_release when it was no longer ours. */
	int (*release)(struct lock *lk, const struct release_how *how,
		       struct error *err);
	/* [opt] -k: raise the lock's fencing counter to fence (another
	 * key's, larger) and make it this holder's, so that the next holder
	 * of this key gets a larger one. NULL: the store's fences are one
	 * counter for every key (a transaction ID, a zxid, a revision). */
	int (*raise_fence)(struct lock *lk, const char *fence, struct error *err);
	/* [opt] --verbose after a failure: one line for each server that
	 * failed. NULL: one server, the error says it all. */
	void (*log_servers)(const struct lock *lk);
	/* [opt] --min-hold where dlock keeps the lock itself (no
	 * CAP_MIN_HOLD_KEPT): the job ended, and lk->info now ends in
	 * "\tfence\tfinished_ms" (show.h). Writes it where the store keeps
	 * the holder info, for status to say "command finished" and for
	 * re-entry with the job's token to be refused (the token is the
	 * running job's only, as on Redis). 0, or -1 with err: the
	 * renewals say what became of the lock. */
	int (*finished)(struct lock *lk, struct error *err);
};

/* Part 3: inspection and repair. lk is opened on the first name (or ""),
 * and none of them is called while a job runs. Each [opt] one gives a
 * capability (caps_of()). */
struct engine_inspect_ops {
	/* status fills locks[0..n-1] (name set by the caller) in as few
	 * rounds as it can; 0, or -1 with err when nothing could be asked. */
	int (*status)(struct lock *lk, struct status_lock *locks, size_t n,
		      struct error *err);
	/* [opt] CAP_LIST: every lock's name under the prefix. */
	int (*list)(struct lock *lk, char ***names, size_t *n,
		    struct error *err);
	/* [opt] CAP_HISTORY: the lock's last count events. */
	int (*history)(struct lock *lk, long count, struct history_report *out,
		       struct error *err);
	/* [opt, both or neither] CAP_STEPS. release --token: 0 released, 1
	 * not held by that token, else an exit status with err. extend from
	 * another process: lk->token is the token given; the lease renewed
	 * to the TTL. */
	int (*release_token)(struct lock *lk, const char *token,
			     struct error *err);
	enum extend_result (*extend_token)(struct lock *lk, struct error *err);
	/* [opt] CAP_FORCE, release --force: the holders broken; 0 broken, 1
	 * free, else an exit status with err (70: a key that is no lock,
	 * left alone). */
	int (*force)(struct lock *lk, struct broken_holder **out, size_t *n,
		     struct error *err);
};

struct engine {
	struct engine_settings settings;
	struct engine_lock_ops lock;
	struct engine_inspect_ops inspect;
};

/* The standard names. An engine whose functions carry the prefix P (zk,
 * pg, my, etcd, redis) names each after the member it fills: P_open ...
 * P_finished for the lock part, P_status ... P_force for the inspect part.
 * Macros, so that the five engines do not each repeat the interface:
 * ENGINE_DECLARE(P), in NAME.h, declares them all with the types above,
 * once, and -Wmissing-prototypes catches a definition whose name is not
 * one of them; a member the engine leaves NULL stays declared and never
 * defined (C allows that: nothing refers to it).
 *
 * In its struct engine: ENGINE_URL_OPS(P, T), in the settings part, its
 * URLs as url.c parses (P_url_parse) and names (P_url_text) them, each a
 * T; and, by the members' full names (.lock.open...), ENGINE_OPS(P) the
 * members that must be there, each group of [opt] ones the members that
 * go together, both or neither: the watch, history (with the "killed"
 * event written to it), the steps. The [opt] ones on their own are
 * written out. */
#define ENGINE_DECLARE(P) \
	int P##_open(struct lock *lk, struct error *err); \
	void P##_close(struct lock *lk); \
	int P##_begin(struct lock *lk, struct error *err); \
	enum lock_result P##_try(struct lock *lk, int64_t *retry_ms, \
				 struct error *err); \
	size_t P##_wait_fds(struct lock *lk, struct pollfd *pfd, size_t max); \
	bool P##_wait_events(struct lock *lk, const struct pollfd *pfd, \
			     size_t n); \
	void P##_end_wait(struct lock *lk, enum lock_result r); \
	enum extend_result P##_extend(struct lock *lk, int64_t timeout_ms, \
				      struct error *err); \
	size_t P##_watch_fds(struct lock *lk, struct pollfd *pfd, size_t max); \
	bool P##_watch_events(struct lock *lk, const struct pollfd *pfd, \
			      size_t n, char *note, size_t notelen); \
	void P##_note_killed(struct lock *lk, int64_t held_ms); \
	size_t P##_fds(const struct lock *lk, int *out, size_t max); \
	int P##_release(struct lock *lk, const struct release_how *how, \
			struct error *err); \
	int P##_raise_fence(struct lock *lk, const char *fence, \
			    struct error *err); \
	void P##_log_servers(const struct lock *lk); \
	int P##_finished(struct lock *lk, struct error *err); \
	int P##_status(struct lock *lk, struct status_lock *locks, size_t n, \
		       struct error *err); \
	int P##_list(struct lock *lk, char ***names, size_t *n, \
		     struct error *err); \
	int P##_history(struct lock *lk, long count, \
			struct history_report *out, struct error *err); \
	int P##_release_token(struct lock *lk, const char *token, \
			      struct error *err); \
	enum extend_result P##_extend_token(struct lock *lk, \
					    struct error *err); \
	int P##_force(struct lock *lk, struct broken_holder **out, size_t *n, \
		      struct error *err)
#define ENGINE_URL_OPS(P, T) \
	.url_size = sizeof(T), .parse_url = P##_url_parse, \
	.url_text = P##_url_text
#define ENGINE_OPS(P) \
	.lock.open = P##_open, .lock.close = P##_close, \
	.lock.begin = P##_begin, .lock.try = P##_try, \
	.lock.wait_fds = P##_wait_fds, .lock.wait_events = P##_wait_events, \
	.lock.end_wait = P##_end_wait, .lock.extend = P##_extend, \
	.lock.fds = P##_fds, .lock.release = P##_release, \
	.inspect.status = P##_status
#define ENGINE_WATCH_OPS(P) \
	.lock.watch_fds = P##_watch_fds, .lock.watch_events = P##_watch_events
#define ENGINE_HISTORY_OPS(P) \
	.inspect.history = P##_history, .lock.note_killed = P##_note_killed
#define ENGINE_STEPS_OPS(P) \
	.inspect.release_token = P##_release_token, \
	.inspect.extend_token = P##_extend_token

/* The engine ABI: the layout of everything in this header and config.h,
 * and the core functions that modules call back (error_set, log_line,
 * show_*, clock_*...). Raise it with any change to them. Each module
 * exports its build's number (ENGINE_MODULE_ABI, once beside its struct
 * engine); dlock refuses a module of another (64), naming both numbers:
 * a module left from an older build would be called through a struct of
 * another layout. The number has a section of its own, which a test
 * patches in a copy of a module (tests/modules.bats). */
#define ENGINE_ABI 4
#define ENGINE_ABI_SYMBOL "dlock_engine_abi"
extern const unsigned dlock_engine_abi;
#define ENGINE_MODULE_ABI \
	__attribute__((section(".dlock_abi"), used, visibility("default"))) \
	const unsigned dlock_engine_abi = ENGINE_ABI

/* The engine whose scheme url has, loaded if it is a module; NULL with
 * the reason in err (an unknown scheme, a module not installed). */
const struct engine *engine_of(const char *url, char *err, size_t errlen);

/* Whether url's scheme is an engine's, without loading a module: false
 * with the reason in why; *built_in cleared when the engine is a module
 * not loaded yet. */
bool engine_known(const char *url, bool *built_in, char *why, size_t whylen);
/* How far a server URL reaches in a list of them (config.c splits lists
 * at commas and blanks), by its scheme. */
enum engine_hosts {
	HOSTS_ONE,		/* one host: a comma ends it */
	HOSTS_SEVERAL,		/* host,host,...: a comma is the URL's unless
				 * another URL starts after it */
	HOSTS_BEFORE_PATH,	/* host,host.../NAME: the commas before its
				 * '/' are its own (a sentinel URL) */
};
enum engine_hosts engine_hosts_of(const char *url);
/* Whether an engine claims url's scheme. */
bool engine_claims(const char *url);
/* Words for --help and messages, from the engines' table (none is loaded
 * for them): the stores by name ("Redis, PostgreSQL... or etcd"), the URLs
 * that ask for TLS ("rediss://, ..."), each as snprintf() writes and
 * counts; and --help's URL lines, a store's title in the first title_width
 * columns. */
size_t engine_stores(char *out, size_t len);
size_t engine_tls_urls(char *out, size_t len);
void engine_usage(FILE *out, int indent, int title_width);
/* dlock help engines: each engine (its module loaded where it is one) and
 * what it can do, a "no" with its reason; the exit status, 0 unless a
 * module installed is refused (64 another build's, 70 faulty). */
int engine_list(FILE *out);
/* "bad server URL 'URL': why", the URL left out where it may hold a
 * password. */
void engine_bad_url(const char *url, const char *why, char *err, size_t errlen);
/* The servers' URLs through e's settings part: urls[0..n-1] parsed into
 * one array (*servers; 0, or -1 with engine_bad_url()'s line in err);
 * freed; server i's text; whether any of them asks for TLS. */
int engine_parse_servers(const struct engine *e, const char *const *urls,
			 size_t n, void **servers, char *err, size_t errlen);
void engine_free_servers(const struct engine *e, void *servers, size_t n);
const char *engine_server_text(const struct engine *e, const void *servers,
			       size_t i);
bool engine_uses_tls(const struct engine *e, const void *servers, size_t n);

/* For an engine's open(): its state, size bytes zeroed, hung on lk->e;
 * NULL with err (71) when out of memory. */
void *engine_open_state(struct lock *lk, size_t size, struct error *err);
/* For its close(), last: the state freed, lk->e and lk->key (which points
 * into it) cleared. */
void engine_close_state(struct lock *lk);
/* For list(): names[0..n-1] sorted, each once (a second one freed);
 * returns how many are left. */
size_t engine_sort_names(char **names, size_t n);
/* n_bytes (at most 32) random bytes as 2 * n_bytes hex digits and a NUL
 * into out: a token. */
void engine_random_hex(char *out, size_t n_bytes);
/* s[0..len-1] and a NUL, for the status, history and force structs
 * (a token or value from the store may hold any byte); NULL: no memory. */
char *engine_dup(const char *s, size_t len);
/* Whether a holder info (show.h) says its command finished: --min-hold
 * keeps the lock after its job, and re-entry with its token, which was
 * the job's, is refused. */
bool engine_info_finished(const char *info, size_t len);
/* Whether a release looks at the lock's history to trim it (a walk of
 * every event: etcd's count, ZooKeeper's children), given a number that
 * steps on by about two a run (etcd's revision of our key, ZooKeeper's
 * sequence of our event): always for --history below 24, else when it is
 * one of the first two of every history/8, about one release in
 * history/16; the history keeps within about history + history/2. */
bool engine_history_trim_due(long history, long long number);
void status_lock_free(struct status_lock *s);
void history_report_free(struct history_report *h);
void broken_free(struct broken_holder *b, size_t n);
