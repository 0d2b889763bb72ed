/* supervise.c - watches over the job until it is over.
 *
 * The job is the command's process group, as flock's lock lasts while any
 * process holding the inherited descriptor lives, and whatever of it moved
 * to another group of its session (jobtree.c): the lock is released only
 * once all of them are gone (kill(-pgid, 0) says ESRCH, and the walk finds
 * nobody outside). dlock is the job's subreaper, so an orphan of the job
 * comes back to be reaped and its exit wakes us; a member that is not our
 * child (its parent left the group) is looked for every GROUP_POLL_MS.
 * Signals sent to dlock go to the group, as a terminal's would; what dlock
 * sends on its own (lease lost, --max-hold, --kill-after) to every process
 * of the job. Every deadline (renewal, lease, --max-hold, --kill-after) is
 * on one timer on CLOCK_BOOTTIME, which counts suspend. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "clock.h"
#include "config.h"
#include "jobtree.h"
#include "supervise.h"

#define GROUP_POLL_MS 250

struct supervisor {
	struct job *job;
	const struct watch *w;
	int timer_fd;		/* -1: poll()'s timeout instead */
	int64_t armed_ms;	/* what timer_fd is set to */
	bool command_done;	/* the command itself has exited */
	int signaled;		/* the signal that killed it, or 0 */
	bool look_at_group;	/* something may have left the group */
	int status;		/* the command's exit status */
	bool lost;
	int exit;		/* dlock's status once the lease is lost */
	int64_t kill_at_ms;	/* SIGKILL the group then; -1: not armed */
	int64_t max_hold_at_ms;	/* -1: no --max-hold */
	int64_t group_poll_at_ms;	/* look at the group then; -1: no need */
};

/* The job's tree, as jobtree.c walks it: from our children but the
 * watchdog and those we inherited. skip holds them. */
static struct jobtree tree_of(const struct supervisor *sv, pid_t *skip,
			      size_t n_skip)
{
	const struct job *job = sv->job;
	size_t n = 0;

	for (size_t i = 0; i < job->n_inherited && n + 1 < n_skip; i++)
		skip[n++] = job->inherited[i];
	if (sv->w->wd && sv->w->wd->pid > 0)
		skip[n++] = sv->w->wd->pid;
	return (struct jobtree){
		.pgid = job->pid, .sid = getsid(0), .parent = getpid(),
		.skip = skip, .n_skip = n, .leader_reaped = sv->command_done,
	};
}

/* What dlock sends on its own: to every process of the job. */
static void signal_job(const struct supervisor *sv, int sig)
{
	pid_t skip[66];
	struct jobtree jt;

	/* -F: a process that is not our child; its pidfd names it even
	 * once its number is free again. */
	if (sv->job->pidfd >= 0) {
		syscall(SYS_pidfd_send_signal, sv->job->pidfd, sig, NULL, 0);
		return;
	}
	jt = tree_of(sv, skip, sizeof skip / sizeof *skip);
	jobtree_signal(&jt, sig);
}

/* A signal sent to dlock: to the job's process group, as a terminal's
 * goes to its foreground group; a process that left the group for one of
 * its own (a nested dlock's command, a shell's job) is its parent's to
 * tell, and would get it twice. */
static void signal_group(const struct supervisor *sv, int sig)
{
	/* the group's number and leader are all jobtree_group_ours() reads */
	const struct jobtree jt = {
		.pgid = sv->job->pid, .leader_reaped = sv->command_done,
	};

	if (sv->job->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, sv->job->pidfd, sig, NULL, 0);
	else if (jobtree_group_ours(&jt))
		kill(-sv->job->pid, sig);
}

/* Whether we have no child whose exit signal is SIGCHLD: none but a
 * watchdog in our memory (SIGNAL_WATCHDOG_EXIT). Every process of the
 * job outside its group would be one, or below one: we are the job's
 * subreaper, and the kernel gives an orphan it hands on SIGCHLD. */
static bool no_other_child(void)
{
	siginfo_t si;

	return waitid(P_ALL, 0, &si, WEXITED | WSTOPPED | WCONTINUED | WNOHANG |
		      WNOWAIT) < 0 && errno == ECHILD;
}

