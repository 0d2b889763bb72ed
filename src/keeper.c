/* keeper.c - flock's descriptor form: ( dlock -n 9 || exit 1; work ) 9>f
 *
 * flock locks the open file and returns: the lock lasts while the
 * descriptor is open. A keyed lock has a lease to renew, and the shell
 * that called dlock cannot do it, so dlock leaves a keeper process behind:
 * it renews the lease until the process that called dlock (our parent, the
 * subshell) exits, or until dlock -u FD asks it to release. If the lease
 * is lost, the caller's process group gets the --on-lost signal and
 * SIGKILL after --kill-after, as a job's would; a watchdog does the same
 * if the keeper itself is killed. The caller is never left running on
 * without the lock unless it asked (dlock -u).
 *
 * dlock --export FD prints the lock's DLOCK_* variables once the keeper
 * holds it, for the caller to eval; the caller is then the process that
 * reads them (caller.c).
 *
 * The keeper listens on a socket of its caller's and the lock's
 * (keepsock.c): dlock -u FD looks for it from its own caller up through
 * that one's ancestors (flock -u from a nested subshell unlocks too), and
 * a second dlock FD of the same caller finds its lock held already, as
 * flock's second flock(2) on the same descriptor does. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "caller.h"
#include "clock.h"
#include "commands.h"
#include "fdhold.h"
#include "keeper.h"
#include "keepsock.h"
#include "lease.h"
#include "log.h"
#include "wait.h"
#include "waitline.h"
#include "watchdog.h"

void keeper_keep_only(const struct lock *lk, size_t n_locks, const int *extra,
		      size_t n_extra)
{
	/* at most LOCK_FDS_MAX descriptors a lock (engine.h) */
	int room[LOCK_FDS_MAX + 8], *keep = room, n = 0, devnull;
	size_t n_fds = n_locks * LOCK_FDS_MAX + n_extra + 1;

	/* -k: a socket of each lock's servers (we are alone here: no thread) */
	if (n_fds > sizeof room / sizeof *room && !(keep = calloc(n_fds, sizeof *keep)))
		_exit(EX_OSERR);
	for (size_t l = 0; l < n_locks; l++)
		n += (int)lk[l].eng->lock.fds(&lk[l], keep + n, LOCK_FDS_MAX);
	for (size_t i = 0; i < n_extra; i++)
		keep[n++] = extra[i];
	keep[n++] = STDERR_FILENO;
	for (int i = 1; i < n; i++)		/* insertion sort: a handful */
		for (int k = i; k > 0 && keep[k] < keep[k - 1]; k--) {
			int t = keep[k];

			keep[k] = keep[k - 1];
			keep[k - 1] = t;
		}
	/* Unsigned: past the last kept one, to the top, where to + 1 wraps
	 * (an int's INT_MAX + 1 overflowed: UBSan stopped the helper). */
	for (unsigned i = 0, from = 0; i <= (unsigned)n; i++) {
		unsigned to = i < (unsigned)n ? (unsigned)keep[i] : ~0U;

		if (to > from)
			close_range(from, to - 1, 0);
		from = to + 1;
	}
	if (keep != room)
		free(keep);
	devnull = open("/dev/null", O_RDWR);	/* on 0 and 1 */
	if (devnull == STDIN_FILENO)
		dup2(devnull, STDOUT_FILENO);
}

int keeper_unlock(const struct options *opts, const struct settings *st)
{
	char answer;

	for (pid_t p = getppid(), depth = 0; p > 1 && depth < 64;
	     p = caller_parent_of(p), depth++) {
		ssize_t r = keepsock_ask(p, st, opts->key, 'U', &answer, 1);

		if (r == 0)
			continue;
		if (r < 0) {
			log_line(opts->key, "-u: the keeper of process %d did not answer within %d s",
				 (int)p, KEEPSOCK_ANSWER_MS / 1000);
			return EX_UNAVAILABLE;
		}
		return 0;	/* the keeper said anything a release failed */
	}
	if (opts->verbose)
		log_line(opts->key, "-u: not locked by this process or one above it");
	return 0;
}

/* The mode as the keeper tells it: 'x', 's' or 'l' (--limit). */
static char mode_of(const struct options *opts)
{
	return opts->limit == 0 ? 'x' : opts->limit == LIMIT_SHARED ? 's' : 'l';
}

