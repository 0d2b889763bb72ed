/* watchdog.c - the dead man's switch.
 *
 * Nothing renews a lease once dlock is gone, so nothing of the job may run
 * on by then. PDEATHSIG is not enough: it reaches only the command's own
 * process, not the rest of its process group, and a setuid exec clears it.
 * So a process of its own, started before the command, waits on a pipe
 * whose only write end dlock holds (EOF: dlock died, SIGKILL or the OOM
 * killer) and on a timer at the lease deadline, which dlock moves on after
 * every renewal (reached: dlock is stalled, SIGSTOP or a debugger, and the
 * lease is about to lapse). Either way the job's process group gets the
 * --on-lost signal and SIGCONT at once, and SIGKILL after --kill-after or
 * when the lease runs out, whichever is first.
 *
 * What it costs matters: dlock runs once per cron job or CI step. A fork()
 * copies the page tables and then every page dlock writes, and an exec
 * builds a process from scratch: each costs 1-2 ms here, a fifth of a whole
 * `dlock K true`. So the watchdog starts sharing dlock's memory (clone with
 * CLONE_VM, no copy), and only a job still running after HANDOVER_MS gets
 * it exec'd as "dlock watchdog", a process of its own: one sharing dlock's
 * memory would die with it, as the OOM killer kills every process of the
 * victim's memory. Until then it shares dlock's thread-local storage, errno
 * among it, so it makes only the raw system calls below and calls no libc
 * function. The two sides share one page, a memfd. Under valgrind (which
 * has no clone(CLONE_VM) without threads), where there is no raw system
 * call here for the architecture, or where /proc/self/exe cannot be
 * exec'd, a plain fork() runs the watchdog instead. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "clock.h"
#include "config.h"
#include "lock.h"
#include "jobtree.h"
#include "signals.h"
#include "watchdog.h"

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>	/* a header only: no library, no cost */
#else
#define RUNNING_ON_VALGRIND 0	/* valgrind then stops at our clone() */
#endif

/* A sanitizer build: see watchdog_env(). */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif

#define GROUP_POLL_MS 50
#define SNAPSHOT_MS 100		/* how often dlock's children are noted */
#define MAX_SKIP 64
#define MAX_SNAPSHOT 4096	/* the job's processes noted */
#define MAX_GROUPS 64		/* its process groups but its own */
#define KILL_ROUNDS 100		/* SIGKILL again, GROUP_POLL_MS apart */
#define MAX_RECORDED 16		/* -k locks recorded in history */
#define HANDOVER_MS 20		/* a job this short never pays for an exec */
#define PAGE_FD 3		/* in the watchdog: the shared page */
#define PIPE_FD 4		/* dlock's pipe */
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))
#define HOLD_FD_MIN 5		/* where held descriptors go: past 3 and 4 */

/* What dlock leaves for the history, should it be killed. */
struct watch_lock {
	char name[512], token[LOCK_TOKEN_MAX + 1], fence[24], info[512];
	int64_t acquired_ms;	/* monotonic: when its acquisition began */
};

struct watch_record {
	char name[512];		/* the lock for the line; "" when none */
	int64_t ttl_ms, node_timeout_ms;
	int64_t lapse_ms;	/* lock.lapse_ms, the longest of the locks' */
	long history;
	char prefix[512], password[512];
	bool has_password, tls, tls_insecure;
	char tls_ca[1024], tls_cert[1024], tls_key[1024];
	size_t n_urls, n_locks;
	char urls[MAX_SERVERS][1024];	/* as given: parsed again there */
	struct watch_lock locks[MAX_RECORDED];
};

struct watch_page {
	_Atomic int64_t deadline_ms;	/* act then, unless moved on */
	_Atomic int64_t end_ms;		/* the lease runs out then */
	_Atomic pid_t pgid;		/* the job; 0 until it starts */
	atomic_int cmd_reaped;		/* dlock reaped the command: its
					 * number may be anyone's now */
	atomic_int fired;		/* the --on-lost signal was sent */
	atomic_int done;		/* the job is over: exit, touch nothing */
	atomic_int no_exec;		/* /proc/self/exe failed: fork() next */
	int on_lost_signal;
	int64_t kill_after_ms;
	pid_t dlock_pid, sid;		/* dlock, and the job's session */
	atomic_int n_skip;		/* dlock's children that are not the */
	pid_t skip[MAX_SKIP];		/* job: those it inherited */
	int n_hold;			/* the lock's connections, held open */
	int hold[WATCHDOG_MAX_HOLD];	/* (sorted, each >= HOLD_FD_MIN) */
	struct watch_record rec;	/* last: its pages are touched only
					 * when written */
};

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static bool group_alive(pid_t pgid)
{
	return kill(-pgid, 0) == 0 || errno == EPERM;
}