static bool group_gone(const struct supervisor *sv)
{
	pid_t skip[66], one;
	struct jobtree jt;

	if (sv->job->pidfd >= 0)
		return true;
	jt = tree_of(sv, skip, sizeof skip / sizeof *skip);
	/* a group of the command's number that a stranger leads is not
	 * the job's, however long it lives */
	if ((kill(-sv->job->pid, 0) == 0 || errno != ESRCH) &&
	    jobtree_group_ours(&jt))
		return false;
	/* nothing to walk from: no reading of /proc (20 us of a short job) */
	if (no_other_child())
		return true;
	return jobtree_outside(&jt, &one, 1) == 0;
}

/* The lease is gone, or about to be. end_ms: when it runs out, for a
 * lease that was not renewed in time (or no more, --max-hold); -1 when
 * the servers said it is no longer ours. */
static void lose_lease(struct supervisor *sv, const char *why, int exit,
		       int64_t end_ms)
{
	const struct watch *w = sv->w;
	int64_t kill_at_ms = clock_now_ms() + w->kill_after_ms;
	bool send;

	if (sv->lost)
		return;
	sv->lost = true;
	sv->exit = exit;
	/* Once: the watchdog may have sent it already, while we were stopped;
	 * the line says who stops the job, once. */
	send = w->on_lost_signal && (!w->wd || watchdog_claim(w->wd));
	log_line(w->key, "lease lost: %s%s", why, send ? "; stopping the job" :
		 w->on_lost_signal ? "; its watchdog stopped the job" : "");
	if (w->lease)
		lease_halt(w->lease);
	if (!w->on_lost_signal)
		return;
	if (send) {
		signal_job(sv, w->on_lost_signal);
		signal_job(sv, SIGCONT);	/* a stopped job must act on it */
	}
	/* A job deaf to the signal must not outlive a lease that is still
	 * ours: --kill-after, but no later than the lease's last moment. */
	sv->kill_at_ms = end_ms >= 0 && end_ms < kill_at_ms ? end_ms : kill_at_ms;
}

/* The last moment to kill a job that would outlive the lease: half the
 * notice before its end, so that a late wake-up still kills in time. */
static int64_t lease_end(const struct supervisor *sv)
{
	const struct lease *ls = sv->w->lease;

	return ls ? lease_end_ms(ls) - ls->notice_ms / 2 : -1;
}

/* Continued after the job stopped: not without the lock. */
static void resume(struct supervisor *sv)
{
	struct job *job = sv->job;
	const struct lease *ls = sv->w->lease;

	if (ls && !sv->lost && clock_now_ms() >= lease_deadline_ms(ls)) {
		lose_lease(sv, "stopped for longer than the lease allows",
			   EX_TEMPFAIL, lease_end(sv));
		/* --on-lost ignore: it runs on without the lock, as asked */
		if (!sv->w->on_lost_signal)
			signal_job(sv, SIGCONT);
		return;
	}
	job->tty_handed = job->tty_fd >= 0 && tcgetpgrp(job->tty_fd) == getpgrp();
	if (job->tty_handed)
		tcsetpgrp(job->tty_fd, job->pid);
	signal_job(sv, SIGCONT);
}

/* Whether a shell could continue us after we stop: our process group is
 * not orphaned, as far as our parent tells (it is in our session, in
 * another group: a shell with job control). An orphaned group would stay
 * stopped for ever. */
static bool shell_above(void)
{
	pid_t parent = getppid();

	return getsid(parent) == getsid(0) && getpgid(parent) != getpgrp();
}

/* A process of the job stopped. Ctrl-Z at the terminal it was handed, or
 * a read of the terminal while dlock is in the background: stop with it,
 * as a shell job would, so that the shell shows the job stopped and `fg`
 * continues it. Stopped by anyone else (SIGSTOP), or with no shell to
 * continue us: say so, as it keeps the lock meanwhile. */
