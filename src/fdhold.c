/* fdhold.c - the descriptor form after its caller died: who still has
 * the caller's open file.
 *
 * flock's lock belongs to the open file description: it lasts while any
 * process has it, the caller's children too. When the caller of
 * ( dlock 9; work ) 9>f is killed, work (its foreground child, never
 * signalled) runs on with descriptor 9: the keeper keeps the lock for it.
 * kcmp(2) KCMP_FILE tells whether a descriptor of another process is the
 * same open file description as the keeper's own copy; /proc/PID/fd lists
 * a process's descriptors. Looked at: where the caller's orphans went,
 * the children of init and of the caller's ancestors (one may be a
 * subreaper) that started after the caller, and what descends from them.
 * Of init's children only those that came after the last ones it had
 * when the lock was taken (the children file lists them in the order
 * they came), and the ancestors are noted by the keeper while the caller
 * works: the look after a normal end, nothing left, costs a few reads of
 * /proc, not one per process. Where the caller's parent was gone before
 * the keeper noted them (its orphans went who knows where), every
 * process of our user and of the caller's session (kcmp refuses another
 * user's unless we are root). Not seen: a daemon that had left the caller
 * for init before the lock was taken, a descriptor passed on a unix
 * socket to an older process.
 * Left out: keepers and watchdogs (ours, and another lock's kept
 * for the same caller: they would wait for each other); the caller's
 * ancestors, and the other descendants of an ancestor that has the
 * descriptor itself (exec 9>f in the script above the caller, and what it
 * runs next): the lock is the caller's, not theirs, and the script's next
 * ( dlock 9 ) would otherwise wait for the keeper that waits for it.
 *
 * Without kcmp (a seccomp filter that refuses it, a kernel without
 * CONFIG_KCMP), a process of the caller's process group that has the same
 * file open and went to init stands for one that has the descriptor: the
 * keeper cannot tell them apart, and stops them (keeper.c); the
 * ancestors' children are left alone then (a sibling subshell that waits
 * for the lock by the same file). */
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

#define MAX_ABOVE FDHOLD_ABOVE

