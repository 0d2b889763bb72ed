/* cli.h - command line: the option table, usage and strict number parsers */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ON_LOST_IGNORE 0	/* --on-lost ignore: no signal, exit 75 later */
#define LIMIT_SHARED (-1)	/* -s in options.limit */
#define MAX_SECONDS_MS ((int64_t)315360000 * 1000)	/* ten years */
#define MIN_TTL_MS 10

struct options {
	const char *key;	/* the lock name as given (KEY) */
	char **argv;		/* the command to run, NULL-terminated */
	const char *shell_cmd;	/* -c STRING */

	long limit;		/* 0 exclusive, LIMIT_SHARED for -s, else --limit N */
	bool fair;		/* --fair: waiters get the lock in arrival order */
	bool nonblock;		/* -n, or -w 0 */
	int64_t wait_ms;	/* -w; -1: wait for ever */
	int conflict_exit;	/* -E, default 1 */
	int64_t ttl_ms;		/* -t, default 30 s; 0 until resolved */
	int64_t node_timeout_ms;	/* --node-timeout; 0 until resolved */
	int on_lost_signal;	/* --on-lost, default SIGTERM; 0 = ignore */
	int64_t kill_after_ms;	/* --kill-after, default 5 s */
	int64_t max_hold_ms;	/* --max-hold; -1: no limit */
	int wait_replicas;	/* --wait-replicas N; 0: off */
	bool close;		/* -o: the lock lasts until the command exits,
				 * not its whole process group */
	bool verbose;

	/* Raw settings, resolved by config.c: flags > environment > file. */
	const char **servers;	/* -S, in order given */
	size_t n_servers;
	const char *prefix;	/* --prefix, NULL when not given */
	const char *password_file;
	const char *config_file;
	bool ttl_given, node_timeout_given;
};

/* Parses argv into opts; on a usage error prints one line and exits 64. */
void cli_parse(int argc, char **argv, struct options *opts);

/* Seconds -> ms, sub-ms rounded up. Accepts "30", "1.5", ".007".
 * Rejects "", "-1", " 2", "1e3", "0x10", "inf", "nan", "1,5", "1.".
 * Returns 0, or -1 when malformed or above max_ms. */
int parse_seconds(const char *s, int64_t max_ms, int64_t *out_ms);

/* A decimal integer in [min, max]: no sign, space or other base. */
int parse_count(const char *s, long min, long max, long *out);

/* "TERM", "SIGTERM", "15" -> 15; "ignore" -> 0; -1 when unknown. */
int parse_signal(const char *s);
