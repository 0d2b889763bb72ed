/* metrics.h - --metrics-dir: how a run went, for node_exporter's textfile
 * collector */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* How a run ended, as dlock_last_outcome's "outcome" label names it. */
enum run_outcome {
	RUN_ACQUIRED,		/* held, the command ran, the lease kept */
	RUN_CONFLICT,		/* -n/-w gave up: someone else held it */
	RUN_UNAVAILABLE,	/* no server (or majority) reachable; with
				 * --unavailable run, the command ran unlocked */
	RUN_LOST,		/* the lease was lost while the command ran */
	RUN_BROKEN,		/* the store told us another process ended
				 * our lock (dlock release --force) */
	RUN_FAILED,		/* anything else: credentials, a bad reply, a
				 * command that could not be run */
	RUN_INTERRUPTED,	/* a signal while waiting */
};

struct run_report {
	enum run_outcome outcome;
	int exit_status;	/* dlock's; -1: not known (-F) */
	int64_t waited_ms, held_ms;
	long renewals, renewal_failures;
	int64_t end_wall_ms;	/* Unix time the run ended, ms */
};

/* The file name of lock name's metrics: "dlock_" + name + ".prom", each
 * byte but [A-Za-z0-9.-] written as _XX (hex), so that two names never
 * share a file; a name too long for a file name is cut, and the first 64
 * bits of its FNV-1a hash follow as _hHEX. */
void metrics_file_name(const char *name, char *out, size_t len);

/* Writes DIR/dlock_NAME.prom atomically (a temporary file in DIR, then
 * rename()), keeping the last success's time from the file it replaces.
 * engine: its name, as the "engine" label has it in lower case. Returns 0,
 * or -1 with the reason in why. */
int metrics_write(const char *dir, const char *name, const char *engine,
		  const struct run_report *r, char *why, size_t whylen);