static void follow_stop(struct supervisor *sv, pid_t pid, int sig)
{
	struct job *job = sv->job;
	const char *key = sv->w->key;
	bool wants_tty = sig == SIGTTIN || sig == SIGTTOU;
	char who[64] = "the command";

	if (pid != job->pid)
		snprintf(who, sizeof who, "process %d of the job", (int)pid);
	if (job->tty_fd < 0 || sig == SIGSTOP || !shell_above() ||
	    (!job->tty_handed && !wants_tty)) {
		log_line(key, "%s was stopped (SIG%s) and keeps the lock until it is continued",
			 who, sigabbrev_np(sig));
		return;
	}
	if (!job->tty_handed)
		log_line(key, "%s was stopped (SIG%s): it wants the terminal; dlock stops too, 'fg' gives it the terminal",
			 who, sigabbrev_np(sig));
	if (tcgetpgrp(job->tty_fd) == job->pid)
		tcsetpgrp(job->tty_fd, getpgrp());
	/* SIGSTOP, not the command's signal: a terminal stop signal is
	 * discarded in an orphaned process group, and we would go on at once. */
	kill(getpid(), SIGSTOP);
	resume(sv);
}

static int exit_status(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

static void forget_inherited(struct job *job, pid_t pid)
{
	for (size_t i = 0; i < job->n_inherited; i++)
		if (job->inherited[i] == pid)
			job->inherited[i] = job->inherited[--job->n_inherited];
}

/* SIGCHLDs coalesce: reap whatever there is. Besides the command, that is
 * an orphan of the job, a child dlock inherited across exec, or the
 * watchdog, which is started again while the job runs. */
static void reap(struct supervisor *sv)
{
	struct job *job = sv->job;
	struct watchdog *wd = sv->w->wd;
	int st;
	pid_t pid;

	/* __WALL: the watchdog too (SIGNAL_WATCHDOG_EXIT) */
	while ((pid = waitpid(-1, &st, WNOHANG | WUNTRACED | __WALL)) > 0) {
		if (wd && pid == wd->pid && WIFSTOPPED(st)) {
			kill(pid, SIGCONT);
		} else if (wd && pid == wd->pid) {
			struct error err = { 0 };

			if (watchdog_restart(wd, &err) < 0)
				log_error(sv->w->key, &err);
		} else if (WIFSTOPPED(st) &&
			   (pid == job->pid || getpgid(pid) == job->pid)) {
			follow_stop(sv, pid, WSTOPSIG(st));
		} else if (pid == job->pid) {
			if (wd)
				watchdog_command_reaped(wd);
			sv->command_done = true;
			sv->status = exit_status(st);
			sv->signaled = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
		} else if (!WIFSTOPPED(st)) {
			forget_inherited(job, pid);	/* its number is free now */
		}
	}
	sv->look_at_group = true;
}

static void on_signals(struct supervisor *sv)
{
	int sig;

	while ((sig = signals_next(sv->w->sig)) > 0) {
		if (sig == SIGCHLD)
			reap(sv);
		else
			signal_group(sv, sig);
	}
}

static void on_lease(struct supervisor *sv)
{
	struct lease *ls = sv->w->lease;
	struct error err = { 0 };

	if (lease_collect(ls, clock_now_ms(), &err) < 0)
		lose_lease(sv, err.msg, EX_TEMPFAIL, -1);
	else if (sv->w->wd && !ls->halted)
		watchdog_deadline(sv->w->wd, lease_deadline_ms(ls), lease_end(sv));
}

static void on_deadlines(struct supervisor *sv)
{
	struct lease *ls = sv->w->lease;
	int64_t now_ms = clock_now_ms();
	struct error err = { 0 };

	if (ls && lease_tick(ls, now_ms, &err) < 0)
		lose_lease(sv, err.msg, err.exit, lease_end(sv));
	if (sv->max_hold_at_ms >= 0 && now_ms >= sv->max_hold_at_ms) {
		sv->max_hold_at_ms = -1;
		lose_lease(sv, "held longer than --max-hold: the job is treated as hung",
			   EX_TEMPFAIL, lease_end(sv));
	}
	if (sv->kill_at_ms >= 0 && now_ms >= sv->kill_at_ms) {
		/* What remains, command or not; again while anything does
		 * (a process forked as the first SIGKILL went out). */
		sv->kill_at_ms = now_ms + GROUP_POLL_MS;
		signal_job(sv, SIGKILL);
	}
	if (sv->group_poll_at_ms >= 0 && now_ms >= sv->group_poll_at_ms) {
		sv->group_poll_at_ms = -1;
		sv->look_at_group = true;
	}
}

static bool group_over(struct supervisor *sv)
{
	if (sv->w->close)
		return true;
	if (!sv->look_at_group)
		return false;
	sv->look_at_group = false;
	if (group_gone(sv))
		return true;
	sv->group_poll_at_ms = clock_now_ms() + GROUP_POLL_MS;
	return false;
}

static bool job_over(struct supervisor *sv)
{
	if (!sv->command_done || !group_over(sv))
		return false;
	/* The watchdog stopped the job while we were stalled. */
	if (sv->w->wd && watchdog_fired(sv->w->wd) && !sv->lost)
		lose_lease(sv, "dlock was stalled past the lease", EX_TEMPFAIL, -1);
	return true;
}

static int64_t next_deadline(const struct supervisor *sv)
{
	const int64_t at[] = {
		sv->w->lease ? lease_next_ms(sv->w->lease) : -1,
		sv->max_hold_at_ms, sv->kill_at_ms, sv->group_poll_at_ms,
	};
	int64_t first = -1;

	for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
		if (at[i] >= 0 && (first < 0 || at[i] < first))
			first = at[i];
	return first;
}

/* poll()'s timeout: -1 when the timer holds the next deadline. */
static int arm(struct supervisor *sv)
{
	int64_t next_ms = next_deadline(sv);

	if (sv->timer_fd >= 0 && next_ms != sv->armed_ms) {
		if (clock_arm(sv->timer_fd, next_ms) == 0) {
			sv->armed_ms = next_ms;
		} else {
			close(sv->timer_fd);
			sv->timer_fd = -1;
		}
	}
	if (sv->timer_fd >= 0 || next_ms < 0)
		return -1;
	return clock_poll_ms(next_ms - clock_now_ms());
}

int supervise(struct job *job, const struct watch *w)
{
	struct supervisor sv = {
		.job = job,
		.w = w,
		.timer_fd = clock_timer(),
		.armed_ms = -1,
		.exit = EX_TEMPFAIL,
		.kill_at_ms = -1,
		.max_hold_at_ms = w->max_hold_ms >= 0 ?
				  clock_now_ms() + w->max_hold_ms : -1,
		.group_poll_at_ms = -1,
	};
	bool poll_failed = false;

	for (;;) {
		/* what the engines watch: see lease.c */
		struct pollfd pfd[4 + MAX_LEASE_FDS];
		size_t n_watch;
		int timeout;

		on_signals(&sv);	/* a job that ended in time is not lost */
		on_deadlines(&sv);
		if (job_over(&sv))
			break;
		timeout = arm(&sv);
		pfd[0] = (struct pollfd){ w->sig->fd, POLLIN, 0 };
		pfd[1] = (struct pollfd){ w->lease && w->lease->busy ?
					  w->lease->notify_fd : -1, POLLIN, 0 };
		pfd[2] = (struct pollfd){ sv.timer_fd, POLLIN, 0 };
		pfd[3] = (struct pollfd){ job->pidfd, POLLIN, 0 };
		n_watch = w->lease ? lease_watch_fds(w->lease, pfd + 4) : 0;
		if (poll(pfd, 4 + n_watch, timeout) < 0) {
			/* Never a reason to release a running job: try again,
			 * keeping the deadlines (on_deadlines() runs first). */
			struct timespec pause = { 0, 10 * 1000000 };

			if (errno != EINTR && !poll_failed)
				log_line(w->key, "poll: %s", strerror(errno));
			poll_failed = true;
			nanosleep(&pause, NULL);
			continue;
		}
		if (pfd[1].revents & POLLIN)
			on_lease(&sv);
		if (pfd[2].revents & POLLIN)
			sv.armed_ms = -1;	/* fired: set it again */
		if (pfd[3].revents & POLLIN)	/* -F: the command ended */
			sv.command_done = sv.look_at_group = true;
		if (n_watch)
			lease_watch_events(w->lease, pfd + 4, n_watch);
	}
	if (job->tty_fd >= 0 && tcgetpgrp(job->tty_fd) == job->pid)
		tcsetpgrp(job->tty_fd, getpgrp());
	if (sv.timer_fd >= 0)
		close(sv.timer_fd);
	job->term_signal = sv.lost ? 0 : sv.signaled;
	job->lost = sv.lost;
	return sv.lost ? sv.exit : sv.status;
}
