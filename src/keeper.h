/* keeper.h - flock's descriptor form: dlock FD, dlock -u FD */
#pragma once
#include <stddef.h>
#include "cli.h"
#include "config.h"
#include "lock.h"
#include "signals.h"

/* dlock [options] FD: takes the lock named by the file FD is open on and
 * leaves a keeper process that holds it for our caller (our parent) until
 * that process exits or dlock -u FD; returns dlock's exit status (0 once
 * the keeper holds it). params: the lock's, as for a job. */
int keeper_lock(const struct options *opts, const struct settings *st,
		struct lock_params *params, const struct signals *sig);
/* dlock -u FD: asks the keeper of our caller (or of a process above it)
 * to release the lock. 0 also when there is none, as flock -u of an
 * unlocked descriptor. */
int keeper_unlock(const struct options *opts, const struct settings *st);
/* In a process that lives on beside the caller (the keeper, -F's helper):
 * closes every descriptor but the servers' sockets, the n given in keep
 * and stderr, and puts /dev/null on stdin and stdout, so that no pipe a
 * reader waits on (stdout, bats' fd 3) is held open. */
void keeper_keep_only(const struct lock *lk, size_t n_locks, const int *keep,
		      size_t n);