/* The job's processes as last seen (exec'd watchdog only): dlock's
 * children, then every process below them (note_tree()). Once dlock is
 * gone, the kernel's parent-death signal may end the command before we
 * see the pipe's EOF, and a process of the job whose parent died went to
 * init (or dlock's own subreaper), out of reach of a walk from the
 * command: each is kept here as a root of its own (jobtree.c). One that
 * started after the snapshot is found among the adopted (adopt()). */
struct snapshot {
	struct jobtree_proc kids[MAX_SNAPSHOT];
	size_t n;
	unsigned long long at;	/* when taken (jobtree_now()) */
	unsigned long long eof_at;	/* when dlock was seen gone, or 0 */
	pid_t groups[MAX_GROUPS];	/* groups of the job's processes */
	size_t n_groups;		/* outside its own */
	unsigned long long cmd_start;	/* the command's start, 0: unknown */
};

/* Whether the job's group (numbered as the command) may still be there:
 * its number is no other process's. The kernel gives no new process the
 * number of a group that has members; once one has it, the job's group
 * is empty and -pgid would be a stranger's group. */
static bool group_ours(const struct watch_page *pg,
		       const struct snapshot *snap, pid_t pgid)
{
	struct jobtree jt = {
		.pgid = pgid, .leader_reaped = atomic_load(&pg->cmd_reaped),
		.leader_start = snap->cmd_start,
	};

	return jobtree_group_ours(&jt);
}

/* pgrp, a group one of the job's processes moved to, into snap->groups:
 * what joins it, or is forked into it, is the job's (adopt()). */
static void note_group(struct snapshot *snap, pid_t pgrp, pid_t job_pgid)
{
	size_t g = 0;

	if (pgrp <= 0 || pgrp == job_pgid)
		return;
	while (g < snap->n_groups && snap->groups[g] != pgrp)
		g++;
	if (g == snap->n_groups && g < MAX_GROUPS)
		snap->groups[snap->n_groups++] = pgrp;
}

/* The job's tree: from dlock's children while it lives (stalled), else
 * from the last snapshot, which still names the command. */
static struct jobtree tree_of(const struct watch_page *pg, pid_t pgid,
			      bool dlock_alive, const struct snapshot *snap,
			      pid_t *skip)
{
	int n = atomic_load(&pg->n_skip);

	memcpy(skip, pg->skip, (size_t)n * sizeof *skip);
	skip[n++] = getpid();
	return (struct jobtree){
		.pgid = pgid, .sid = pg->sid,
		.parent = dlock_alive ? pg->dlock_pid : 0,
		.skip = skip, .n_skip = (size_t)n,
		.roots = snap->kids, .n_roots = snap->n,
		.leader_reaped = atomic_load(&pg->cmd_reaped),
		.leader_start = snap->cmd_start,
	};
}

static void pause_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* dlock died: one line on its stderr, which we kept, naming the lock. The
 * key lapses once the lease's last renewal runs out: by its end, which
 * dlock moved on after each, plus the notice and the drift it left. */