#define RESCAN_MS 500	/* holders after the caller: looked for again at
			 * least this often, and whenever one of them exits */

/* After the caller died: the processes that still have its descriptor
 * (fdhold.c), for which the keeper keeps the lock, as flock's lasts. */
struct orphans {
	struct fdhold hold;
	bool looking;		/* the caller is gone: hold.fd is set */
	bool rescan;		/* now: one of them exited */
	int64_t rescan_at_ms;	/* -1: not looking */
	size_t n;		/* found at the last look (more than watched) */
	size_t n_watched;
	int pidfd[FDHOLD_MAX];	/* the first of them, pinned */
};

struct keeper {
	const struct options *opts;
	struct lock *lk;
	const struct signals *sig;
	struct lease lease;
	struct watchdog wd;
	pid_t caller, pgid;
	int pidfd, listen_fd, answer_fd;
	bool lost, caller_gone;
	int64_t kill_at_ms, max_hold_at_ms;
	int64_t start_us;	/* when dlock FD began: --verbose's "took" */
	struct orphans orph;
};

/* Those that hold the lock after the caller, wherever they are. */
static void signal_orphans(const struct keeper *k, int sig)
{
	for (size_t i = 0; i < k->orph.n_watched; i++)
		syscall(SYS_pidfd_send_signal, k->orph.pidfd[i], sig, NULL, 0);
}

static void signal_caller(const struct keeper *k, int sig)
{
	kill(-k->pgid, sig);
	/* and the caller itself, should it have left its group */
	syscall(SYS_pidfd_send_signal, k->pidfd, sig, NULL, 0);
	signal_orphans(k, sig);
}

static int64_t lease_last_ms(const struct lease *ls)
{
	return lease_end_ms(ls) - ls->notice_ms / 2;
}

/* As supervise.c's lose_lease(): the caller's group is the job. */
static void lose(struct keeper *k, const char *why, int64_t end_ms)
{
	int64_t kill_at_ms = clock_now_ms() + k->opts->kill_after_ms;

	if (k->lost)
		return;
	k->lost = true;
	log_line(k->opts->key, "lease lost: %s; stopping process group %d",
		 why, (int)k->pgid);
	lease_halt(&k->lease);
	if (watchdog_claim(&k->wd)) {
		signal_caller(k, k->opts->on_lost_signal);
		signal_caller(k, SIGCONT);
	}
	k->kill_at_ms = end_ms >= 0 && end_ms < kill_at_ms ? end_ms : kill_at_ms;
}

/* A connection on the socket: 'Q' is answered at once, 'U' once the lock
 * is released (answer_fd). */
static void on_ask(struct keeper *k)
{
	char what;
	int s = keepsock_accept(k->listen_fd, &what);

	if (s < 0)
		return;
	if (k->answer_fd >= 0) {
		close(s);
		return;
	}
	if (what == 'Q') {
		keepsock_answer_held(s, mode_of(k->opts), k->lk);
		close(s);
		return;
	}
	k->answer_fd = s;
}

static void on_signals(struct keeper *k)
{
	int sig;

	while ((sig = signals_next(k->sig)) > 0) {
		if (sig == SIGCHLD) {
			int st;
			pid_t pid;

			/* __WALL: the watchdog (SIGNAL_WATCHDOG_EXIT) */
			while ((pid = waitpid(-1, &st, WNOHANG | WUNTRACED | __WALL)) > 0) {
				struct error err = { 0 };

				if (pid != k->wd.pid)
					continue;
				if (WIFSTOPPED(st))
					kill(pid, SIGCONT);
				else if (watchdog_restart(&k->wd, &err) < 0)
					log_error(k->opts->key, &err);
			}
		} else {
			/* Told to stop, the keeper cannot leave the caller
			 * running without the lock: it is stopped first. */
			char why[64];

			snprintf(why, sizeof why, "dlock's keeper got SIG%s",
				 sigabbrev_np(sig));
			lose(k, why, lease_last_ms(&k->lease));
		}
	}
}

