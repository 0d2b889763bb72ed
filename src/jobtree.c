/* jobtree.c - the job's processes that left its process group.
 *
 * The job is the command's process group, and also whatever of it moved
 * to another group of its session (setpgid: a shell's job control,
 * timeout(1), a nested dlock's command, or a process that means to hide):
 * the lock is held while any of them lives, and the lease-lost treatment
 * reaches each. A process is found as a descendant of the command, which
 * it stays with dlock as the job's subreaper: an orphan comes back to
 * dlock, not to init. So the tree is walked from dlock's children (the
 * watchdog, and children dlock inherited across exec, left out), through
 * /proc/PID/task/TID/children (a scan of /proc where the kernel lacks
 * CONFIG_PROC_CHILDREN). A process that left the session (setsid: a
 * daemon) has left the job, and so has what it starts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "jobtree.h"

/* A bound on one walk: a fork bomb must not make dlock allocate for ever. */
#define MAX_PROCS 65536

struct pids {
	pid_t *v;
	size_t n, cap;
};

static int push(struct pids *p, pid_t pid)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		pid_t *v;

		if (cap > MAX_PROCS || !(v = realloc(p->v, cap * sizeof *v)))
			return -1;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = pid;
	return 0;
}

struct stat_line {
	char state;
	pid_t ppid, pgrp, sid;
	unsigned long long start;
};

static ssize_t read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, len - 1)) < 0 && errno == EINTR)
		;
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* /proc/PID/stat: "pid (comm) state ppid pgrp session ...", starttime
 * the 22nd field. The command name may hold anything, ')' included: the
 * fields start after the last ')'. */
static int read_stat(pid_t pid, struct stat_line *st)
{
	char path[64], buf[1024], *p;
	unsigned long long v[19];

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_file(path, buf, sizeof buf) <= 0 || !(p = strrchr(buf, ')')) ||
	    p[1] != ' ' || !p[2])
		return -1;
	st->state = p[2];
	p += 3;
	/* ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
	 * utime stime cutime cstime priority nice threads itrealvalue start
	 * (tpgid may be -1: strtoull takes the sign) */
	for (int i = 0; i < 19; i++) {
		char *end;

		v[i] = strtoull(p, &end, 10);
		if (end == p)
			return -1;
		p = end;
	}
	st->ppid = (pid_t)v[0];
	st->pgrp = (pid_t)v[1];
	st->sid = (pid_t)v[2];
	st->start = v[18];
	return 0;
}

unsigned long long jobtree_start(pid_t pid)
{
	struct stat_line st;

	return read_stat(pid, &st) == 0 ? st.start : 0;
}

/* Adds the numbers in a children file ("12 34 56 ") to out. */
static int read_children(const char *path, struct pids *out)
{
	char buf[4096];
	pid_t part = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] >= '0' && buf[i] <= '9') {
				part = part * 10 + (buf[i] - '0');
			} else if (part) {
				if (push(out, part) < 0)
					break;
				part = 0;
			}
		}
	}
	if (part)
		push(out, part);
	close(fd);
	return 0;
}

/* Without CONFIG_PROC_CHILDREN: every process whose parent is pid. */
static void scan_children(pid_t pid, struct pids *out)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat_line st;
		char *end;
		long p = strtol(e->d_name, &end, 10);

		if (p > 0 && *end == '\0' && read_stat((pid_t)p, &st) == 0 &&
		    st.ppid == pid)
			push(out, (pid_t)p);
	}
	closedir(d);
}

/* pid's children: of every thread of it (a child is its forking
 * thread's), or of its main thread only: dlock forks from there, and an
 * orphan goes to the subreaper's first live thread, its main one. */
static void children(pid_t pid, bool all_threads, struct pids *out)
{
	char path[96];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (read_children(path, out) < 0 && errno == ENOENT &&
	    access("/proc/self/task", F_OK) == 0) {
		snprintf(path, sizeof path, "/proc/%d", (int)pid);
		if (access(path, F_OK) == 0)	/* there, but no children file */
			scan_children(pid, out);
		return;
	}
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if (!all_threads || !(d = opendir(path)))
		return;
	while ((e = readdir(d))) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);

		if (tid <= 0 || *end != '\0' || tid == pid)
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%ld/children", (int)pid, tid);
		read_children(path, out);
	}
	closedir(d);
}

