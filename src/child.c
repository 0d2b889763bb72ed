/* child.c - runs the command under the lock and watches over it.
 *
 * Everything the child needs (path, argv, envp) is built before fork(), and
 * the child calls only async-signal-safe functions until it execs, so the
 * order of fork() and the renewal thread's start does not matter: main()
 * starts the thread while the child execs. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "child.h"
#include "clock.h"

extern char **environ;

static void exec_error(struct error *err, const char *name, int e)
{
	char why[128];

	if (e == ENOENT) {
		error_set(err, 127, "%s: command not found", name);
		return;
	}
	snprintf(why, sizeof why, "%s", strerror(e));
	log_lower_first(why);
	error_set(err, 126, "%s: %s", name, why);
}

/* Looks name up as execvp() would, but before fork(). */
static int resolve(const char *name, char **out)
{
	const char *path = getenv("PATH");
	int found_errno = ENOENT;
	struct stat sb;

	if (strchr(name, '/')) {
		if (stat(name, &sb) < 0)
			return errno;
		if (S_ISDIR(sb.st_mode))
			return EISDIR;
		if (access(name, X_OK) < 0)
			return errno;
		*out = strdup(name);
		return *out ? 0 : ENOMEM;
	}
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path;; p++) {
		size_t len = strcspn(p, ":");
		char *candidate;

		if (asprintf(&candidate, "%.*s%s%s", (int)len, len ? p : ".",
			     "/", name) < 0)
			return ENOMEM;
		if (stat(candidate, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
			if (access(candidate, X_OK) == 0) {
				*out = candidate;
				return 0;
			}
			found_errno = EACCES;
		}
		free(candidate);
		p += len;
		if (!*p)
			break;
	}
	return found_errno;
}

int child_prepare(struct job *job, const struct options *opts,
		  const sigset_t *orig_mask, struct error *err)
{
	size_t argc = 0;
	int e;

	*job = (struct job){ .orig_mask = *orig_mask, .tty_fd = -1, .exec_fd = -1 };
	if (opts->shell_cmd) {
		const char *shell = getenv("SHELL");

		job->argv = calloc(4, sizeof *job->argv);
		if (!job->argv)
			goto oom;
		job->argv[0] = (char *)(shell && *shell ? shell : "/bin/sh");
		job->argv[1] = (char *)"-c";
		job->argv[2] = (char *)opts->shell_cmd;
	} else {
		while (opts->argv[argc])
			argc++;
		job->argv = calloc(argc + 1, sizeof *job->argv);
		if (!job->argv)
			goto oom;
		memcpy(job->argv, opts->argv, argc * sizeof *job->argv);
	}
	e = resolve(job->argv[0], &job->path);
	if (e) {
		exec_error(err, job->argv[0], e);
		return -1;
	}
	for (argc = 0; job->argv[argc]; argc++)
		;
	job->sh_argv = calloc(argc + 2, sizeof *job->sh_argv);
	if (!job->sh_argv)
		goto oom;
	job->sh_argv[0] = (char *)"/bin/sh";
	job->sh_argv[1] = job->path;
	memcpy(job->sh_argv + 2, job->argv + 1, (argc - 1) * sizeof *job->argv);
	return 0;
oom:
	error_set(err, EX_OSERR, "out of memory");
	return -1;
}

int child_set_env(struct job *job, const char *key, const char *token,
		  const char *fence, struct error *err)
{
	size_t n = 0, k = 0;

	while (environ[n])
		n++;
	job->envp = calloc(n + 4, sizeof *job->envp);
	if (!job->envp ||
	    asprintf(&job->env_vars[0], "DLOCK_KEY=%s", key) < 0 ||
	    asprintf(&job->env_vars[1], "DLOCK_TOKEN=%s", token) < 0 ||
	    asprintf(&job->env_vars[2], "DLOCK_FENCE=%s", fence) < 0) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "DLOCK_KEY=", 10) != 0 &&
		    strncmp(environ[i], "DLOCK_TOKEN=", 12) != 0 &&
		    strncmp(environ[i], "DLOCK_FENCE=", 12) != 0)
			job->envp[k++] = environ[i];
	for (int i = 0; i < 3; i++)
		job->envp[k++] = job->env_vars[i];
	return 0;
}

/* Only async-signal-safe calls from here to execve(). */
static void __attribute__((noreturn)) exec_child(struct job *job, int err_fd,
						 pid_t supervisor)
{
	int e;

	/* PDEATHSIG follows the forking thread: fork() runs on main(). */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != supervisor)
		_exit(EX_OSERR);	/* supervisor gone: nobody renews the lease */
	setpgid(0, 0);
	if (job->tty_fd >= 0)
		tcsetpgrp(job->tty_fd, getpid());	/* SIGTTOU is blocked */
	sigprocmask(SIG_SETMASK, &job->orig_mask, NULL);	/* masks survive exec */
	signal(SIGPIPE, SIG_DFL);	/* ignored signals survive exec too */
	execve(job->path, job->argv, job->envp);
	e = errno;
	if (e == ENOEXEC) {
		execve("/bin/sh", job->sh_argv, job->envp);
		e = errno;
	}
	(void)!write(err_fd, &e, sizeof e);
	_exit(e == ENOENT ? 127 : 126);
}

int child_start(struct job *job, struct error *err)
{
	pid_t supervisor = getpid();
	int pipefd[2];

	if (isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp())
		job->tty_fd = STDIN_FILENO;
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		error_set(err, EX_OSERR, "pipe: %s", strerror(errno));
		return -1;
	}
	job->pid = fork();
	if (job->pid < 0) {
		error_set(err, EX_OSERR, "fork: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (job->pid == 0) {
		close(pipefd[0]);
		exec_child(job, pipefd[1], supervisor);
	}
	close(pipefd[1]);
	job->exec_fd = pipefd[0];
	/* Both sides set the group, so neither order of events races. */
	setpgid(job->pid, job->pid);
	if (job->tty_fd >= 0)
		tcsetpgrp(job->tty_fd, job->pid);
	return 0;
}

