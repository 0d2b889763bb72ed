/* run.h - the job's forms: dlock [options] KEY COMMAND, -k KEY... */
#pragma once
#include "cli.h"
#include "config.h"
#include "lock.h"
#include "signals.h"

/* Takes opts->keys (all or none), runs the command under their lease and
 * releases them; base: the lock's parameters but name and command, for
 * every key. Returns dlock's exit status (the command's, or 128+n, 64,
 * 69, 75...); *die_by is the signal dlock must end by, as the job did
 * (Ctrl-C), 0 when none. */
int run_main(struct options *opts, const struct settings *st,
	     const struct lock_params *base, const struct signals *sig,
	     int *die_by);