static bool skipped(const struct jobtree *jt, pid_t pid)
{
	for (size_t i = 0; i < jt->n_skip; i++)
		if (jt->skip[i] == pid)
			return true;
	return false;
}

static bool seen(const struct pids *p, size_t below, pid_t pid)
{
	for (size_t i = 0; i < below; i++)
		if (p->v[i] == pid)
			return true;
	return false;
}

/* Whether pid, one of the roots given by number, is no longer the
 * process it was (its number taken by another since). */
static bool not_the_root(const struct jobtree *jt, pid_t pid,
			 unsigned long long start)
{
	for (size_t r = 0; r < jt->n_roots; r++)
		if (jt->roots[r].pid == pid)
			return jt->roots[r].start != start;
	return false;
}

/* Whether pid is one of the roots, the same process still. */
static bool is_root(const struct jobtree *jt, pid_t pid)
{
	for (size_t r = 0; r < jt->n_roots; r++)
		if (jt->roots[r].pid == pid)
			return jobtree_start(pid) == jt->roots[r].start;
	return false;
}

/* pid's children into todo, but the roots, which are there already: the
 * watchdog keeps every process of the job as a root, and each would be
 * walked again from its parent's. */
static void children_but_roots(const struct jobtree *jt, pid_t pid,
			       struct pids *todo)
{
	size_t from = todo->n, to = todo->n;

	children(pid, true, todo);
	for (size_t i = from; i < todo->n; i++)
		if (!is_root(jt, todo->v[i]))
			todo->v[to++] = todo->v[i];
	todo->n = to;
}

/* The walk from the roots: each live process of the job outside its
 * group, or of the whole job (whole), at most max, into pids and, when
 * given, starts. */
static size_t walk(const struct jobtree *jt, bool whole, pid_t *pids,
		   unsigned long long *starts, pid_t *pgrps, size_t max)
{
	struct pids todo = { 0 };
	size_t n_out = 0, n_kids, n_given;
	/* A group of the job's number that is not the job's (its number
	 * taken since) is not signalled as a group: a process of the job
	 * that leads it, or joined it, counts one by one. */
	bool grouped = !whole && jobtree_group_ours(jt);

	if (jt->parent > 0) {
		struct pids kids = { 0 };

		children(jt->parent, false, &kids);
		for (size_t i = 0; i < kids.n; i++)
			if (!skipped(jt, kids.v[i]))
				push(&todo, kids.v[i]);
		free(kids.v);
	}
	n_kids = todo.n;
	for (size_t i = 0; i < jt->n_roots; i++)
		if (!seen(&todo, n_kids, jt->roots[i].pid))
			push(&todo, jt->roots[i].pid);
	n_given = todo.n;
	for (size_t i = 0; i < todo.n; i++) {
		pid_t pid = todo.v[i];
		struct stat_line st;

		if (read_stat(pid, &st) < 0 || st.sid != jt->sid ||
		    (i >= n_kids && i < n_given && not_the_root(jt, pid, st.start)))
			continue;
		if ((!grouped || st.pgrp != jt->pgid) && st.state != 'Z' &&
		    st.state != 'X' && n_out < max) {
			if (starts)
				starts[n_out] = st.start;
			if (pgrps)
				pgrps[n_out] = st.pgrp;
			pids[n_out++] = pid;
		}
		children_but_roots(jt, pid, &todo);
	}
	free(todo.v);
	return n_out;
}

size_t jobtree_outside(const struct jobtree *jt, pid_t *out, size_t max)
{
	return walk(jt, false, out, NULL, NULL, max);
}

size_t jobtree_members(const struct jobtree *jt, pid_t *pids,
		       unsigned long long *starts, pid_t *pgrps, size_t max)
{
	return walk(jt, true, pids, starts, pgrps, max);
}

/* One environment as it is read: the entry going by (its first bytes,
 * more than any name looked for, and its whole length), and what the
 * entries so far said. */
struct env_look {
	char want[40], entry[40];
	size_t want_len, len;
	bool our_job, other_job, token;
};

static bool entry_is(const struct env_look *e, const char *prefix)
{
	size_t n = strlen(prefix);

	return e->len >= n && memcmp(e->entry, prefix, n) == 0;
}

