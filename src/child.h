/* child.h - the command: resolve, fork/exec, supervise, exit status */
#pragma once
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>
#include "cli.h"
#include "lease.h"
#include "log.h"

struct job {
	char *path;		/* what execve() runs */
	char **argv;
	char **sh_argv;		/* /bin/sh PATH ARGS..., for a script without #! */
	char **envp;
	char *env_vars[3];	/* DLOCK_KEY=, DLOCK_TOKEN=, DLOCK_FENCE= */
	sigset_t orig_mask;	/* restored in the child before exec */
	pid_t pid;
	int tty_fd;		/* the terminal handed to the command, or -1 */
	int exec_fd;		/* close-on-exec pipe: the child's exec errno */
};

/* Finds the command before any lock is taken: 127 when it does not exist,
 * 126 when it cannot be executed (err filled). */
int child_prepare(struct job *job, const struct options *opts,
		  const sigset_t *orig_mask, struct error *err);
/* The command's environment: ours plus DLOCK_KEY, DLOCK_TOKEN, DLOCK_FENCE. */
int child_set_env(struct job *job, const char *key, const char *token,
		  const char *fence, struct error *err);
/* Forks the child, which execs; -1 (err, 71) when fork fails. */
int child_start(struct job *job, struct error *err);
/* Returns once exec succeeded (0) or failed (-1, err 126/127, reaped). */
int child_wait_exec(struct job *job, struct error *err);

struct watch {
	const struct options *opts;
	int sigfd;		/* SIGCHLD and the signals to forward */
	struct lease *lease;	/* NULL when nothing renews (re-entry); its
				 * thread is started here, when first due */
};

/* Forwards signals, handles a lost lease and --max-hold, and reaps the
 * command. Returns dlock's exit status: the command's (128+N for signal
 * N), or 75 when the lease was lost. */
int child_supervise(struct job *job, const struct watch *w);
void child_free(struct job *job);
