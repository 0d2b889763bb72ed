/* commands.h - the forms besides running a job: status, history, release,
 * acquire, extend. main() resolves the settings and hands each the lock's
 * parameters; none of them sees the command line. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lock.h"
#include "signals.h"

struct command_args {
	const char **keys;	/* the KEYs given (status: any number) */
	size_t n_keys;
	bool json, quiet;	/* --json, -q */
	long count;		/* history -n COUNT */
	const char *token;	/* --token, or NULL */
	bool force;		/* release --force */
	bool export_vars;	/* acquire --export */
	int64_t wait_ms;	/* acquire: 0 -n, -1 for ever, else -w */
	int conflict_exit;	/* acquire: -E */
	long history;		/* events kept per lock (--history, config) */
	bool watch;		/* status --watch */
	const struct signals *sig;	/* what ends --watch */
};

/* Each returns dlock's exit status; base describes the lock of keys[0]
 * (name, servers, prefix, TTL, mode...), to be copied for other keys. */
int status_main(const struct lock_params *base, const struct command_args *a);
int history_main(const struct lock_params *base, const struct command_args *a);
int release_main(const struct lock_params *base, const struct command_args *a);
int acquire_main(const struct lock_params *base, const struct command_args *a);
int extend_main(const struct lock_params *base, const struct command_args *a);
/* release and extend: the lock of base, and in *token its holder's
 * token: --token, else DLOCK_TOKEN when DLOCK_KEY is that lock's key
 * (token NULL: the lock alone, release --force). Returns 0, or dlock's
 * exit status with the line said; without a token 64, the line saying to
 * give one of give, then hint. lk is for lock_free() either way. */
int command_by_token(struct lock *lk, const struct lock_params *base,
		     const struct command_args *a, const char **token,
		     const char *give, const char *hint);
/* acquire --export, dlock --export FD: on stdout, the lines for eval that
 * set DLOCK_KEY, DLOCK_TOKEN and DLOCK_FENCE (fence "": unset, for
 * --no-fence) and, unless reentered, unset DLOCK_JOB; -1 when stdout could
 * not take them. */
int steps_export(const char *key, const char *token, const char *fence,
		 bool reentered);