/* The entry going by has ended. */
static void entry_end(struct env_look *e)
{
	if (e->len == e->want_len && memcmp(e->entry, e->want, e->len) == 0)
		e->our_job = true;
	else if (entry_is(e, "DLOCK_JOB="))
		e->other_job = true;
	else if (entry_is(e, "DLOCK_TOKEN="))
		e->token = true;
	e->len = 0;
}

/* Whether pid was exec'd with DLOCK_JOB=job in its environment, as
 * every process of the job is unless it cleared it; or with DLOCK_TOKEN
 * and no DLOCK_JOB, as a process of the job is after `eval "$(dlock
 * acquire --export K2)"`, whose "unset DLOCK_JOB" would otherwise let it
 * run on unstopped (the reaper's own commands carry neither); or
 * whether its environment cannot be read (another user's, a program that
 * is not dumpable): counted as the job's then, as a process of the
 * window was before the environment was looked at. */
static bool environ_of_job(pid_t pid, pid_t job)
{
	struct env_look e = { .len = 0 };
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
	e.want_len = (size_t)snprintf(e.want, sizeof e.want, "DLOCK_JOB=%d", (int)job);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == EACCES || errno == EPERM;
	/* NUL-ended entries, looked at as they go by: one may span reads */
	while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\0') {
				entry_end(&e);
			} else {
				if (e.len < sizeof e.entry)
					e.entry[e.len] = buf[i];
				e.len++;
			}
		}
	}
	close(fd);
	if (e.len)
		entry_end(&e);
	return e.our_job || (e.token && !e.other_job);
}

size_t jobtree_adopted(const struct jobtree_adoption *a, pid_t *pids,
		       unsigned long long *starts, size_t max)
{
	struct pids kids = { 0 };
	size_t n = 0;

	children(a->reaper, true, &kids);
	for (size_t i = 0; i < kids.n && n < max; i++) {
		struct stat_line st;
		bool in_group = false;

		if (read_stat(kids.v[i], &st) < 0 || st.sid != a->sid ||
		    st.state == 'Z' || st.state == 'X')
			continue;
		for (size_t g = 0; g < a->n_groups && !in_group; g++)
			in_group = st.pgrp == a->groups[g];
		/* the window holds the reaper's own children of that moment
		 * too (a container's entrypoint shell, its next command):
		 * only those that say they are the job's */
		if (in_group || (st.start >= a->since && st.start <= a->until &&
				 environ_of_job(kids.v[i], a->job))) {
			starts[n] = st.start;
			pids[n++] = kids.v[i];
		}
	}
	free(kids.v);
	return n;
}

pid_t jobtree_pgrp(pid_t pid)
{
	struct stat_line st;

	return read_stat(pid, &st) == 0 ? st.pgrp : 0;
}

unsigned long long jobtree_now(void)
{
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);

	/* /proc/PID/stat's start times count from boot, suspend included */
	if (hz <= 0 || hz > 1000000000L || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		return 0;
	return (unsigned long long)ts.tv_sec * (unsigned long long)hz +
	       (unsigned long long)ts.tv_nsec / (unsigned long long)(1000000000L / hz);
}

bool jobtree_group_ours(const struct jobtree *jt)
{
	unsigned long long start = jobtree_start(jt->pgid);

	if (start == 0)
		return true;	/* no one has the number: empty, or ours */
	if (jt->leader_reaped)
		return false;	/* the leader is gone: a stranger */
	return jt->leader_start == 0 || start == jt->leader_start;
}

size_t jobtree_signal(const struct jobtree *jt, int sig)
{
	pid_t out[1024];
	size_t n;

	if (jobtree_group_ours(jt))
		kill(-jt->pgid, sig);
	n = jobtree_outside(jt, out, sizeof out / sizeof out[0]);
	for (size_t i = 0; i < n; i++)
		kill(out[i], sig);
	return n;
}

size_t jobtree_children(pid_t parent, const pid_t *skip, size_t n_skip,
			struct jobtree_proc *out, size_t max)
{
	struct jobtree jt = { .skip = skip, .n_skip = n_skip };
	struct pids kids = { 0 };
	size_t n = 0;

	children(parent, false, &kids);
	for (size_t i = 0; i < kids.n && n < max; i++) {
		unsigned long long start;

		if (skipped(&jt, kids.v[i]) || !(start = jobtree_start(kids.v[i])))
			continue;
		out[n++] = (struct jobtree_proc){ kids.v[i], start };
	}
	free(kids.v);
	return n;
}