struct proc_stat {
	pid_t ppid, pgrp, session;
	unsigned long long start;	/* clock ticks after boot */
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

/* Fields 2 (the name), 4 to 6 and 22 of /proc/PID/stat; false when
 * gone. */
static bool read_stat(pid_t pid, struct proc_stat *ps)
{
	char path[64], buf[512], *p, *name;
	unsigned long long v[19];
	ssize_t n;
	int fd;

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
	if (!p || !name || p[1] != ' ' || !p[2])
		return false;
	*p = '\0';
	name++;
	p += 3;
	/* ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
	 * utime stime cutime cstime priority nice threads itrealvalue start
	 * (tpgid may be -1: strtoull takes the sign) */
	for (int i = 0; i < 19; i++) {
		char *end;

		v[i] = strtoull(p, &end, 10);
		if (end == p)
			return false;
		p = end;
	}
	*ps = (struct proc_stat){ (pid_t)v[0], (pid_t)v[1], (pid_t)v[2], v[18],
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
	signed char holds[MAX_ABOVE];	/* has the descriptor itself (1, 0;
					 * -1: not looked at yet) */
	size_t n;
	bool intact;	/* the caller's parent is still the one it had */
};

/* From the caller's parent (as it was at lock time) up: false once that
 * one is gone (its number is not, or is another's). */
static bool walk_above(const struct fdhold *h, pid_t *pids, size_t *n)
{
	struct proc_stat ps;

	*n = 0;
	for (pid_t p = h->above; p > 1 && *n < MAX_ABOVE; p = ps.ppid) {
		if (!read_stat(p, &ps) || (*n == 0 && ps.start != h->above_start))
			return *n > 0;
		pids[(*n)++] = p;
	}
	return true;
}

/* The caller's ancestors, from its parent up (init left out): as noted
 * while it lived, or as they are now (intact: still its parent's). */
static void find_above(const struct fdhold *h, struct above *a)
{
	if (h->above_known) {
		memcpy(a->pid, h->above_pid, h->n_above * sizeof *a->pid);
		a->n = h->n_above;
		a->intact = true;
	} else {
		a->intact = walk_above(h, a->pid, &a->n);
	}
	memset(a->holds, -1, sizeof a->holds);
}

static bool above_holds(const struct fdhold *h, struct above *a, size_t i)
{
	if (a->holds[i] < 0)
		a->holds[i] = holds(h, a->pid[i]);
	return a->holds[i] > 0;
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
static bool under_holding_above(const struct fdhold *h, struct above *a,
				pid_t ppid)
{
	for (int depth = 0; ppid > 1 && depth < MAX_ABOVE; depth++) {
		ssize_t i = above_index(a, ppid);

		if (i >= 0)
			return above_holds(h, a, (size_t)i);
		ppid = caller_parent_of(ppid);
	}
	return false;
}

/* Whether pid (not the keeper, not an ancestor) holds the lock. */
static bool is_holder(const struct fdhold *h, struct above *a, pid_t pid,
		      const struct proc_stat *ps)
{
	if (ps->dlock || (h->by_file && ps->pgrp != h->pgid))
		return false;
	return holds(h, pid) && !under_holding_above(h, a, ps->ppid);
}

struct found {
	pid_t *pids;	/* the first max of them */
	size_t max, n;
};

static void add(struct found *f, pid_t pid)
{
	if (f->n < f->max)
		f->pids[f->n] = pid;
	f->n++;
}

/* Every process of our user or of the caller's session. */
static void scan_all(const struct fdhold *h, struct above *a, struct found *f)
{
	struct dirent *e;
	DIR *proc;

	if (!(proc = opendir("/proc")))
		return;
	while ((e = readdir(proc))) {
		struct proc_stat ps;
		struct stat sb;
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (end == e->d_name || *end || pid <= 1 || pid == h->self ||
		    pid == h->watchdog || above_index(a, (pid_t)pid) >= 0 ||
		    fstatat(dirfd(proc), e->d_name, &sb, 0) < 0 ||
		    !read_stat((pid_t)pid, &ps))
			continue;
		if ((sb.st_uid == geteuid() || ps.session == h->session) &&
		    is_holder(h, a, (pid_t)pid, &ps))
			add(f, (pid_t)pid);
	}
	closedir(proc);
}

struct pids {
	pid_t *v;
	size_t n, cap;
};

static void push(struct pids *p, pid_t pid)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		pid_t *v;

		if (cap > 65536 || !(v = realloc(p->v, cap * sizeof *v)))
			return;	/* a bound: no runaway on a fork bomb */
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = pid;
}

/* Adds the numbers of a children file ("12 34 ") to p: -1 when there is
 * no such file (gone, or a kernel without CONFIG_PROC_CHILDREN). */
static int read_kids(const char *path, struct pids *p)
{
	char buf[4096];
	pid_t part = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				part = part * 10 + (buf[i] - '0');
			} else if (part) {
				push(p, part);
				part = 0;
			}
		}
	if (part)
		push(p, part);
	close(fd);
	return 0;
}

/* pid's children: its main thread's (where an orphan goes: the reaper's
 * first live thread), or every thread's (a child is its forking one's). */
static int kids_of(pid_t pid, bool all_threads, struct pids *p)
{
	char path[96];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (read_kids(path, p) < 0)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if (!all_threads || !(d = opendir(path)))
		return 0;
	while ((e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);

		if (tid <= 0 || *end || tid == pid)
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%ld/children", (int)pid, tid);
		read_kids(path, p);
	}
	closedir(d);
	return 0;
}

/* Whether pid started after the caller (in the same clock tick counts). */
static bool young(const struct fdhold *h, pid_t pid)
{
	struct proc_stat ps;

	return read_stat(pid, &ps) && ps.start >= h->caller_start;
}

