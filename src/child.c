/* child.c - the command: found before any lock is taken, started in a
 * process group of its own (the job), or exec'd in place on re-entry.
 *
 * Everything the child needs (path, argv, envp) is built before it is
 * cloned, and it calls only async-signal-safe functions until it execs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "child.h"
#include "jobtree.h"
#include "watchdog.h"

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
	/* Each candidate built in place, not by asprintf() (a dozen entries
	 * in a PATH is common): only the one found is allocated. One too long
	 * for a path is none, as stat() would say (ENAMETOOLONG). */
	for (const char *p = path;; p++) {
		size_t len = strcspn(p, ":"), name_len = strlen(name);
		char candidate[PATH_MAX];

		if (len + 1 + name_len < sizeof candidate) {
			/* an empty entry is the current directory, as for
			 * execvp(): "name", not "/name" */
			memcpy(candidate, p, len);
			candidate[len] = '/';
			memcpy(candidate + len + (len > 0), name, name_len + 1);
			/* not a regular file (a directory, a FIFO): execve()
			 * refuses it, and execvp() looks on */
			if (stat(candidate, &sb) == 0 && S_ISREG(sb.st_mode)) {
				if (access(candidate, X_OK) == 0) {
					*out = strdup(candidate);
					return *out ? 0 : ENOMEM;
				}
				found_errno = EACCES;
			}
		}
		p += len;
		if (!*p)
			break;
	}
	return found_errno;
}

