/* clicheck.c - the command line once getopt is done (cli.c): options
 * that exclude each other, the keys of -k, the descriptor that names the
 * lock (dlock FD, --fd), the COMMAND after KEY (or -c STRING). As in
 * cli.c, nothing has been contacted yet: a usage error exits at once. */
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/stat.h>
#include "clicheck.h"
#include "log.h"

/* As in cli.c: a usage error in the log's format; the fuzz target's
 * build defines errx itself. */
#ifndef errx
#define errx log_exit
#endif

/* Options that exclude each other, and what one implies of another. */
void clicheck_options(struct options *opts, bool mode_given, long limit)
{
	if (limit) {
		if (mode_given)
			errx(EX_USAGE, "--limit excludes --shared and --exclusive");
		opts->limit = limit;
	}
	if (opts->wait_ms == 0)
		opts->nonblock = true;
	if (opts->force && opts->token)
		errx(EX_USAGE, "release: --token and --force exclude each other");
	if (opts->watch && opts->quiet)
		errx(EX_USAGE, "status: --watch and -q exclude each other: there would be nothing to watch");
	if (opts->notify && (opts->no_fork || opts->fd_form))
		errx(EX_USAGE, "--notify%s: %s", opts->notify_pass ? "-pass" : "",
		     opts->no_fork ? "with -F the command takes dlock's PID, and so its place as the unit's main process: let it notify" :
		     "the descriptor form (dlock FD) runs no command to be ready");
	/* flock refuses them together too: -o closes a descriptor in the
	 * child that -F's command would be */
	if (opts->no_fork && opts->close)
		errx(EX_USAGE, "-F and -o exclude each other (as in flock): with -F the command is dlock's process");
}

/* -k: DLOCK_KEYS lists the keys separated by spaces, and a key named
 * twice would wait for itself. One -k is the KEY positional. */
void clicheck_keys(int n_keys, struct options *opts)
{
	opts->multi = n_keys > 1;
	if (!opts->multi)
		return;
	for (int i = 0; i < n_keys; i++) {
		if (strpbrk(opts->keys[i], " \t\n"))
			errx(EX_USAGE, "-k '%s': a key of several must not contain white space (DLOCK_KEYS separates them by spaces)",
			     opts->keys[i]);
		for (int k = 0; k < i; k++)
			if (strcmp(opts->keys[i], opts->keys[k]) == 0)
				errx(EX_USAGE, "-k '%s' given twice", opts->keys[i]);
	}
}

/* What a descriptor is open on, as the kernel names it: the lock's name
 * in the descriptor form and with --fd. Not open: flock's EBADF line and
 * status (65); open on no file (a pipe, a socket) or on a deleted one:
 * there is no name that another host could lock by. */
static char *fd_path(int fd)
{
	char link[64], path[PATH_MAX];
	struct stat sb;
	ssize_t n;

	if (fcntl(fd, F_GETFD) < 0)
		errx(EX_DATAERR, "%d: %s", fd, strerror(errno));
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof path - 1);
	if (n < 0)
		errx(EX_USAGE, "descriptor %d: %s: %s (is /proc mounted?)", fd,
		     link, strerror(errno));
	path[n] = '\0';
	if (path[0] != '/')
		errx(EX_USAGE, "descriptor %d is open on %s, not on a file: no path to name the lock by",
		     fd, path);
	if (fstat(fd, &sb) == 0 && sb.st_nlink == 0 && !S_ISDIR(sb.st_mode))
		errx(EX_USAGE, "descriptor %d is open on a deleted file (%s): its name may be another file's now",
		     fd, path);
	return strdup(path);
}

/* The descriptor form, --fd and -u: what each may not be combined with,
 * and the lock's name. The descriptor form runs no command: a keeper
 * process holds the lock for our caller, which nothing here can make
 * wait for it or tell of a lost lease but a signal. */
void clicheck_fd(struct options *opts, int n_keys, bool has_command)
{
	/* a job gets the variables in its environment */
	if (opts->export_vars && opts->cmd == CMD_RUN && (!opts->fd_form || opts->unlock))
		errx(EX_USAGE, "--export prints the variables of a lock held for the caller: dlock acquire --export KEY, or the descriptor form, dlock --export FD");
	if (opts->unlock && !opts->fd_form)
		errx(EX_USAGE, "-u releases the descriptor form's lock: dlock -u FD, nothing more");
	if (opts->fd < 0)
		return;
	if (n_keys > 1 || (opts->multi && n_keys > 0))
		errx(EX_USAGE, "--fd names the lock: no -k or KEY with it");
	if (!opts->fd_form && !has_command)
		errx(EX_USAGE, "--fd %d: missing COMMAND (for flock's descriptor form: dlock %d)",
		     opts->fd, opts->fd);
	if (opts->fd_form && !opts->unlock) {
		if (opts->no_fork || opts->close)
			errx(EX_USAGE, "%s: the descriptor form (dlock FD) runs no command",
			     opts->no_fork ? "-F" : "-o");
		if (opts->on_lost_signal == ON_LOST_IGNORE)
			errx(EX_USAGE, "--on-lost ignore: the descriptor form has no exit status to report a lost lease by, and the caller would run on without the lock");
		if (opts->cfg.unavailable == UNAVAILABLE_RUN)
			errx(EX_USAGE, "--unavailable run: the descriptor form has no command to run without the lock");
	}
	opts->fd_path = fd_path(opts->fd);
	if (!opts->fd_path)
		err(EX_OSERR, "strdup");
}

/* What follows KEY: [--] COMMAND [ARG...], or -c STRING. */
void clicheck_command(int argc, char **argv, struct options *opts)
{
	if (argc > 0 && strcmp(argv[0], "--") == 0) {
		argc--;
		argv++;
	} else if (argc > 0 && (strcmp(argv[0], "-c") == 0 ||
				strcmp(argv[0], "--command") == 0)) {
		if (opts->shell_cmd)
			errx(EX_USAGE, "-c given twice");
		if (argc != 2)
			errx(EX_USAGE, "%s takes exactly one argument", argv[0]);
		opts->shell_cmd = argv[1];
		return;
	} else if (argc > 0 && strncmp(argv[0], "--command=", 10) == 0) {
		if (opts->shell_cmd || argc != 1)
			errx(EX_USAGE, "--command takes exactly one argument");
		opts->shell_cmd = argv[0] + 10;
		return;
	}
	if (opts->shell_cmd) {
		if (argc > 0)
			errx(EX_USAGE, "-c takes exactly one argument");
		return;
	}
	if (argc == 0)
		errx(EX_USAGE, "%s: missing COMMAND", opts->key);
	opts->argv = argv;
}