static void say_killed(const struct watch_page *pg)
{
	const struct watch_record *rec = &pg->rec;
	int64_t lapse_ms = atomic_load(&pg->end_ms) + rec->ttl_ms * 6 / 100 + 2 -
			   clock_now_ms();
	char line[800];
	int n;

	if (!rec->name[0])
		return;
	lapse_ms = lapse_ms < 0 ? 0 : lapse_ms > rec->ttl_ms ? rec->ttl_ms : lapse_ms;
	/* a store that keeps the lock a while after its holder went quiet
	 * (ZooKeeper: its session's timeout, whatever the last renewal) */
	if (rec->lapse_ms > 0)
		lapse_ms = rec->lapse_ms;
	/* a lock held by its connection, which we hold: it goes when we do */
	if (pg->n_hold > 0)
		n = snprintf(line, sizeof line,
			     "dlock: %s: dlock was killed; stopping the job; the lock is given back once it has stopped\n",
			     rec->name);
	else
		n = snprintf(line, sizeof line,
			     "dlock: %s: dlock was killed; stopping the job; the lock lapses within %.3g s\n",
			     rec->name, (double)((lapse_ms + 99) / 100) / 10);
	if (n > 0)
		(void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The 'killed' event in one lock's history, as its engine writes it. */
static void record_lock(const struct watch_record *rec,
			const struct engine *engine, const void *servers,
			const struct watch_lock *wl)
{
	struct lock_params p = {
		.name = wl->name, .prefix = rec->prefix, .engine = engine,
		.servers = servers, .n_servers = rec->n_urls,
		.password = rec->has_password ? rec->password : NULL,
		.ttl_ms = rec->ttl_ms, .node_timeout_ms = rec->node_timeout_ms,
		.history = rec->history, .token = wl->token,
	};
	struct lock lk;
	struct error err;

	if (lock_init(&lk, &p, &err) == 0) {
		snprintf(lk.token, sizeof lk.token, "%s", wl->token);
		snprintf(lk.fence, sizeof lk.fence, "%s", wl->fence);
		snprintf(lk.info, sizeof lk.info, "%s", wl->info);
		engine->lock.note_killed(&lk, clock_now_ms() - wl->acquired_ms);
	}
	lock_free(&lk);
}

/* In a process of its own, so that a server slow to answer (or a name
 * slow to resolve) costs the job's signalling nothing; alarm() bounds it.
 * The servers' URLs are parsed again here, by their engine. */
static void record_killed(const struct watch_page *pg)
{
	const struct watch_record *rec = &pg->rec;
	struct settings st = {
		.tls = rec->tls,
		.tls_opts = {
			.ca = rec->tls_ca[0] ? (char *)rec->tls_ca : NULL,
			.cert = rec->tls_cert[0] ? (char *)rec->tls_cert : NULL,
			.key = rec->tls_key[0] ? (char *)rec->tls_key : NULL,
			.insecure = rec->tls_insecure,
		},
	};
	char *urls[MAX_SERVERS], why[512];
	struct error err;
	sigset_t none;

	if (rec->n_locks == 0 || rec->history == 0 || fork() != 0)
		return;
	close(STDERR_FILENO);	/* a reader of dlock's stderr waits on us */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	alarm((unsigned)((2 * rec->node_timeout_ms + 1999) / 1000));
	for (size_t i = 0; i < rec->n_urls; i++)
		urls[i] = (char *)rec->urls[i];
	if (config_parse_servers(urls, rec->n_urls, &st.engine, &st.servers, why,
				 sizeof why) < 0 || !st.engine->lock.note_killed)
		_exit(0);
	st.n_servers = rec->n_urls;
	if (!st.engine->settings.init || st.engine->settings.init(&st, &err) == 0)
		for (size_t i = 0; i < rec->n_locks; i++)
			record_lock(rec, st.engine, st.servers, &rec->locks[i]);
	_exit(0);
}

/* The groups of processes found outside the job's (pids, n of them). */
static void note_groups(struct snapshot *snap, const pid_t *pids, size_t n,
			pid_t job_pgid)
{
	for (size_t i = 0; i < n; i++)
		note_group(snap, jobtree_pgrp(pids[i]), job_pgid);
}

/* Keeps each process found (pids, n of them; starts, or NULL to read
 * them) as a root of the job's tree, the pair of number and start time
 * naming it even once its number is another process's. */
static void keep_found(struct snapshot *snap, struct jobtree *jt,
		       const pid_t *pids, const unsigned long long *starts,
		       size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned long long start = starts ? starts[i] : jobtree_start(pids[i]);
		size_t r = 0;

		while (r < snap->n && snap->kids[r].pid != pids[i])
			r++;
		if (!start || (r == snap->n && snap->n == MAX_SNAPSHOT))
			continue;
		if (r == snap->n)
			snap->n++;
		snap->kids[r] = (struct jobtree_proc){ pids[i], start };
	}
	jt->n_roots = snap->n;
}

/* sig to the job's group and to each of its processes outside it, found
 * before the group's signal can end their parents, and kept. */
static void signal_job(const struct watch_page *pg, struct snapshot *snap,
		       struct jobtree *jt, int sig)
{
	pid_t out[MAX_SNAPSHOT];
	size_t n;

	jt->leader_reaped = atomic_load(&pg->cmd_reaped);	/* (dlock may) */
	n = jobtree_outside(jt, out, MAX_SNAPSHOT);
	keep_found(snap, jt, out, NULL, n);
	note_groups(snap, out, n, jt->pgid);
	if (group_ours(pg, snap, jt->pgid))
		kill(-jt->pgid, sig);
	for (size_t i = 0; i < n; i++)
		kill(out[i], sig);
	n = jobtree_outside(jt, out, MAX_SNAPSHOT);	/* forked meanwhile */
	for (size_t i = 0; i < n; i++)
		kill(out[i], sig);
	keep_found(snap, jt, out, NULL, n);
	note_groups(snap, out, n, jt->pgid);
}

/* Every process of the job below dlock's children, in its group or not,
 * as the snapshot (dlock's children among them): a process in the job's
 * group now may leave it before dlock is killed. */
static void note_tree(const struct watch_page *pg, struct snapshot *snap)
{
	static pid_t pids[MAX_SNAPSHOT], pgrps[MAX_SNAPSHOT];
	static unsigned long long starts[MAX_SNAPSHOT];
	pid_t skip[MAX_SKIP + 1], pgid = atomic_load(&pg->pgid);
	struct jobtree jt = tree_of(pg, pgid, true, snap, skip);
	size_t n = jobtree_members(&jt, pids, starts, pgrps, MAX_SNAPSHOT);

	for (size_t i = 0; i < n; i++) {
		snap->kids[i] = (struct jobtree_proc){ pids[i], starts[i] };
		note_group(snap, pgrps[i], pgid);
	}
	snap->n = n;
}

/* A new snapshot, kept only if dlock still lived once it was taken (no
 * EOF on its pipe, which its death closes before the kernel hands its
 * children on): one taken after, or as, dlock died may miss the job's
 * processes that its death orphaned, and would move the start of what
 * adopt() looks for past them. */
static void renew_snapshot(const struct watch_page *pg, int fd,
			   struct snapshot *snap)
{
	static struct snapshot next;
	struct pollfd pfd = { fd, POLLIN, 0 };

	next = (struct snapshot){ .at = jobtree_now(), .cmd_start = snap->cmd_start };
	note_tree(pg, &next);
	/* the command's start, found below dlock: its own (a number in use
	 * is no other process's) */
	for (size_t i = 0; !next.cmd_start && i < next.n; i++)
		if (next.kids[i].pid == atomic_load(&pg->pgid))
			next.cmd_start = next.kids[i].start;
	if (poll(&pfd, 1, 0) == 0)
		*snap = next;
}

/* dlock is gone: the processes its subreaper (ours now) adopted from the
 * job's session that are the job's: in one of the groups its processes
 * moved to (what one of them forked once told, its parent exiting at
 * once, as it starts a daemon), or started between the last snapshot and
 * dlock's death (one unseen by the snapshot, whose parent died of
 * dlock's death) with DLOCK_JOB naming the job (or DLOCK_TOKEN and no
 * DLOCK_JOB, as `dlock acquire --export` leaves it): the reaper's own
 * children of that moment (a container's entrypoint shell and its next
 * command) are spared, and so is a process of the job that cleared its
 * environment just then (the price; one whose environment cannot be read
 * counts as the job's). Not one started after in another group: a job of
 * another dlock of the session, orphaned later while we still poll. */
static size_t adopt(const struct watch_page *pg, struct snapshot *snap,
		    struct jobtree *jt, bool tell)
{
	static pid_t pids[MAX_SNAPSHOT];
	static unsigned long long starts[MAX_SNAPSHOT];
	struct jobtree_adoption a = {
		.reaper = getppid(), .sid = pg->sid,
		.groups = snap->groups, .n_groups = snap->n_groups,
		.since = snap->at - 1, .until = snap->eof_at,
		.job = atomic_load(&pg->pgid),
	};
	size_t n;

	/* not yet reparented: nor is the command, whose death would orphan */
	if (a.reaper == pg->dlock_pid || snap->at == 0 || snap->eof_at == 0)
		return 0;
	n = jobtree_adopted(&a, pids, starts, MAX_SNAPSHOT);
	/* one found after the job was told: told now */
	for (size_t i = 0; tell && i < n; i++) {
		size_t r = 0;

		while (r < snap->n && (snap->kids[r].pid != pids[i] ||
				       snap->kids[r].start != starts[i]))
			r++;
		if (r == snap->n) {
			kill(pids[i], pg->on_lost_signal);
			kill(pids[i], SIGCONT);
		}
	}
	keep_found(snap, jt, pids, starts, n);
	return n;
}

/* dlock is gone (dlock_alive false: the pipe's EOF) or stalled past the
 * deadline: the --on-lost signal to the whole job, SIGKILL later. */
static void __attribute__((noreturn))
stop_job(struct watch_page *pg, bool dlock_alive, struct snapshot *snap)
{
	pid_t pgid = atomic_load(&pg->pgid), skip[MAX_SKIP + 1];
	int64_t kill_at_ms = min64(clock_now_ms() + pg->kill_after_ms,
				   atomic_load(&pg->end_ms));
	struct jobtree jt;
	int kills = 0;

	if (pgid <= 0 || atomic_load(&pg->done))
		_exit(0);
	/* dlock died before the first snapshot: the command, if it is */
	if (!dlock_alive && snap->n == 0 && group_ours(pg, snap, pgid) &&
	    (snap->kids[0].start = jobtree_start(pgid)) != 0) {
		snap->kids[0].pid = pgid;
		snap->n = 1;
	}
	jt = tree_of(pg, pgid, dlock_alive, snap, skip);
	if (!dlock_alive) {
		snap->eof_at = jobtree_now() + 1;	/* (a tick's rounding) */
		adopt(pg, snap, &jt, false);
	}
	if (atomic_exchange(&pg->fired, 1) == 0) {
		signal_job(pg, snap, &jt, pg->on_lost_signal);
		signal_job(pg, snap, &jt, SIGCONT);	/* a stopped job must act on it */
		/* Only then: nothing may delay the signal. */
		if (!dlock_alive) {
			say_killed(pg);
			record_killed(pg);
		}
	}
	/* Polled: the job's processes are not our children. Leaving as soon
	 * as they are gone keeps a later group of the same number safe. */
	while (!atomic_load(&pg->done) && kills < KILL_ROUNDS) {
		int64_t left_ms = kill_at_ms - clock_now_ms();
		pid_t out[MAX_SNAPSHOT];
		bool alive = group_ours(pg, snap, pgid) && group_alive(pgid);
		size_t n;

		jt.leader_reaped = atomic_load(&pg->cmd_reaped);
		n = jobtree_outside(&jt, out, MAX_SNAPSHOT);

		/* (one forked since, before its parent dies) */
		keep_found(snap, &jt, out, NULL, n);
		note_groups(snap, out, n, pgid);
		/* after the group's check: its last process orphaned them */
		if (!dlock_alive)
			n += adopt(pg, snap, &jt, true);
		alive = alive || n > 0;

		if (!alive)
			break;
		if (left_ms <= 0) {
			/* again while anything remains: a fork racing the first */
			signal_job(pg, snap, &jt, SIGKILL);
			kills++;
			left_ms = GROUP_POLL_MS;
		}
		pause_ms(min64(left_ms, GROUP_POLL_MS));	/* on time */
	}
	_exit(0);
}

static void __attribute__((noreturn)) watch(struct watch_page *pg, int fd)
{
	struct pollfd pfd[2] = { { fd, POLLIN, 0 }, { -1, POLLIN, 0 } };
	/* Before a first snapshot, what started since the job did: since we
	 * did, started before the command; a watchdog started again while
	 * the job runs (the last one killed), since the command did. */
	static struct snapshot snap;
	pid_t pgid = atomic_load(&pg->pgid);
	unsigned long long job_start = pgid > 0 ? jobtree_start(pgid) : 0;
	int64_t snap_at_ms = 0;
	sigset_t all;

	if (atomic_load(&pg->cmd_reaped))	/* read may be a stranger's */
		job_start = 0;
	snap.at = job_start ? job_start : jobtree_start(getpid());
	snap.cmd_start = job_start;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	pfd[1].fd = clock_timer();
	for (;;) {
		int64_t deadline_ms = atomic_load(&pg->deadline_ms);
		int64_t now_ms = clock_now_ms(), wait_ms;

		/* over while dlock releases: its pipe closes only as it exits */
		if (atomic_load(&pg->done))
			_exit(0);
		if (now_ms >= deadline_ms)
			stop_job(pg, true, &snap);
		if (atomic_load(&pg->pgid) > 0 && now_ms >= snap_at_ms) {
			renew_snapshot(pg, fd, &snap);
			snap_at_ms = now_ms + SNAPSHOT_MS;
		}
		if (pfd[1].fd >= 0 && clock_arm(pfd[1].fd, deadline_ms) < 0) {
			close(pfd[1].fd);
			pfd[1].fd = -1;
		}
		/* Without a timer, poll()'s own timeout (which misses suspend). */
		wait_ms = pfd[1].fd >= 0 ? SNAPSHOT_MS :
			  min64(deadline_ms - now_ms, SNAPSHOT_MS);
		if (poll(pfd, 2, clock_poll_ms(wait_ms)) < 0)
			pause_ms(GROUP_POLL_MS);
		else if (pfd[0].revents)
			stop_job(pg, false, &snap);	/* EOF: dlock is gone, or done */
	}
}

int watchdog_main(void)
{
	struct watch_page *pg = mmap(NULL, sizeof *pg, PROT_READ | PROT_WRITE,
				     MAP_SHARED, PAGE_FD, 0);

	if (pg == MAP_FAILED)
		return EX_USAGE;	/* not started by dlock */
	prctl(PR_SET_NAME, WATCHDOG_COMM);	/* not "exe" */
	close(PAGE_FD);
	/* everything but the pipe and the connections held (sorted) */
	for (int i = 0, from = PIPE_FD + 1; i <= pg->n_hold; i++) {
		int to = i < pg->n_hold ? pg->hold[i] : -1;

		if (to < 0) {
			close_range((unsigned)from, ~0U, 0);
			break;
		}
		if (to > from)
			close_range((unsigned)from, (unsigned)to - 1, 0);
		from = to + 1;
	}
	watch(pg, PIPE_FD);
}

struct spawn {
	int page_fd, pipe_fd;
	struct watch_page *page;	/* its hold[]: kept, not closed */
	char *const *envp;
};

#if defined(__x86_64__)
#define SHARE_VM 1
static NO_SANITIZE long sys(long n, long a, long b, long c, long d, long e)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	long ret;

	__asm__ volatile("syscall" : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
#define SHARE_VM 1
static NO_SANITIZE long sys(long n, long a, long b, long c, long d, long e)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;

	__asm__ volatile("svc 0" : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4)
			 : "memory");
	return x0;
}
#else
#define SHARE_VM 0	/* no raw system calls here: fork() */
#endif