int child_prepare(struct job *job, char *const *argv, const char *shell_cmd,
		  const struct signals *sig, struct error *err)
{
	size_t argc = 0;
	int e;

	*job = (struct job){ .sig = sig, .tty_fd = -1, .pidfd = -1 };
	if (shell_cmd) {
		const char *shell = getenv("SHELL");

		job->argv = calloc(4, sizeof *job->argv);
		if (!job->argv)
			goto oom;
		job->argv[0] = (char *)(shell && *shell ? shell : "/bin/sh");
		job->argv[1] = (char *)"-c";
		job->argv[2] = (char *)shell_cmd;
	} else {
		while (argv[argc])
			argc++;
		job->argv = calloc(argc + 1, sizeof *job->argv);
		if (!job->argv)
			goto oom;
		memcpy(job->argv, argv, argc * sizeof *job->argv);
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

static bool is_var(const char *entry, const char *name)
{
	size_t len = strlen(name);

	return strncmp(entry, name, len) == 0 && entry[len] == '=';
}

static const char *const dlock_vars[] = {
	"DLOCK_KEY", "DLOCK_TOKEN", "DLOCK_FENCE", "DLOCK_KEYS", "DLOCK_JOB",
};

/* Whether entry sets one of the first n of dlock_vars. Most of an
 * environment is not: one comparison says so. */
static bool is_dlock_var(const char *entry, size_t n)
{
	if (strncmp(entry, "DLOCK_", 6) != 0)
		return false;
	for (size_t v = 0; v < n; v++)
		if (is_var(entry, dlock_vars[v]))
			return true;
	return false;
}

/* Counts what execve() copies onto the new stack as the kernel does
 * (fs/exec.c: bprm_stack_limits, copy_strings): the file name and every
 * string with its NUL, and a pointer for each argument and variable,
 * against a quarter of the stack limit, at most 6 MiB (3/4 of _STK_LIM),
 * at least 32 pages. A script run through #! or /bin/sh counts a little
 * more: its interpreter's name. */
int child_check_size(const struct job *job, size_t key_len, size_t keys_len,
		     size_t extra, size_t n_extra, struct error *err)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t limit = 6 << 20, used = strlen(job->path) + 1 + extra;
	size_t n = n_extra, longest = extra;
	/* DLOCK_KEY=, DLOCK_KEYS=, and the other three at their longest: a
	 * token's 64 characters (ZooKeeper's), a fence's 20 digits, a pid's
	 * 10. */
	size_t ours[] = { 10 + key_len, 11 + keys_len, 12 + 64, 12 + 20, 10 + 10 };
	struct rlimit stack;

	if (getrlimit(RLIMIT_STACK, &stack) == 0 && stack.rlim_cur != RLIM_INFINITY &&
	    stack.rlim_cur / 4 < limit)
		limit = (size_t)stack.rlim_cur / 4;
	if (limit < 32 * page)
		limit = 32 * page;
	for (char **a = job->argv; *a; a++, n++) {
		size_t len = strlen(*a) + 1;

		used += len;
		longest = len > longest ? len : longest;
	}
	for (char **e = environ; *e; e++) {
		size_t len = strlen(*e) + 1;

		if (is_dlock_var(*e, sizeof dlock_vars / sizeof *dlock_vars))
			continue;
		used += len;
		n++;
		longest = len > longest ? len : longest;
	}
	for (size_t v = 0; v < sizeof ours / sizeof *ours; v++) {
		used += ours[v] + 1;
		n++;
		longest = ours[v] + 1 > longest ? ours[v] + 1 : longest;
	}
	used += n * sizeof(char *);
	if (used <= limit && longest <= 32 * page)
		return 0;
	exec_error(err, job->argv[0], E2BIG);
	return -1;
}

int child_set_env(struct job *job, const char *key, const char *keys,
		  const char *token, const char *fence, bool reentered,
		  const char *const *extra, struct error *err)
{
	size_t n_ours = reentered ? 4 : 5, n = 0, k = 0, n_extra = 0;

	while (environ[n])
		n++;
	for (; extra && extra[n_extra] && n_extra < CHILD_EXTRA_MAX; n_extra++)
		if (!strchr(extra[n_extra], '=') ||
		    !(job->extra_vars[n_extra] = strdup(extra[n_extra]))) {
			error_set(err, EX_OSERR, "out of memory");
			return -1;
		}
	job->envp = calloc(n + 6 + n_extra, sizeof *job->envp);
	if (!job->envp ||
	    asprintf(&job->env_vars[0], "DLOCK_KEY=%s", key) < 0 ||
	    asprintf(&job->env_vars[1], "DLOCK_TOKEN=%s", token) < 0 ||
	    (fence && asprintf(&job->env_vars[2], "DLOCK_FENCE=%s", fence) < 0) ||
	    asprintf(&job->env_vars[3], "DLOCK_KEYS=%s", keys ? keys : key) < 0 ||
	    (!reentered && !(job->env_vars[4] = calloc(1, sizeof "DLOCK_JOB=" + 12)))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	if (job->env_vars[4])
		strcpy(job->env_vars[4], "DLOCK_JOB=");
	for (size_t i = 0; i < n; i++) {
		bool keep = !is_dlock_var(environ[i], n_ours);

		for (size_t v = 0; v < n_extra; v++)
			keep &= strncmp(environ[i], job->extra_vars[v],
					strcspn(job->extra_vars[v], "=") + 1) != 0;
		if (keep)
			job->envp[k++] = environ[i];
	}
	for (size_t v = 0; v < n_ours; v++)
		if (job->env_vars[v])
			job->envp[k++] = job->env_vars[v];
	for (size_t v = 0; v < n_extra; v++)
		job->envp[k++] = job->extra_vars[v];
	return 0;
}

/* DLOCK_JOB's digits, in the child (async-signal-safe). */
static void write_job_var(char *var, pid_t pid)
{
	char digits[16];
	int n = 0;
	char *p = var + strlen("DLOCK_JOB=");

	do
		digits[n++] = (char)('0' + pid % 10);
	while ((pid /= 10) > 0);
	while (n > 0)
		*p++ = digits[--n];
	*p = '\0';
}

/* The child, on a stack of its own, while dlock waits (CLONE_VFORK): only
 * async-signal-safe calls from here to execve(). Not instrumented: it runs
 * in dlock's memory on a stack a sanitizer does not know. */
__attribute__((no_sanitize("address", "undefined")))
static int exec_child(void *arg)
{
	struct job *job = arg;

	pid_t pid = getpid();

	setpgid(0, 0);
	/* The last resort, should dlock and its watchdog both die: the
	 * command itself is told (its group is the watchdog's to tell). If
	 * dlock is gone already, the command never starts. */
	if (job->death_signal &&
	    (prctl(PR_SET_PDEATHSIG, job->death_signal) < 0 ||
	     getppid() != job->supervisor))
		_exit(EX_OSERR);
	/* Published before exec, so no instant of the job goes unwatched. */
	if (job->wd)
		watchdog_job(job->wd, pid);
	if (job->env_vars[4])
		write_job_var(job->env_vars[4], pid);
	if (job->tty_handed)
		tcsetpgrp(job->tty_fd, pid);	/* SIGTTOU is blocked */
	signals_restore(job->sig);
	execve(job->path, job->argv, job->envp);
	if (errno == ENOEXEC)
		execve("/bin/sh", job->sh_argv, job->envp);
	job->exec_errno = errno;	/* our memory: CLONE_VM */
	_exit(job->exec_errno == ENOENT ? 127 : 126);
}

/* The terminal dlock may hand to the job: its controlling terminal, when
 * dlock is that terminal's foreground job, whatever stdin is. */
static void find_terminal(struct job *job)
{
	job->tty_fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	job->tty_handed = job->tty_fd >= 0 && tcgetpgrp(job->tty_fd) == getpgrp();
}

/* Whether dlock has a child of any kind, by the kernel's word: none, the
 * common case, needs no look through /proc (an open, two reads). */
static bool no_children(void)
{
	siginfo_t si;

	return waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | WCONTINUED | WNOHANG |
		      WNOWAIT | __WALL) < 0 && errno == ECHILD;
}

void child_find_inherited(struct job *job)
{
	struct jobtree_proc kids[64];
	size_t n = no_children() ? 0 : jobtree_children(getpid(), NULL, 0, kids, 64);

	free(job->inherited);
	job->inherited = n ? calloc(n, sizeof *job->inherited) : NULL;
	job->n_inherited = job->inherited ? n : 0;
	for (size_t i = 0; i < job->n_inherited; i++)
		job->inherited[i] = kids[i].pid;
}

int child_start(struct job *job, struct error *err)
{
	/* 64 KiB: execve() and a few syscalls, nothing deep. */
	static char stack[64 * 1024] __attribute__((aligned(16)));

	/* Orphans of the job come back to us, to be reaped: the job lasts as
	 * long as its process group. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	find_terminal(job);
	/* CLONE_VM | CLONE_VFORK, as posix_spawn(): no page tables copied
	 * (a fork costs a tenth of a millisecond and more here), and we go
	 * on only once the child has exec'd or failed to. */
	job->exec_errno = 0;
	job->supervisor = getpid();
	job->pid = clone(exec_child, stack + sizeof stack,
			 CLONE_VM | CLONE_VFORK | SIGCHLD, job);
	if (job->pid < 0) {
		error_set(err, EX_OSERR, "clone: %s", strerror(errno));
		return -1;
	}
	if (job->exec_errno) {
		while (waitpid(job->pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (job->tty_handed)
			tcsetpgrp(job->tty_fd, getpgrp());
		exec_error(err, job->argv[0], job->exec_errno);
		return -1;
	}
	job->ran = true;
	return 0;
}

int child_exec(struct job *job, pid_t job_pgid, struct error *err)
{
	if (job_pgid > 0 && job->env_vars[4])
		write_job_var(job->env_vars[4], job_pgid);
	signals_restore(job->sig);
	execve(job->path, job->argv, job->envp);
	if (errno == ENOEXEC)
		execve("/bin/sh", job->sh_argv, job->envp);
	exec_error(err, job->argv[0], errno);
	return -1;
}

/* A nested dlock in another process group than the outer job's (a job
 * of a shell with job control, inside the job) would run its command
 * outside the job: the outer dlock, which holds the lock while its job's
 * group has members, would release while the command still runs, and its
 * signals (lease lost, --max-hold) would miss it. So the command joins
 * the job's group (same session: in_the_job() in lock.c made sure).
 * Not from the terminal's foreground group: an interactive shell inside
 * the job gave it the terminal, and in another group its reads would stop
 * it (SIGTTIN); the shell waits for it there. */
int child_exec_reentered(struct job *job, struct error *err)
{
	const char *var = getenv("DLOCK_JOB");
	char *end;
	long pgid = var ? strtol(var, &end, 10) : 0;
	int tty;

	if (pgid > 0 && *end == '\0' && pgid != (long)getpgrp()) {
		tty = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
		if ((tty < 0 || tcgetpgrp(tty) != getpgrp()) &&
		    setpgid(0, (pid_t)pgid) < 0) {
			error_set(err, EX_OSERR, "cannot join the outer job's process group %ld (DLOCK_JOB): %s",
				  pgid, strerror(errno));
			if (tty >= 0)
				close(tty);
			return -1;
		}
		if (tty >= 0)
			close(tty);
	}
	return child_exec(job, 0, err);
}

void child_free(struct job *job)
{
	if (job->tty_fd >= 0)
		close(job->tty_fd);
	free(job->path);
	free(job->argv);
	free(job->sh_argv);
	free(job->envp);
	free(job->inherited);
	for (int i = 0; i < 5; i++)
		free(job->env_vars[i]);
	for (int i = 0; i < CHILD_EXTRA_MAX; i++)
		free(job->extra_vars[i]);
}