static void on_deadlines(struct keeper *k)
{
	int64_t now_ms = clock_now_ms();
	struct error err = { 0 };

	if (lease_tick(&k->lease, now_ms, &err) < 0)
		lose(k, err.msg, lease_last_ms(&k->lease));
	if (k->max_hold_at_ms >= 0 && now_ms >= k->max_hold_at_ms) {
		k->max_hold_at_ms = -1;
		lose(k, "held longer than --max-hold: the job is treated as hung",
		     lease_last_ms(&k->lease));
	}
	if (k->kill_at_ms >= 0 && now_ms >= k->kill_at_ms) {
		k->kill_at_ms = -1;
		if (k->lost)
			signal_caller(k, SIGKILL);
		else	/* stop_orphans(): theirs alone */
			signal_orphans(k, SIGKILL);
	}
}

/* Pins the holders found (pids[0..n-1]) by pidfds, in place of the last
 * ones: their exits are what the keeper waits for. */
static void watch_orphans(struct orphans *o, const pid_t *pids, size_t n)
{
	for (size_t i = 0; i < o->n_watched; i++)
		close(o->pidfd[i]);
	o->n_watched = 0;
	for (size_t i = 0; i < n; i++) {
		int fd = (int)syscall(SYS_pidfd_open, pids[i], 0);

		if (fd >= 0)
			o->pidfd[o->n_watched++] = fd;
		else if (errno == ESRCH)
			o->rescan = true;	/* gone already: look again */
	}
}

/* Without kcmp the keeper cannot tell the caller's descriptor from the
 * same file opened anew: what it found is stopped as a job whose lease
 * is lost (not the rest of the group: the script above goes on), and the
 * lock kept until it is gone. */
static void stop_orphans(struct keeper *k, pid_t first, bool say)
{
	if (say)
		log_line(k->opts->key, "dlock %d: its caller (process %d) is gone and kcmp(2) is refused; process %d%s of its group has the file open: stopped (SIG%s) before the lock is released",
			 k->opts->fd, (int)k->caller, (int)first,
			 k->orph.n > 1 ? " and others" : "",
			 sigabbrev_np(k->opts->on_lost_signal));
	signal_orphans(k, k->opts->on_lost_signal);
	signal_orphans(k, SIGCONT);
	if (k->kill_at_ms < 0)
		k->kill_at_ms = clock_now_ms() + k->opts->kill_after_ms;
}

/* The caller is gone: whether a process still has its descriptor, and
 * the lock is kept for it (as flock's is, by the open file). Looked for
 * when the caller exits, then again when one found exits, or at least
 * every RESCAN_MS. */
static bool orphans_hold(struct keeper *k)
{
	struct orphans *o = &k->orph;
	bool first = !o->looking;
	pid_t pids[FDHOLD_MAX];

	if (first) {
		if (fdhold_init(&o->hold, k->opts->fd) < 0)
			return false;
		o->looking = true;
	} else if (!o->rescan && clock_now_ms() < o->rescan_at_ms) {
		return true;
	}
	o->rescan = false;
	o->hold.watchdog = k->wd.pid;
	o->n = fdhold_scan(&o->hold, pids, FDHOLD_MAX);
	watch_orphans(o, pids, o->n < FDHOLD_MAX ? o->n : FDHOLD_MAX);
	if (o->n == 0)
		return false;
	o->rescan_at_ms = clock_now_ms() + RESCAN_MS;
	if (o->hold.by_file)	/* again at each look: more than watched */
		stop_orphans(k, pids[0], first);
	else if (first && k->opts->verbose)
		log_line(k->opts->key, "dlock %d: its caller (process %d) is gone; process %d%s still has the descriptor: the lock is kept until it closes it",
			 k->opts->fd, (int)k->caller, (int)pids[0],
			 o->n > 1 ? " and others" : "");
	return true;
}

static int poll_timeout(const struct keeper *k)
{
	const int64_t at[] = {
		lease_next_ms(&k->lease), k->max_hold_at_ms, k->kill_at_ms,
		k->orph.looking ? k->orph.rescan_at_ms : -1,
	};
	int64_t first = -1;

	for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
		if (at[i] >= 0 && (first < 0 || at[i] < first))
			first = at[i];
	return first < 0 ? -1 : clock_poll_ms(first - clock_now_ms());
}

/* Until the caller exits and no process has its descriptor any more, or
 * -u asks. */
