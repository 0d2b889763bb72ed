/* clicheck.h - cli.c's checks once getopt is done */
#pragma once
#include <stdbool.h>
#include "cli.h"

/* The options that exclude each other; --limit N (limit) into opts
 * unless -s or -x was given too (mode_given); -w 0 is -n. */
void clicheck_options(struct options *opts, bool mode_given, long limit);

/* -k given n_keys times: several keys are a multi-lock, each free of
 * white space and named once. */
void clicheck_keys(int n_keys, struct options *opts);
/* The descriptor form, --fd and -u: what each excludes, and the lock's
 * name (opts->fd_path). */
void clicheck_fd(struct options *opts, int n_keys, bool has_command);
/* What follows KEY (argc words): [--] COMMAND [ARG...], or -c STRING. */
void clicheck_command(int argc, char **argv, struct options *opts);