#if SHARE_VM

extern char **environ;

/* The exec'd watchdog's environment: none, as it needs none. In a
 * sanitizer build (tests/run --sanitized), the sanitizers' settings, so
 * that a report of the watchdog's own lands where the others do, not on
 * its closed stderr. Built before the clone, which calls no libc. */
static char *const *watchdog_env(void)
{
	static char *env[4];
#ifdef SANITIZED
	static const char *const names[] = {
		"ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS=",
	};
	size_t n = 0;

	for (char **e = environ; *e && n < 3; e++)
		for (size_t i = 0; i < 3; i++)
			if (strncmp(*e, names[i], strlen(names[i])) == 0)
				env[n++] = *e;
#endif
	return env;
}

/* The first HANDOVER_MS, in dlock's memory: raw system calls only. If the
 * job is over by then (done, and the pipe closed), leave; otherwise, or if
 * dlock died meanwhile, become "dlock watchdog", which sees the EOF too. */
static NO_SANITIZE int watch_first(void *arg)
{
	static char *const argv[] = { (char *)"dlock watchdog", NULL };
	const struct spawn *sp = arg;
	uint64_t all = ~(uint64_t)0;
	struct timespec handover = { 0, HANDOVER_MS * 1000000L };
	struct pollfd pfd = { PIPE_FD, POLLIN, 0 };

	sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof all, 0);
	/* Out of dlock's process group and session: a kill -9 of dlock's
	 * group (a CI runner cancelling a step) must not take us with it. */
	sys(SYS_setsid, 0, 0, 0, 0, 0);
	sys(SYS_prctl, PR_SET_NAME, (long)WATCHDOG_COMM, 0, 0, 0);
	/* None of dlock's descriptors: not the pipe's write end, which would
	 * hide dlock's death, nor its stdout, whose reader waits for EOF.
	 * Its stderr stays, for the line should dlock be killed: the job has
	 * it too, and we leave when the job is over. The two we keep go to 3
	 * and 4 through 0 and 1, which stdin and stdout held (open_std_fds()):
	 * no number above 4 is needed, so that a low ulimit -n that let dlock
	 * start the job lets us start too. */
	for (long fd = 0; fd < 2; fd++)
		sys(SYS_close, fd, 0, 0, 0, 0);
	if (sys(SYS_dup3, sp->page_fd, 0, 0, 0, 0) < 0 ||
	    sys(SYS_dup3, sp->pipe_fd, 1, 0, 0, 0) < 0)
		sys(SYS_exit, EX_OSERR, 0, 0, 0, 0);
	/* all but the connections held (sorted, past 4): they stay open
	 * across the exec, so that the server keeps the lock with them
	 * until the job is stopped, should dlock be killed */
	for (int i = 0, from = 3; i <= sp->page->n_hold; i++) {
		int to = i < sp->page->n_hold ? sp->page->hold[i] : -1;

		if (to < 0) {
			sys(SYS_close_range, from, ~0U, 0, 0, 0);
			break;
		}
		if (to > from)
			sys(SYS_close_range, from, to - 1, 0, 0, 0);
		sys(SYS_fcntl, to, F_SETFD, 0, 0, 0);
		from = to + 1;
	}
	if (sys(SYS_dup3, 0, PAGE_FD, 0, 0, 0) < 0 ||
	    sys(SYS_dup3, 1, PIPE_FD, 0, 0, 0) < 0)
		sys(SYS_exit, EX_OSERR, 0, 0, 0, 0);
	sys(SYS_close, 0, 0, 0, 0, 0);
	sys(SYS_close, 1, 0, 0, 0, 0);
	/* The job over: whether dlock exited, or still gives the lock back
	 * (its pipe closes only as it exits: watchdog_end()). */
	sys(SYS_ppoll, (long)&pfd, 1, (long)&handover, 0, 0);
	if (atomic_load(&sp->page->done))
		sys(SYS_exit, 0, 0, 0, 0, 0);
	sys(SYS_execve, (long)"/proc/self/exe", (long)argv, (long)sp->envp, 0, 0);
	atomic_store(&sp->page->no_exec, 1);
	sys(SYS_exit, EX_OSERR, 0, 0, 0, 0);	/* dlock starts another */
	return 0;
}
#endif