static void keep(struct keeper *k)
{
	for (;;) {
		struct pollfd pfd[4 + FDHOLD_MAX + MAX_LEASE_FDS];
		size_t n_orph, n_watch;

		on_signals(k);
		on_deadlines(k);
		if (k->answer_fd >= 0 || (k->caller_gone && !orphans_hold(k)))
			return;
		n_orph = k->orph.n_watched;
		if (k->orph.rescan)
			continue;
		pfd[0] = (struct pollfd){ k->sig->fd, POLLIN, 0 };
		pfd[1] = (struct pollfd){ k->lease.busy ? k->lease.notify_fd : -1,
					  POLLIN, 0 };
		pfd[2] = (struct pollfd){ k->caller_gone ? -1 : k->pidfd, POLLIN, 0 };
		pfd[3] = (struct pollfd){ k->listen_fd, POLLIN, 0 };
		for (size_t i = 0; i < n_orph; i++)
			pfd[4 + i] = (struct pollfd){ k->orph.pidfd[i], POLLIN, 0 };
		n_watch = lease_watch_fds(&k->lease, pfd + 4 + n_orph);
		if (poll(pfd, 4 + n_orph + n_watch, poll_timeout(k)) < 0) {
			struct timespec pause = { 0, 10 * 1000000 };

			nanosleep(&pause, NULL);	/* EINTR: again */
			continue;
		}
		if (pfd[1].revents & POLLIN) {
			struct error err = { 0 };

			if (lease_collect(&k->lease, clock_now_ms(), &err) < 0)
				lose(k, err.msg, -1);
			else if (!k->lease.halted)
				watchdog_deadline(&k->wd, lease_deadline_ms(&k->lease),
						  lease_last_ms(&k->lease));
		}
		if (pfd[2].revents & POLLIN)
			k->caller_gone = true;
		if (pfd[3].revents & POLLIN)
			on_ask(k);
		for (size_t i = 0; i < n_orph; i++)
			if (pfd[4 + i].revents & POLLIN)
				k->orph.rescan = true;
		if (n_watch)
			lease_watch_events(&k->lease, pfd + 4 + n_orph, n_watch);
	}
}

/* The keeper process: never returns. ready: where to say it holds the
 * lock (one byte: 0, or dlock's exit status when it could not start). */
static void __attribute__((noreturn)) keeper(struct keeper *k, int ready)
{
	struct error err = { 0 };
	const struct options *opts = k->opts;
	/* opts->fd: the caller's descriptor, ours to compare (fdhold.c) */
	int keep_fds[] = { k->pidfd, k->sig->fd, k->listen_fd, ready, k->opts->fd };
	unsigned char status = 0;
	int r, hold[WATCHDOG_MAX_HOLD];
	size_t n_hold;

	setsid();	/* the caller's signals are its own */
	prctl(PR_SET_NAME, KEEPER_COMM);
	(void)!chdir("/");	/* hold no mount busy */
	keeper_keep_only(k->lk, 1, keep_fds, sizeof keep_fds / sizeof keep_fds[0]);
	lease_init(&k->lease, k->lk);
	n_hold = lock_held_fds(k->lk, 1, hold, WATCHDOG_MAX_HOLD);
	if (watchdog_start(&k->wd, opts->on_lost_signal, opts->kill_after_ms,
			   lease_deadline_ms(&k->lease), lease_last_ms(&k->lease),
			   hold, n_hold, &err) < 0) {
		log_error(opts->key, &err);
		status = (unsigned char)err.exit;
		k->wd.fd = -1;
	} else {
		watchdog_job(&k->wd, k->pgid);
		if (lock_check_left(k->lk, &err) < 0) {
			log_error(opts->key, &err);
			status = (unsigned char)err.exit;
		}
	}
	(void)!write(ready, &status, 1);
	close(ready);
	if (status == 0) {
		fdhold_note_above(&k->orph.hold);	/* dlock is gone: off its path */
		keep(k);
	}
	watchdog_end(&k->wd);
	lease_free(&k->lease);	/* joins the thread: lk is ours again */
	r = lock_release_job(k->lk, status ? EX_OSERR : k->lost ? EX_TEMPFAIL :
			     LOCK_EXIT_UNKNOWN, !k->lost && !status, &err);
	if (r < 0)
		log_line(opts->key, "release failed: %s; the lock lapses within %.3g s",
			 err.msg, (double)lock_lapse_ms(k->lk) / 1000);
	if (k->answer_fd >= 0)
		keepsock_answer_done(k->answer_fd, r >= 0);
	_exit(status ? status : k->lost ? EX_TEMPFAIL : 0);
}

