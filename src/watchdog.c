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
 * --on-lost signal and SIGCONT at once, SIGKILL after --kill-after.
 *
 * The watchdog shares dlock's memory (clone(CLONE_VM), as posix_spawn()
 * does, but without CLONE_VFORK): a fork() copies the page tables and then
 * every page dlock writes, which costs more than a millisecond per run on a
 * small VM, a fifth of a whole `dlock K true`. Sharing the memory, the
 * watchdog also shares the main thread's thread-local storage, errno among
 * it; so it calls no libc function at all, only the raw system calls
 * below, and is built without sanitizers. Under valgrind (which has no
 * clone(CLONE_VM) without threads), where that clone fails, or where there
 * is no raw system call here for the architecture, a plain fork() runs the
 * same code. What both sides share is one MAP_SHARED
 * page, which suits either. */
#include <errno.h>
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
#include <sys/timerfd.h>
#include "watchdog.h"
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>	/* a header only: no library, no cost */
#else
#define RUNNING_ON_VALGRIND 0	/* valgrind then stops at our clone() */
#endif

#define GROUP_POLL_MS 50
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

struct watch_page {
	_Atomic int64_t deadline_ms;	/* act then, unless moved on */
	_Atomic pid_t pgid;		/* the job; 0 until it starts */
	atomic_int fired;		/* the --on-lost signal was sent */
	atomic_int done;		/* the job is over: exit, touch nothing */
	int on_lost_signal;
	int64_t kill_after_ms;
	int fd;				/* the pipe's read end */
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
#define SHARE_VM 0	/* forked: libc is fine there */
static long sys(long n, long a, long b, long c, long d, long e)
{
	long r = syscall(n, a, b, c, d, e);

	return r < 0 ? -errno : r;
}
#endif

static NO_SANITIZE int64_t now_ms(void)
{
	struct timespec ts = { 0, 0 };

	sys(SYS_clock_gettime, CLOCK_BOOTTIME, (long)&ts, 0, 0, 0);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static NO_SANITIZE bool group_alive(pid_t pgid)
{
	long r = sys(SYS_kill, -pgid, 0, 0, 0, 0);

	return r == 0 || r == -EPERM;
}

static NO_SANITIZE void pause_ms(int64_t ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	sys(SYS_clock_nanosleep, CLOCK_BOOTTIME, 0, (long)&ts, 0, 0);
}

static NO_SANITIZE __attribute__((noreturn)) void leave(void)
{
	for (;;)
		sys(SYS_exit, 0, 0, 0, 0, 0);
}

static NO_SANITIZE __attribute__((noreturn)) void stop_job(struct watch_page *pg)
{
	pid_t pgid = atomic_load(&pg->pgid);
	int64_t kill_at_ms = now_ms() + pg->kill_after_ms;

	if (pgid <= 0 || atomic_load(&pg->done))
		leave();
	if (atomic_exchange(&pg->fired, 1) == 0) {
		sys(SYS_kill, -pgid, pg->on_lost_signal, 0, 0, 0);
		/* a stopped job must be able to act on it */
		sys(SYS_kill, -pgid, SIGCONT, 0, 0, 0);
	}
	/* Polled: the group's members are not our children. Leaving as soon
	 * as the group is gone keeps a later group of the same number safe. */
	while (group_alive(pgid) && !atomic_load(&pg->done)) {
		if (now_ms() >= kill_at_ms) {
			sys(SYS_kill, -pgid, SIGKILL, 0, 0, 0);
			break;
		}
		pause_ms(GROUP_POLL_MS);
	}
	leave();
}

static NO_SANITIZE void arm(int tfd, int64_t at_ms)
{
	struct itimerspec its = {
		.it_value = { at_ms / 1000, (at_ms % 1000) * 1000000 },
	};

	sys(SYS_timerfd_settime, tfd, TFD_TIMER_ABSTIME, (long)&its, 0, 0);
}

static NO_SANITIZE int watch(void *arg)
{
	struct watch_page *pg = arg;
	int fd = pg->fd;
	uint64_t all = ~(uint64_t)0;
	struct pollfd pfd[2] = { { fd, POLLIN, 0 }, { -1, POLLIN, 0 } };

	sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof all, 0);
	/* Out of dlock's process group and session: a kill -9 of dlock's
	 * group (a CI runner cancelling a step) must not take us with it. */
	sys(SYS_setsid, 0, 0, 0, 0, 0);
	sys(SYS_prctl, PR_SET_NAME, (long)"dlock watchdog", 0, 0, 0);
	/* We hold copies of every descriptor dlock had: the pipe's write end
	 * would hide dlock's death, its stdout a reader's EOF. */
	for (long i = 0; i < 3; i++)
		if (i != fd)
			sys(SYS_close, i, 0, 0, 0, 0);
	if (fd > 3)
		sys(SYS_close_range, 3, fd - 1, 0, 0, 0);
	sys(SYS_close_range, fd + 1, ~0U, 0, 0, 0);
	pfd[1].fd = (int)sys(SYS_timerfd_create, CLOCK_BOOTTIME, TFD_CLOEXEC, 0, 0, 0);
	for (;;) {
		int64_t deadline_ms = atomic_load(&pg->deadline_ms);
		int64_t left_ms = deadline_ms - now_ms();
		struct timespec ts = { left_ms / 1000, (left_ms % 1000) * 1000000 };

		if (left_ms <= 0)
			stop_job(pg);
		if (pfd[1].fd >= 0)
			arm(pfd[1].fd, deadline_ms);
		/* Without a timer, ppoll()'s timeout (which misses suspend). */
		if (sys(SYS_ppoll, (long)pfd, 2, pfd[1].fd >= 0 ? 0 : (long)&ts, 0,
			0) > 0 && pfd[0].revents)
			stop_job(pg);	/* EOF: dlock is gone, or done */
	}
	return 0;
}

static int start_process(struct watchdog *wd)
{
	/* 32 KiB: a few frames of system calls. The watchdog is started
	 * again only once the one before has been reaped. */
	static char stack[32 * 1024] __attribute__((aligned(16)));

	if (SHARE_VM && !RUNNING_ON_VALGRIND) {
		wd->pid = clone(watch, stack + sizeof stack, CLONE_VM | SIGCHLD,
				wd->page);
		if (wd->pid >= 0)
			return 0;
	}
	wd->pid = fork();
	if (wd->pid == 0)
		_exit(watch(wd->page));
	return wd->pid < 0 ? -1 : 0;
}

static int start(struct watchdog *wd, struct error *err)
{
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) < 0) {
		error_set(err, EX_OSERR, "watchdog: pipe: %s", strerror(errno));
		return -1;
	}
	wd->page->fd = fds[0];
	if (start_process(wd) < 0) {
		error_set(err, EX_OSERR, "watchdog: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	close(fds[0]);
	wd->fd = fds[1];
	return 0;
}

int watchdog_start(struct watchdog *wd, int on_lost_signal,
		   int64_t kill_after_ms, int64_t deadline_ms, struct error *err)
{
	struct watch_page *pg = mmap(NULL, sizeof *pg, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	*wd = (struct watchdog){ .fd = -1 };
	if (pg == MAP_FAILED) {
		error_set(err, EX_OSERR, "watchdog: mmap: %s", strerror(errno));
		return -1;
	}
	pg->deadline_ms = deadline_ms;
	pg->on_lost_signal = on_lost_signal;
	pg->kill_after_ms = kill_after_ms;
	wd->page = pg;
	if (start(wd, err) < 0) {
		munmap(pg, sizeof *pg);
		wd->page = NULL;
		return -1;
	}
	return 0;
}

void watchdog_job(struct watchdog *wd, pid_t pgid)
{
	atomic_store(&wd->page->pgid, pgid);
}

void watchdog_deadline(struct watchdog *wd, int64_t deadline_ms)
{
	atomic_store(&wd->page->deadline_ms, deadline_ms);
}

bool watchdog_claim(struct watchdog *wd)
{
	return atomic_exchange(&wd->page->fired, 1) == 0;
}

int watchdog_restart(struct watchdog *wd, struct error *err)
{
	/* One that acted has done its part; dlock sees to the rest. */
	if (atomic_load(&wd->page->fired))
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
	if (wd->fd >= 0)
		close(wd->fd);
	/* Not unmapped: the watchdog may still be reading it. The page goes
	 * with the last of us to exit. */
	*wd = (struct watchdog){ .fd = -1 };
}