static int start_process(struct watchdog *wd, int page_fd, int pipe_fd,
			 int write_fd)
{
#if SHARE_VM
	/* Static: the clone reads them after we return. 16 KiB of stack: a
	 * few system calls. It is started again only once reaped. */
	static char stack[16 * 1024] __attribute__((aligned(16)));
	static struct spawn sp;

	if (!RUNNING_ON_VALGRIND && !atomic_load(&wd->page->no_exec)) {
		sp = (struct spawn){ page_fd, pipe_fd, wd->page, watchdog_env() };
		wd->pid = clone(watch_first, stack + sizeof stack,
				CLONE_VM | SIGNAL_WATCHDOG_EXIT, &sp);
		if (wd->pid > 0)
			return 0;
	}
#endif
	wd->pid = fork();
	if (wd->pid == 0) {
		setsid();
		prctl(PR_SET_NAME, WATCHDOG_COMM);
		close(write_fd);
		for (int i = 0; i < 2; i++)	/* stderr stays: say_killed() */
			if (i != pipe_fd)
				close(i);
		watch(wd->page, pipe_fd);
	}
	return wd->pid < 0 ? -1 : 0;
}

static int by_number(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* The lock's connections, as copies numbered HOLD_FD_MIN and up (clear
 * of the page's and the pipe's 3 and 4 in the exec'd watchdog), for the
 * page to list. A copy that cannot be made (a low ulimit -n) is not held:
 * the lock then ends with dlock, as it did. */
static void copy_held(struct watchdog *wd)
{
	struct watch_page *pg = wd->page;

	pg->n_hold = 0;
	for (size_t i = 0; i < wd->n_hold; i++) {
		int fd = fcntl(wd->hold[i], F_DUPFD_CLOEXEC, HOLD_FD_MIN);

		if (fd >= 0)
			pg->hold[pg->n_hold++] = fd;
	}
	qsort(pg->hold, (size_t)pg->n_hold, sizeof *pg->hold, by_number);
}

static void close_held(struct watchdog *wd)
{
	for (int i = 0; i < wd->page->n_hold; i++)
		close(wd->page->hold[i]);
}

static int start(struct watchdog *wd, struct error *err)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0) {
		error_set(err, EX_OSERR, "watchdog: pipe: %s", strerror(errno));
		return -1;
	}
	copy_held(wd);
	if (start_process(wd, wd->page_fd, fds[0], fds[1]) < 0) {
		error_set(err, EX_OSERR, "watchdog: %s", strerror(errno));
		close_held(wd);
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	/* the watchdog has its own copies now (a clone copies the table) */
	close_held(wd);
	close(fds[0]);
	wd->fd = fds[1];
	return 0;
}

