/* observe.h - a run as operators see it: the --log-format json --verbose
 * events, --notify's notifications, --metrics-dir's file. run.c calls it
 * at each step of a run; with none of these options asked for, each call
 * costs no system call. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cli.h"
#include "config.h"
#include "lease.h"
#include "metrics.h"

struct observe {
	const char *key;		/* for messages */
	const char *const *names;	/* the locks (-k: several) */
	const char *metrics_dir;	/* NULL: none */
	const char *engine;
	bool events;			/* --log-format json --verbose */
	int64_t start_ms, acquired_ms;	/* monotonic; acquired -1: not */
	int64_t held_ms;		/* once released */
	long renewals, failures;
	bool broken;			/* lost on the store's notice */
	char names_text[256];		/* "A, B" for STATUS= */
};

/* Before the lock is asked for: names are the locks' (NULL-terminated). */
void observe_init(struct observe *ob, const struct options *opts,
		  const struct settings *st, const char *const *names);
/* Acquired, with this fence ("" or NULL: none). */
void observe_acquired(struct observe *ob, const char *fence);
/* The lease renews: each round is counted, and told of (lease.h). */
void observe_lease(struct observe *ob, struct lease *ls);
/* The command started under the lock. */
void observe_started(struct observe *ob);
/* The job is over; the lock is about to be released (lost: its lease
 * was lost meanwhile). */
void observe_stopping(struct observe *ob, bool lost);
/* The run is over: outcome and dlock's exit status (-1: not known). */
void observe_end(struct observe *ob, enum run_outcome outcome, int exit_status);