void fdhold_pin(struct fdhold *h, pid_t caller, pid_t pgid)
{
	struct pids kids = { 0 };
	struct proc_stat ps;

	h->pgid = pgid;
	if (!read_stat(caller, &ps))
		return;
	h->above = ps.ppid;
	h->session = ps.session;
	h->caller_start = ps.start;
	h->above_start = ps.ppid > 1 && read_stat(ps.ppid, &ps) ? ps.start : 0;
	/* init's last children now: who comes after them came since */
	h->n_marks = 0;
	if (kids_of(1, false, &kids) == 0)
		for (size_t i = kids.n > FDHOLD_MARKS ? kids.n - FDHOLD_MARKS : 0;
		     i < kids.n; i++)
			h->mark[h->n_marks++] = kids.v[i];
	free(kids.v);
}

void fdhold_note_above(struct fdhold *h)
{
	h->above_known = walk_above(h, h->above_pid, &h->n_above);
}

/* Where in kids (init's children now, in the order they became its
 * children) those that came since the lock was taken begin: after the
 * last mark still there as the same process (older than the caller: not
 * its number taken since by another); 0 when none is. */
static size_t since_pin(const struct fdhold *h, const struct pids *kids)
{
	for (size_t i = kids->n; i-- > 0;)
		for (size_t m = 0; m < h->n_marks; m++)
			if (kids->v[i] == h->mark[m]) {
				if (!young(h, kids->v[i]))
					return i + 1;
				break;
			}
	return 0;
}

static void push_young(const struct fdhold *h, const struct above *a,
		       pid_t pid, struct pids *t)
{
	if (above_index(a, pid) < 0 && young(h, pid))
		push(t, pid);
}

/* The roots of the walk: init's children and the caller's ancestors'
 * that are younger than the caller. -1: no children files. */
static int push_roots(const struct fdhold *h, struct above *a, struct pids *t)
{
	struct pids kids = { 0 };
	size_t from = 0;

	if (kids_of(1, false, &kids) < 0) {
		free(kids.v);
		return -1;
	}
	from = since_pin(h, &kids);
	for (size_t i = from; i < kids.n; i++)
		push_young(h, a, kids.v[i], t);
	/* Without kcmp, the children of a script above are its own as much
	 * as the caller's: a sibling subshell waiting for the lock by the
	 * same file is not to be stopped. Only what went to init is. */
	for (size_t i = 0; i < a->n && !h->by_file; i++) {
		size_t before = t->n;

		kids.n = 0;
		kids_of(a->pid[i], false, &kids);
		for (size_t k = 0; k < kids.n; k++)
			push_young(h, a, kids.v[k], t);
		if (t->n > before && above_holds(h, a, i))
			t->n = before;	/* the script's own: not ours */
	}
	free(kids.v);
	return 0;
}

/* Where the caller's orphans went: init's children and its ancestors'
 * (one may be a subreaper), those younger than the caller, and what
 * descends from them. */
static void walk_young(const struct fdhold *h, struct above *a, struct found *f)
{
	struct pids t = { 0 };

	if (push_roots(h, a, &t) < 0) {
		free(t.v);
		scan_all(h, a, f);
		return;
	}
	for (size_t i = 0; i < t.n; i++) {
		struct proc_stat ps;
		pid_t pid = t.v[i];

		if (pid == h->self || pid == h->watchdog || !read_stat(pid, &ps))
			continue;
		if (is_holder(h, a, pid, &ps))
			add(f, pid);
		kids_of(pid, true, &t);
	}
	free(t.v);
}

size_t fdhold_scan(const struct fdhold *h, pid_t *pids, size_t max)
{
	struct found f = { pids, max, 0 };
	struct above a;

	find_above(h, &a);
	if (a.intact && h->caller_start)
		walk_young(h, &a, &f);
	else
		scan_all(h, &a, &f);	/* its orphans went who knows where */
	return f.n;
}