int watchdog_start(struct watchdog *wd, int on_lost_signal,
		   int64_t kill_after_ms, int64_t deadline_ms, int64_t end_ms,
		   const int *hold, size_t n_hold, struct error *err)
{
	struct watch_page *pg;

	*wd = (struct watchdog){ .fd = -1, .page_fd = -1 };
	for (size_t i = 0; i < n_hold && wd->n_hold < WATCHDOG_MAX_HOLD; i++)
		wd->hold[wd->n_hold++] = hold[i];
	wd->page_fd = memfd_create("dlock-watchdog", MFD_CLOEXEC);
	if (wd->page_fd < 0 || ftruncate(wd->page_fd, sizeof *pg) < 0 ||
	    (pg = mmap(NULL, sizeof *pg, PROT_READ | PROT_WRITE, MAP_SHARED,
		       wd->page_fd, 0)) == MAP_FAILED) {
		error_set(err, EX_OSERR, "watchdog: %s", strerror(errno));
		if (wd->page_fd >= 0)
			close(wd->page_fd);
		wd->page_fd = -1;
		return -1;
	}
	pg->deadline_ms = deadline_ms;
	pg->end_ms = end_ms;
	pg->dlock_pid = getpid();
	pg->sid = getsid(0);
	pg->on_lost_signal = on_lost_signal;
	pg->kill_after_ms = kill_after_ms;
	wd->page = pg;
	if (start(wd, err) < 0) {
		watchdog_end(wd);
		return -1;
	}
	return 0;
}

