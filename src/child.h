/* child.h - the command: resolve, start in a process group of its own */
#pragma once
#include <stdbool.h>
#include <sys/types.h>
#include "log.h"
#include "signals.h"
#include "watchdog.h"

#define CHILD_EXTRA_MAX 4	/* an engine's own variables (LOCK_ENV_MAX) */

struct job {
	char *path;		/* what execve() runs */
	char **argv;
	char **sh_argv;		/* /bin/sh PATH ARGS..., for a script without #! */
	char **envp;
	char *env_vars[5];	/* DLOCK_KEY=, DLOCK_TOKEN=, DLOCK_FENCE=,
				 * DLOCK_KEYS=, DLOCK_JOB= (digits written
				 * by the child) */
	char *extra_vars[CHILD_EXTRA_MAX];	/* the engine's, copied */
	const struct signals *sig;	/* what the command gets back */
	struct watchdog *wd;	/* told the job's group before exec; or NULL */
	pid_t pid;		/* the command; also the job's process group */
	int pidfd;		/* -F: the command, not our child, watched by a
				 * pidfd (the job is that process alone); -1 */
	int tty_fd;		/* dlock's controlling terminal, or -1 */
	bool tty_handed;	/* the job is that terminal's foreground group */
	pid_t *inherited;	/* dlock's children from before the job (its
				 * exec inherited them): not the job's */
	size_t n_inherited;
	int term_signal;	/* the signal that killed the command, or 0 */
	int death_signal;	/* the command's PR_SET_PDEATHSIG: the
				 * --on-lost signal should dlock die and its
				 * watchdog with it (pkill -9 -f dlock); 0 */
	pid_t supervisor;	/* dlock, the command's parent */
	bool ran;		/* the command started (child_start) */
	bool lost;		/* the lease was lost while the job ran */
	volatile int exec_errno;	/* set by the child when exec fails */
};

/* Finds the command (argv, or shell_cmd run by $SHELL -c) before any lock
 * is taken: 127 when it does not exist, 126 when it cannot be executed
 * (err filled). */
int child_prepare(struct job *job, char *const *argv, const char *shell_cmd,
		  const struct signals *sig, struct error *err);
/* Whether the command's arguments and environment will fit the kernel's
 * limit for execve() (ARG_MAX: a quarter of the stack limit, at most
 * 6 MiB; MAX_ARG_STRLEN for one string) once dlock adds its DLOCK_*
 * variables, key_len and keys_len being the lengths of DLOCK_KEY's and
 * DLOCK_KEYS' values, and the engine's, n_extra strings of extra bytes
 * at most (lock.env_max). Checked before any lock is taken: -1 with err
 * (126, "argument list too long") when not. */
int child_check_size(const struct job *job, size_t key_len, size_t keys_len,
		     size_t extra, size_t n_extra, struct error *err);
/* The command's environment: ours plus DLOCK_KEY, DLOCK_TOKEN, DLOCK_FENCE,
 * DLOCK_KEYS (keys: every Redis key, space-separated; NULL: key) and
 * DLOCK_JOB, the job's process group (the command's pid, known once it
 * starts); with reentered, DLOCK_JOB is left as the outer dlock set it.
 * A NULL fence leaves DLOCK_FENCE out (and drops an inherited one).
 * extra: "NAME=value" strings the engine adds (NULL-terminated, at most
 * CHILD_EXTRA_MAX; NULL: none), copied; each replaces an inherited NAME. */
int child_set_env(struct job *job, const char *key, const char *keys,
		  const char *token, const char *fence, bool reentered,
		  const char *const *extra, struct error *err);
/* Notes the children dlock has before the job starts (sleep 9 & exec
 * dlock ...): they, and their exit, are not the job's. */
void child_find_inherited(struct job *job);
/* Starts the command in a process group of its own, which gets the
 * terminal when dlock is its foreground job, and makes dlock the subreaper
 * of what it leaves behind. Returns once the command exec'd (0), or could
 * not (-1: err 126/127, reaped; 71 when no process could be made). */
int child_start(struct job *job, struct error *err);
/* The command replaces dlock: on re-entry (job_pgid 0), in the outer
 * job's process group; with -F, as the job, DLOCK_JOB being job_pgid.
 * Returns only when exec fails (-1, err 126/127). */
int child_exec(struct job *job, pid_t job_pgid, struct error *err);
/* Re-entered: the command takes our place, in the outer job's process
 * group (DLOCK_JOB), which it joins when it runs in another group of the
 * job's session, but the terminal's foreground one. Returns only on
 * failure, with err set. */
int child_exec_reentered(struct job *job, struct error *err);
void child_free(struct job *job);