/* --verbose: flock's line on stdout; not with --export, whose stdout is
 * for eval. */
static void say_took(const struct options *opts, int64_t start_us)
{
	if (opts->verbose && !opts->export_vars)
		log_flock_took(start_us);
}

/* k->caller, pinned by a pidfd before it could be another's pid, and its
 * process group. 0, or dlock's exit status. */
static int pin_caller(struct keeper *k)
{
	const struct options *opts = k->opts;

	/* The holders are found in /proc (fdhold.c): one of another PID
	 * namespace names other processes, and the lock would go while
	 * the caller's orphans still have the file. */
	if (!caller_proc_is_ours()) {
		log_line(opts->key, "dlock %d: /proc is not this PID namespace's (unshare -p without --mount-proc?): who has the file cannot be told",
			 opts->fd);
		return EX_USAGE;
	}
	k->caller = caller_find(opts->export_vars);
	if (k->caller == 0) {
		log_line(opts->key, "dlock --export %d: no process above dlock reads its output: eval \"$(dlock --export %d)\" in the shell that does the work",
			 opts->fd, opts->fd);
		return EX_USAGE;
	}
	k->pidfd = k->caller > 1 ? (int)syscall(SYS_pidfd_open, k->caller, 0) : -1;
	k->pgid = k->caller > 1 ? getpgid(k->caller) : -1;
	if (k->pidfd < 0 && k->caller > 1) {	/* before Linux 5.3, valgrind */
		log_line(opts->key, "dlock %d: pidfd_open: %s", opts->fd, strerror(errno));
		return EX_OSERR;
	}
	if (k->caller <= 1 || k->pgid <= 1 || !caller_is_ancestor(k->caller)) {
		log_line(opts->key, "dlock %d: no calling process to hold the lock for (%s)",
			 opts->fd, k->caller <= 1 || getppid() <= 1 ? "its parent is init" :
			 k->pgid <= 1 ? "it is in init's process group" : "it exited");
		if (k->pidfd >= 0)
			close(k->pidfd);
		return EX_USAGE;
	}
	/* for the holders after it (fdhold.c): two reads of /proc now, the
	 * rest once it exits */
	fdhold_pin(&k->orph.hold, k->caller, k->pgid);
	return 0;
}

/* dlock FD again by the same caller (flock(2) again on the same
 * descriptor): 0 where it holds the lock in that mode; -1 where no keeper
 * of the caller's holds it. */
static int held_already(const struct keeper *k, const struct settings *st)
{
	const struct options *opts = k->opts;
	struct keepsock_held h;

	if (keepsock_query(k->caller, st, opts->key, &h) < 0)
		return -1;
	if (h.mode != mode_of(opts)) {
		log_line(opts->key, "process %d holds this lock %s already: dlock -u %d first",
			 (int)k->caller, h.mode == 's' ? "shared" : h.mode == 'x' ?
			 "exclusive" : "with --limit", opts->fd);
		return EX_USAGE;
	}
	if (!opts->export_vars)
		return 0;
	/* --export: what dlock --export FD would have printed */
	if (!h.fence) {
		log_line(opts->key, "dlock --export %d: the keeper that holds the lock does not tell its token (another dlock version's): dlock -u %d first",
			 opts->fd, opts->fd);
		return EX_SOFTWARE;
	}
	return steps_export(h.key, h.token, h.fence, false) < 0 ? EX_IOERR : 0;
}

/* Takes the lock: LOCK_ACQUIRED, else dlock's exit status in *status. */
static enum lock_result take(struct keeper *k, struct lock *lk, int *status)
{
	const struct options *opts = k->opts;
	struct error err = { 0 };
	enum lock_result got;
	int signo = 0;