void watchdog_command_reaped(struct watchdog *wd)
{
	if (wd->page)
		atomic_store(&wd->page->cmd_reaped, 1);
}

void watchdog_job(struct watchdog *wd, pid_t pgid)
{
	atomic_store(&wd->page->pgid, pgid);
}

static bool copy(char *to, size_t len, const char *from)
{
	return (size_t)snprintf(to, len, "%s", from ? from : "") < len;
}

void watchdog_record(struct watchdog *wd, const char *name,
		     const struct lock *lks, size_t n,
		     const struct tls_options *tls)
{
	struct watch_record *rec = &wd->page->rec;
	const struct lock_params *p = lks[0].p;
	bool fits;

	fits = copy(rec->name, sizeof rec->name, name) &&
	       copy(rec->prefix, sizeof rec->prefix, p->prefix) &&
	       copy(rec->password, sizeof rec->password, p->password) &&
	       copy(rec->tls_ca, sizeof rec->tls_ca, tls ? tls->ca : NULL) &&
	       copy(rec->tls_cert, sizeof rec->tls_cert, tls ? tls->cert : NULL) &&
	       copy(rec->tls_key, sizeof rec->tls_key, tls ? tls->key : NULL) &&
	       p->n_servers <= MAX_SERVERS;
	rec->has_password = p->password != NULL;
	rec->tls = tls != NULL;
	rec->tls_insecure = tls && tls->insecure;
	rec->ttl_ms = lks[0].ttl_ms;
	rec->node_timeout_ms = lks[0].node_timeout_ms;
	rec->lapse_ms = 0;
	for (size_t i = 0; i < n; i++)
		rec->lapse_ms = lks[i].lapse_ms > rec->lapse_ms ? lks[i].lapse_ms :
				rec->lapse_ms;
	rec->history = p->history;
	rec->n_urls = fits ? p->n_servers : 0;
	for (size_t i = 0; i < rec->n_urls; i++)
		if (!copy(rec->urls[i], sizeof rec->urls[i], p->server_texts[i]))
			rec->n_urls = 0;
	rec->n_locks = 0;
	for (size_t i = 0; fits && i < n && i < MAX_RECORDED; i++) {
		struct watch_lock *wl = &rec->locks[rec->n_locks];

		if (copy(wl->name, sizeof wl->name, lks[i].p->name) &&
		    copy(wl->token, sizeof wl->token, lks[i].token) &&
		    copy(wl->fence, sizeof wl->fence, lks[i].fence) &&
		    copy(wl->info, sizeof wl->info, lks[i].info)) {
			wl->acquired_ms = lks[i].acquired_ms;
			rec->n_locks++;
		}
	}
}

