/* supervise.h - the job, from its start to its end */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "child.h"
#include "lease.h"
#include "signals.h"
#include "watchdog.h"

struct watch {
	const char *key;	/* the lock's name, for messages */
	int on_lost_signal;	/* 0: none (--on-lost ignore) */
	int64_t kill_after_ms;
	int64_t max_hold_ms;	/* -1: no --max-hold */
	bool close;		/* -o: the job ends with the command */
	const struct signals *sig;
	struct lease *lease;	/* renews the lock while the job runs */
	struct watchdog *wd;	/* NULL with --on-lost ignore */
};

/* Runs until the job is over: the command has exited and, unless --close,
 * so has every process of its process group. Meanwhile it forwards signals
 * to the group, renews the lease, follows the command when it stops, and
 * treats a lost lease or --max-hold as the man page says. Returns dlock's
 * exit status: the command's (128+N for signal N), or 75 when the lease
 * was lost (71 when the renewal thread could not start). */
int supervise(struct job *job, const struct watch *w);
