/* fdhold.c - the descriptor form after its caller died: who still has
 * the caller's open file.
 *
 * flock's lock belongs to the open file description: it lasts while any
 * process has it, the caller's children too. When the caller of
 * ( dlock 9; work ) 9>f is killed, work (its foreground child, never
 * signalled) runs on with descriptor 9: the keeper keeps the lock for it.
 * kcmp(2) KCMP_FILE tells whether a descriptor of another process is the
 * same open file description as the keeper's own copy; /proc/PID/fd lists
 * a process's descriptors. Looked at: the processes of our user and those
 * of the caller's session (kcmp refuses another user's unless we are
 * root). Left out: keepers and watchdogs (ours, and another lock's kept
 * for the same caller: they would wait for each other); the caller's
 * ancestors, and the other descendants of an ancestor that has the
 * descriptor itself (exec 9>f in the script above the caller, and what it
 * runs next): the lock is the caller's, not theirs, and the script's next
 * ( dlock 9 ) would otherwise wait for the keeper that waits for it.
 *
 * Without kcmp (a seccomp filter that refuses it, a kernel without
 * CONFIG_KCMP), a process of the caller's process group that has the same
 * file open stands for one that has the descriptor: the keeper cannot
 * tell them apart, and stops them (keeper.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "caller.h"
#include "fdhold.h"
#include "watchdog.h"

#define MAX_ABOVE 64

struct proc_stat {
	pid_t ppid, pgrp, session;
	bool dlock;	/* a keeper or a watchdog: it has the descriptor
			 * only to compare, as we do */
};

static long kcmp_file(pid_t a, pid_t b, int fd_a, int fd_b)
{
	return syscall(SYS_kcmp, a, b, KCMP_FILE, fd_a, fd_b);
}

int fdhold_init(struct fdhold *h, int fd)
{
	struct stat sb;

	h->fd = fd;
	h->self = getpid();
	if (fstat(fd, &sb) < 0)
		return -1;
	h->dev = sb.st_dev;
	h->ino = sb.st_ino;
	h->by_file = kcmp_file(h->self, h->self, fd, fd) != 0 &&
		     (errno == ENOSYS || errno == EPERM);
	return 0;
}

/* Fields 2 (the name) and 4 to 6 of /proc/PID/stat; false when gone. */
static bool read_stat(pid_t pid, struct proc_stat *ps)
{
	char path[64], buf[256], *p, *name;
	ssize_t n;
	int fd, ppid, pgrp, session;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the command's name may hold anything */
	name = strchr(buf, '(');
	if (!p || !name || sscanf(p + 1, " %*c %d %d %d", &ppid, &pgrp, &session) != 3)
		return false;
	*p = '\0';
	name++;
	*ps = (struct proc_stat){ ppid, pgrp, session,
				  strcmp(name, KEEPER_COMM) == 0 ||
				  strcmp(name, WATCHDOG_COMM) == 0 };
	return true;
}

/* Whether descriptor name (in the directory dir, /proc/PID/fd) of pid is
 * ours: the same open file description, or without kcmp the same file. */
static bool same(const struct fdhold *h, pid_t pid, int dir, const char *name)
{
	char *end;
	long fd = strtol(name, &end, 10);
	struct stat sb;

	if (end == name || *end || fd < 0 || fd > 0x7fffffff)
		return false;
	if (!h->by_file)
		return kcmp_file(h->self, pid, h->fd, (int)fd) == 0;
	return fstatat(dir, name, &sb, 0) == 0 && sb.st_dev == h->dev &&
	       sb.st_ino == h->ino;
}

/* Whether pid has our descriptor (see same()). */
static bool holds(const struct fdhold *h, pid_t pid)
{
	char path[64];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	if (!(d = opendir(path)))
		return false;	/* gone, or not ours to look at */
	errno = 0;
	while (!found && (e = readdir(d))) {
		found = same(h, pid, dirfd(d), e->d_name);
		if (!found && !h->by_file && (errno == EPERM || errno == ESRCH))
			break;	/* not ours to compare, or gone */
		errno = 0;
	}
	closedir(d);
	return found;
}

struct above {
	pid_t pid[MAX_ABOVE];
	bool holds[MAX_ABOVE];	/* has the descriptor itself */
	size_t n;
};

/* The caller's ancestors, from its parent up (init left out). */
static void find_above(const struct fdhold *h, struct above *a)
{
	a->n = 0;
	for (pid_t p = h->above; p > 1 && a->n < MAX_ABOVE; p = caller_parent_of(p)) {
		a->pid[a->n] = p;
		a->holds[a->n++] = holds(h, p);
	}
}

/* -1: not one of them; else its place. */
static ssize_t above_index(const struct above *a, pid_t pid)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->pid[i] == pid)
			return (ssize_t)i;
	return -1;
}

/* Whether a process whose parent is ppid descends from an ancestor of the
 * caller's that has the descriptor itself: the script's next command and
 * what that runs (its own ( dlock 9 ) among them). */
static bool under_holding_above(const struct above *a, pid_t ppid)
{
	for (int depth = 0; ppid > 1 && depth < MAX_ABOVE; depth++) {
		ssize_t i = above_index(a, ppid);

		if (i >= 0)
			return a->holds[i];
		ppid = caller_parent_of(ppid);
	}
	return false;
}

/* Whether pid (not ours, not an ancestor) counts as a holder. */
static bool counts(const struct fdhold *h, const struct above *a, int proc,
		   const char *name, pid_t pid)
{
	struct proc_stat ps;
	struct stat sb;
	bool stat_read = false;

	if (fstatat(proc, name, &sb, 0) < 0)
		return false;
	if (sb.st_uid != geteuid()) {
		if (!read_stat(pid, &ps) || ps.session != h->session)
			return false;
		stat_read = true;
	}
	if (!holds(h, pid) || (!stat_read && !read_stat(pid, &ps)))
		return false;
	if (ps.dlock || (h->by_file && ps.pgrp != h->pgid))
		return false;
	return !under_holding_above(a, ps.ppid);
}

size_t fdhold_scan(const struct fdhold *h, pid_t *pids, size_t max)
{
	struct above a;
	struct dirent *e;
	size_t n = 0;
	DIR *proc;

	if (!(proc = opendir("/proc")))
		return 0;
	find_above(h, &a);
	while ((e = readdir(proc))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (end == e->d_name || *end || pid <= 1 || pid == h->self ||
		    pid == h->watchdog || above_index(&a, (pid_t)pid) >= 0)
			continue;
		if (!counts(h, &a, dirfd(proc), e->d_name, (pid_t)pid))
			continue;
		if (n < max)
			pids[n] = (pid_t)pid;
		n++;
	}
	closedir(proc);
	return n;
}