	got = wait_acquire(lk, opts->nonblock ? 0 : opts->wait_ms, k->sig, &signo, &err);
	switch (got) {
	case LOCK_ACQUIRED:
		break;
	case LOCK_REENTERED:
		/* A job that holds it runs us: its lock outlives our caller. */
		*status = opts->export_vars &&
			  steps_export(lk->key, lk->token, lk->fence, true) < 0 ?
			  EX_IOERR : 0;
		break;
	case LOCK_HELD:
		if (opts->verbose) {
			char who[320];

			waitline_describe(lk->held_by, who, sizeof who);
			log_line(opts->key, "lock is %s", who);
		}
		*status = opts->conflict_exit;
		break;
	case LOCK_INTERRUPTED:
		*status = 128 + signo;
		break;
	case LOCK_FAILED:
		if (opts->verbose)
			lock_log_servers(lk);
		log_error(opts->key, &err);
		*status = err.exit;
		break;
	}
	return got;
}

/* The lock is ours: the keeper takes it over. Returns dlock's exit status
 * when it could not start (the lock ours to give back); else ends dlock,
 * with what the keeper said and, for --export, the variables printed. */
static int hand_over(struct keeper *k, struct lock *lk, const struct settings *st)
{
	const struct options *opts = k->opts;
	struct error err = { 0 };
	int ready[2] = { -1, -1 };
	char answer;
	pid_t pid;

	k->listen_fd = keepsock_listen(k->caller, st, opts->key, opts->fd, &err);
	if (k->listen_fd < 0 || pipe2(ready, O_CLOEXEC) < 0) {
		if (k->listen_fd >= 0) {
			error_set(&err, EX_OSERR, "pipe: %s", strerror(errno));
			close(k->listen_fd);
		}
		log_error(opts->key, &err);
		return err.exit;
	}
	if (opts->max_hold_ms >= 0)
		k->max_hold_at_ms = clock_now_ms() + opts->max_hold_ms;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		keeper(k, ready[1]);
	}
	close(ready[1]);
	close(k->listen_fd);
	if (pid < 0) {
		log_line(opts->key, "fork: %s", strerror(errno));
		close(ready[0]);
		return EX_OSERR;
	}
	/* The keeper has the lock now (and its connections): not a word more
	 * to the servers from here, whatever it says. */
	if (read(ready[0], &answer, 1) != 1) {
		log_line(opts->key, "dlock's keeper process died; the lock lapses within %.3g s",
			 (double)lock_lapse_ms(lk) / 1000);
		_exit(EX_OSERR);
	}
	if (answer != 0)
		_exit((unsigned char)answer);
	/* Nobody would learn the token: the keeper gives the lock back. */
	if (opts->export_vars && steps_export(lk->key, lk->token, lk->fence, false) < 0) {
		log_line(opts->key, "cannot write the variables: %s; lock given back",
			 strerror(errno ? errno : EIO));
		keepsock_ask(k->caller, st, opts->key, 'U', &answer, 1);
		_exit(EX_IOERR);
	}
	say_took(opts, k->start_us);
	_exit(0);
}

int keeper_lock(const struct options *opts, const struct settings *st,
		struct lock_params *params, const struct signals *sig)
{
	struct keeper k = { .opts = opts, .sig = sig, .answer_fd = -1,
			    .kill_at_ms = -1, .max_hold_at_ms = -1,
			    .wd = { .fd = -1 }, .start_us = log_now_us() };
	struct lock lk;
	struct error err = { 0 };
	enum lock_result got;
	char command[256];
	int status, signo;

	if ((status = pin_caller(&k)) != 0)
		return status;
	if ((status = held_already(&k, st)) >= 0) {
		if (status == 0)
			say_took(opts, k.start_us);
		close(k.pidfd);
		return status;
	}
	caller_command(k.caller, opts->fd, command, sizeof command);
	params->command = command;
	params->holder_pid = (int)k.caller;
	k.lk = &lk;
	if (lock_init(&lk, params, &err) < 0) {
		log_error(opts->key, &err);
		status = err.exit;
		goto out;
	}
	config_report(&opts->cfg, st);
	got = take(&k, &lk, &status);
	if (got == LOCK_REENTERED && status == 0)
		say_took(opts, k.start_us);
	if (got != LOCK_ACQUIRED)
		goto out;
	if ((signo = signals_interrupt(sig)) != 0)
		status = 128 + signo;
	else
		status = hand_over(&k, &lk, st);	/* only if it failed */
	if (lock_release(&lk, &err) < 0)
		log_line(opts->key, "release failed: %s; the lock lapses within %.3g s",
			 err.msg, (double)lock_lapse_ms(&lk) / 1000);
out:
	lock_free(&lk);
	close(k.pidfd);
	return status;
}
