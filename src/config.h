/* config.h - settings from flags > environment > config file > defaults */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "engine.h"

#define DEFAULT_SERVER "redis://127.0.0.1:6379"
#define DEFAULT_PREFIX "dlock:"
#define DEFAULT_TTL_MS 30000
#define DEFAULT_NODE_TIMEOUT_MS 1000
/* How long servers that are down or full are tried before exit 69: a
 * fleet's cron minute fills a server's connections and listen queue for
 * seconds. tests/bench/fleet.sh, 1,000 hosts starved on one CPU: the last
 * host got its answer 11-14 s after the instant on PostgreSQL and
 * ZooKeeper; with 5 s, 397 and 452 of them exited 69, with 10 s none and
 * 30 (ZooKeeper's 60 connections per address). */
#define DEFAULT_CONNECT_BUDGET_MS 10000
#define MAX_SERVERS 32
/* The shortest lease that held on a loaded 2-core machine: 240 runs of
 * -t 0.2 with 4 busy loops beside, one server and three, all renewed in
 * time; -t 0.15 lost 2-14% of its runs, -t 0.1 8%, -t 0.02 most. */
#define MIN_TTL_MS 200
#define DEFAULT_HISTORY 100	/* events kept per lock */
#define MAX_HISTORY 1000000

/* --unavailable, config unavailable: when no server (or no majority) can
 * be reached, exit 69, or run the command without the lock. */
enum unavailable { UNAVAILABLE_UNSET, UNAVAILABLE_FAIL, UNAVAILABLE_RUN };

/* What the command line said of the settings; NULL or 0 when it did not. */
struct config_flags {
	const char *key;	/* the lock's name, for messages */
	const char **servers;	/* -S, in order given */
	size_t n_servers;
	const char *prefix;
	const char *password_file;
	const char *config_file;
	int64_t ttl_ms;		/* -t */
	int64_t node_timeout_ms;
	int64_t connect_budget_ms;	/* --connect-budget; -1 when not given */
	long history;		/* --history N; -1 when not given */
	int64_t min_hold_ms;	/* --min-hold; -1 when not given */
	enum unavailable unavailable;
	bool verbose;
	const char *tls_ca, *tls_cert, *tls_key;	/* --tls-ca, ... */
	bool tls_insecure;
	const char *metrics_dir;	/* --metrics-dir */
	int log_format;		/* --log-format (enum log_format); -1 */
};

struct settings {
	const struct engine *engine;	/* the one every server URL names */
	void *servers;		/* engine->parse() of the URLs */
	size_t n_servers;
	char **server_texts;	/* the URLs as given (the watchdog parses
				 * them again should dlock be killed) */
	char *prefix;		/* owned */
	char *password;		/* owned; NULL when none */
	int64_t ttl_ms;
	int64_t node_timeout_ms;
	int64_t connect_budget_ms;	/* servers down or full: tried that long */
	long history;		/* events kept per lock; 0: none */
	int64_t min_hold_ms;	/* the lock is kept that long at least; 0: off */
	bool unavailable_run;	/* --unavailable run */
	char servers_from[256];	/* --server, DLOCK_SERVERS, a file, the default */
	bool tls;		/* a server asks for TLS (rediss://, ...) */
	struct tls_options tls_opts;	/* strings owned */
	char *metrics_dir;	/* owned; NULL: no metrics (metrics.c) */
	enum log_format log_format;	/* --log-format, DLOCK_LOG_FORMAT, file */
};

/* "fail" or "run" -> UNAVAILABLE_FAIL or _RUN; UNAVAILABLE_UNSET for
 * anything else. */
enum unavailable config_unavailable(const char *s);

/* Splits a server list on commas and blanks into URLs (malloc'd, *n_urls
 * of them after those already there); a comma stays in a URL that names
 * several hosts (a sentinel's, a cluster's seeds, zk://, etcd://,
 * postgres://) unless another URL follows it. Returns 0 or -1. */
int config_split_servers(const char *list, char **urls, size_t max,
			 size_t *n_urls, char *err, size_t errlen);
/* The engine of urls[0..n-1]: one for all, able to take n of them; parses
 * them into *servers. Returns 0, or -1 with the reason (a usage error). */
int config_parse_servers(char *const *urls, size_t n,
			 const struct engine **engine, void **servers,
			 char *err, size_t errlen);

/* Resolves every setting in order of precedence: flags, environment,
 * config file, defaults. Returns 0, or -1 with the reason in err (a usage
 * error: exit 64). */
int config_resolve(const struct config_flags *fl, struct settings *st,
		   char *err, size_t errlen);

/* What the user should hear before anything is sent: with --verbose, where
 * the servers came from, unless -S named them; on a terminal or with --verbose, that an even
 * number of servers tolerates no more failures than one fewer. */
void config_report(const struct config_flags *fl, const struct settings *st);

void config_free(struct settings *st);