int child_wait_exec(struct job *job, struct error *err)
{
	ssize_t n;
	int e;

	do
		n = read(job->exec_fd, &e, sizeof e);
	while (n < 0 && errno == EINTR);
	close(job->exec_fd);
	job->exec_fd = -1;
	if (n == (ssize_t)sizeof e) {
		while (waitpid(job->pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (job->tty_fd >= 0)
			tcsetpgrp(job->tty_fd, getpgrp());
		exec_error(err, job->argv[0], e);
		return -1;
	}
	return 0;
}

static int exit_status(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* The command stopped (Ctrl-Z): stop with it, as a shell's job would, and
 * give it the terminal back when we are continued in the foreground. */
static void follow_stop(struct job *job)
{
	if (job->tty_fd < 0)
		return;
	tcsetpgrp(job->tty_fd, getpgrp());
	kill(getpid(), SIGSTOP);
	if (tcgetpgrp(job->tty_fd) == getpgrp())
		tcsetpgrp(job->tty_fd, job->pid);
	kill(-job->pid, SIGCONT);
}

struct supervisor {
	bool lost;
	int exit;		/* dlock's own status when not the command's */
	int64_t kill_at_ms;	/* SIGKILL the group then; -1: not armed */
	int64_t max_hold_at_ms;	/* -1: no --max-hold */
	int64_t renew_at_ms;	/* start the renewal thread then; -1: none */
};

static void lose_lease(struct job *job, const struct watch *w,
		       struct supervisor *sv, const char *why)
{
	const struct options *opts = w->opts;

	log_line(opts->key, "lease lost: %s%s", why,
		 opts->on_lost_signal ? "; stopping the command" : "");
	sv->lost = true;
	sv->renew_at_ms = -1;
	if (opts->on_lost_signal) {
		/* The whole group: the children of sh -c must stop too. */
		kill(-job->pid, opts->on_lost_signal);
		sv->kill_at_ms = clock_now_ms() + opts->kill_after_ms;
	}
}

/* poll()'s timeout: until the earliest armed deadline, or -1. */
static int next_timeout(const struct supervisor *sv)
{
	const int64_t at[] = { sv->kill_at_ms, sv->max_hold_at_ms, sv->renew_at_ms };
	int64_t first = -1, now_ms = clock_now_ms();

	for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
		if (at[i] >= 0 && (first < 0 || at[i] < first))
			first = at[i];
	if (first < 0)
		return -1;
	return first > now_ms ? (int)(first - now_ms) : 0;
}

/* Returns true once the command has exited, with its status. */
static bool reap(struct job *job, int *status)
{
	int st;
	pid_t r;

	while ((r = waitpid(job->pid, &st, WNOHANG | WUNTRACED)) > 0) {
		if (WIFSTOPPED(st)) {
			follow_stop(job);
			continue;
		}
		*status = exit_status(st);
		return true;
	}
	return false;
}

static void on_deadlines(struct job *job, const struct watch *w,
			 struct supervisor *sv)
{
	int64_t now_ms = clock_now_ms();

	if (sv->renew_at_ms >= 0 && now_ms >= sv->renew_at_ms) {
		sv->renew_at_ms = -1;
		if (lease_start(w->lease) < 0) {
			char why[160];

			snprintf(why, sizeof why, "cannot start the renewal thread: %s",
				 strerror(errno));
			lose_lease(job, w, sv, why);
			sv->exit = EX_OSERR;
		}
	}
	if (sv->max_hold_at_ms >= 0 && now_ms >= sv->max_hold_at_ms) {
		sv->max_hold_at_ms = -1;
		if (w->lease)
			lease_stop(w->lease);
		if (!sv->lost)
			lose_lease(job, w, sv,
				   "held longer than --max-hold: the command is treated as hung");
	}
	if (sv->kill_at_ms >= 0 && now_ms >= sv->kill_at_ms) {
		kill(-job->pid, SIGKILL);
		sv->kill_at_ms = -1;
	}
}

int child_supervise(struct job *job, const struct watch *w)
{
	struct supervisor sv = {
		.exit = EX_TEMPFAIL,
		.kill_at_ms = -1,
		.max_hold_at_ms = w->opts->max_hold_ms >= 0 ?
				  clock_now_ms() + w->opts->max_hold_ms : -1,
		.renew_at_ms = w->lease ? lease_first_renewal_ms(w->lease) : -1,
	};
	int status = 0;

	for (;;) {
		struct pollfd pfd[2] = {
			{ w->sigfd, POLLIN, 0 },
			{ sv.lost || !w->lease ? -1 : w->lease->notify_fd, POLLIN, 0 },
		};

		if (poll(pfd, 2, next_timeout(&sv)) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(w->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
				if (si.ssi_signo == SIGCHLD) {
					if (reap(job, &status))
						goto out;
					continue;
				}
				kill(job->pid, (int)si.ssi_signo);
			}
		}
		if (pfd[1].revents & POLLIN)
			lose_lease(job, w, &sv, w->lease->err.msg);
		on_deadlines(job, w, &sv);
	}
out:
	if (job->tty_fd >= 0)
		tcsetpgrp(job->tty_fd, getpgrp());
	return sv.lost ? sv.exit : status;
}

void child_free(struct job *job)
{
	if (job->exec_fd >= 0)
		close(job->exec_fd);
	free(job->path);
	free(job->argv);
	free(job->sh_argv);
	free(job->envp);
	for (int i = 0; i < 3; i++)
		free(job->env_vars[i]);
}