void watchdog_skip(struct watchdog *wd, const pid_t *pids, size_t n)
{
	n = n < MAX_SKIP ? n : MAX_SKIP;
	if (n > 0)	/* pids may be NULL then: memcpy() wants none */
		memcpy(wd->page->skip, pids, n * sizeof *pids);
	atomic_store(&wd->page->n_skip, (int)n);
}

void watchdog_deadline(struct watchdog *wd, int64_t deadline_ms, int64_t end_ms)
{
	atomic_store(&wd->page->end_ms, end_ms);
	atomic_store(&wd->page->deadline_ms, deadline_ms);
}

bool watchdog_claim(struct watchdog *wd)
{
	return atomic_exchange(&wd->page->fired, 1) == 0;
}

bool watchdog_fired(const struct watchdog *wd)
{
	return atomic_load(&wd->page->fired) != 0;
}

int watchdog_restart(struct watchdog *wd, struct error *err)
{
	wd->pid = -1;	/* reaped: its number may be anyone's now */
	/* One that acted has done its part; dlock sees to the rest. */
	if (!wd->page || atomic_load(&wd->page->fired))
		return 0;
	if (wd->fd >= 0)
		close(wd->fd);
	wd->fd = -1;
	return start(wd, err);
}

void watchdog_end(struct watchdog *wd)
{
	if (!wd->page)
		return;
	/* done first: the EOF that follows must not read as dlock's death. */
	atomic_store(&wd->page->done, 1);
	/* All that is left for the watchdog is to leave, and woken by the EOF
	 * it would run ahead of us (wake-up preemption: 15 us here, for a
	 * system call that takes 1): SCHED_BATCH is never woken ahead of the
	 * task running. */
	if (wd->pid > 0)
		sched_setscheduler(wd->pid, SCHED_BATCH, &(struct sched_param){ 0 });
	/* The EOF itself comes as we exit, unless the watchdog holds the
	 * lock's connections, which must close now. A watchdog still in our
	 * memory then leaves after us, and so unmaps that memory once our
	 * parent has seen us exit: the last process out does it, 80 us of a
	 * `dlock K true` here. An exec'd watchdog leaves at its next wake-up,
	 * as it sees done. */
	if (wd->fd >= 0 && wd->n_hold > 0)
		close(wd->fd);
	if (wd->page_fd >= 0)
		close(wd->page_fd);
	/* Not unmapped: a watchdog still in our memory may read it yet. */
	*wd = (struct watchdog){ .fd = -1, .page_fd = -1 };
}
