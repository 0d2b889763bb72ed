/* run.c - the job's forms (dlock [options] KEY COMMAND, -k KEY...):
 * take the locks, all or none; run COMMAND under their lease, watched,
 * or in our place (-F: a helper keeps the lease; re-entered: the outer
 * job's dlock does); give them back, telling a lease lost. With
 * --unavailable run and no server reachable, COMMAND runs without them. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "child.h"
#include "keeper.h"
#include "lease.h"
#include "log.h"
#include "multi.h"
#include "observe.h"
#include "run.h"
#include "signals.h"
#include "supervise.h"
#include "waitline.h"
#include "watchdog.h"

static void report_conflict(const struct options *opts, const struct lock *lk)
{
	char who[320];

	if (!opts->verbose)
		return;
	waitline_describe(lk->held_by, who, sizeof who);
	log_event(LOG_INFO, lk->p->name, "conflict", NULL, 0, "lock is %s", who);
}

/* A release that did not reach a majority leaves the lock to lapse: say so
 * always, as other hosts may wait on it; one that missed a minority only
 * with --verbose. One that found the lock no longer ours (deleted, lapsed,
 * taken over between two renewals) is a lease lost while the job ran,
 * which the job's own status must not hide: 75, unless it was said
 * already or no job ran (quiet). Returns the exit status. */
static int report_release(const struct options *opts, const struct lock *lk,
			  int r, const struct error *err, int status, bool quiet)
{
	const char *name = lk->p->name;

	if (r == LOCK_RELEASE_LOST) {
		if (quiet)
			return status;
		log_line(name, "lease lost: %s", err->msg);
		return EX_TEMPFAIL;
	}
	if (r < 0)
		log_line(name, "release failed: %s; the lock lapses within %.3g s",
			 err->msg, (double)lock_lapse_ms(lk) / 1000);
	else if (r > 0 && opts->verbose)
		log_error(name, err);
	return status;
}

/* The command as one line, for the holder info: what `dlock status` and
 * a waiter's line show. */
static void command_line(const struct options *opts, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	if (opts->shell_cmd)
		snprintf(out, len, "%s", opts->shell_cmd);
	for (char **a = opts->argv; a && *a && n + 1 < len; a++)
		n += (size_t)snprintf(out + n, len - n, "%s%s",
				      a == opts->argv ? "" : " ", *a);
}

static struct watch watch_of(const struct options *opts,
			     const struct signals *sig, struct lease *lease)
{
	return (struct watch){
		.key = opts->key,
		.on_lost_signal = opts->on_lost_signal,
		.kill_after_ms = opts->kill_after_ms,
		.max_hold_ms = opts->max_hold_ms,
		.close = opts->close,
		.sig = sig,
		.lease = lease,
	};
}

/* The job under the lease of lk[0..n_locks-1] (several with -k): the
 * watchdog first (unless --on-lost ignore), so that no instant of the job
 * goes unwatched, then the command. */
static int run_job(struct options *opts, const struct settings *st,
		   struct lock *lk, size_t n_locks, struct job *job,
		   const struct signals *sig, struct observe *ob)
{
	struct lease lease;
	struct watchdog wd = { .fd = -1 };
	struct watch w = watch_of(opts, sig, &lease);
	struct error err = { 0 };
	int status, left = 0;

	lease_init_locks(&lease, lk, n_locks);
	if (lease_reserve(&lease, &err) < 0) {
		log_error(opts->key, &err);
		lease_free(&lease);
		return err.exit;
	}
	observe_lease(ob, &lease);
	child_find_inherited(job);	/* before the watchdog, our child */
	if (opts->on_lost_signal != ON_LOST_IGNORE) {
		int hold[WATCHDOG_MAX_HOLD];
		size_t n_hold = lock_held_fds(lk, n_locks, hold, WATCHDOG_MAX_HOLD);

		if (watchdog_start(&wd, opts->on_lost_signal, opts->kill_after_ms,
				   lease_deadline_ms(&lease),
				   lease_end_ms(&lease) - lease.notice_ms / 2,
				   hold, n_hold, &err) < 0) {
			log_error(opts->key, &err);
			lease_free(&lease);
			return err.exit;
		}
		watchdog_skip(&wd, job->inherited, job->n_inherited);
		job->death_signal = opts->on_lost_signal;
		watchdog_record(&wd, opts->key, lk, n_locks,
				st->tls ? &st->tls_opts : NULL);
		job->wd = w.wd = &wd;
	}
	/* Once more, right before the command starts: a stall since the last
	 * round (a VM paused, dlock stopped) must not start it unprotected. */
	for (size_t i = 0; i < n_locks && left == 0; i++)
		left = lock_check_left(&lk[i], &err);
	if (left < 0 || child_start(job, &err) < 0) {
		log_error(opts->key, &err);
		status = err.exit;
	} else {
		observe_started(ob);
		status = supervise(job, &w);
	}
	watchdog_end(&wd);
	lease_free(&lease);	/* joins the thread: lk is ours again */
	return status;
}

/* -F: the command takes dlock's place and PID (as flock -F); a helper
 * process, forked first, keeps the lease of lk[0..n_locks-1] (several
 * with -k): it watches that PID through a pidfd opened before the fork
 * (so that the number cannot be another process's by then), signals it if
 * the lease is lost, and releases once it has exited. The job is that
 * process alone, not its process group, which is the caller's. */
static int run_no_fork(struct options *opts, struct lock *lk, size_t n_locks,
		       struct job *job, const struct signals *sig,
		       struct observe *ob)
{
	struct error err = { 0 };
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	pid_t helper;

	if (pidfd < 0 || (helper = fork()) < 0) {
		log_line(opts->key, "-F: %s: %s", pidfd < 0 ? "pidfd_open" : "fork",
			 strerror(errno));
		if (pidfd >= 0)
			close(pidfd);
		return EX_OSERR;
	}
	if (helper == 0) {
		struct lease lease;
		struct watch w = watch_of(opts, sig, &lease);
		int status, r, keep[] = { pidfd, sig->fd };

		setsid();	/* not in the caller's job: its signals are its own */
		prctl(PR_SET_NAME, "dlock-lease");
		keeper_keep_only(lk, n_locks, keep, 2);
		job->pid = getppid();
		job->pidfd = pidfd;
		lease_init_locks(&lease, lk, n_locks);
		observe_lease(ob, &lease);
		status = supervise(job, &w);
		lease_free(&lease);
		observe_stopping(ob, job->lost);
		/* the command is not our child: its status is not ours to know */
		for (size_t i = 0, lost = job->lost; i < n_locks; i++) {
			r = lock_release_job(&lk[i], status == EX_TEMPFAIL ? status :
					     LOCK_EXIT_UNKNOWN, !job->lost, &err);
			status = report_release(opts, &lk[i], r, &err, status, lost);
			lost |= r == LOCK_RELEASE_LOST;
		}
		observe_end(ob, job->lost ? RUN_LOST : RUN_ACQUIRED,
			    job->lost ? status : -1);
		_exit(status);
	}
	close(pidfd);
	child_exec(job, getpgrp(), &err);
	log_error(opts->key, &err);
	return err.exit;	/* the helper sees us exit, and releases */
}

static const char *outer_var(const char *name, const char *otherwise)
{
	const char *value = getenv(name);

	return value && *value ? value : otherwise;
}

/* --verbose: flock's line before the command starts; with -c, the shell,
 * as flock names it. */
static void say_executing(const struct options *opts, const struct job *job)
{
	if (opts->verbose)
		log_flock("executing %s", job->argv[0]);
}

/* A command that is not found and looks like one of dlock's options
 * (dlock nightly -n echo hi): flock's reading stands, it was the command,
 * but the line says where options go. */
static void misplaced_option(const struct options *opts, struct error *err)
{
	if (err->exit == 127 && opts->argv && cli_is_option(opts->argv[0]))
		error_set(err, 127, "%s: command not found (options go before KEY: dlock [options] KEY COMMAND)",
			  opts->argv[0]);
}

/* DLOCK_TOKEN. With -o the lock is the command's alone, as flock -o
 * closes the descriptor before the command runs: it gets an empty token,
 * so that a nested dlock (one the command leaves in the background, above
 * all) takes the lock for itself instead of re-entering a lock released
 * when the command exits. */
static const char *job_token(const struct options *opts, enum lock_result got,
			     const char *token)
{
	return opts->close && got != LOCK_REENTERED ? "" : token;
}

/* --unavailable run applies to an outage only: not when a server said
 * the lock is held, nor when a TLS handshake failed (a certificate to fix
 * is no outage, and every host would run at once); --fair is refused
 * (unavailable_fits()). */
static bool only_unreachable(const struct lock *lk)
{
	return !lk->refused && !lk->misconfigured;
}

/* --unavailable run: no server, or no majority, could be reached in the
 * tries the wait allows, and none said the lock is held. The command runs
 * as a job, but with no lease to renew or lose: no watchdog, no
 * --max-hold. DLOCK_TOKEN is empty, DLOCK_FENCE unset: no fence to hand
 * on, and no lock to re-enter, extend or release. */
static int run_unlocked(const struct options *opts, const struct lock *lk,
			struct job *job, const struct signals *sig,
			const struct error *why, int *die_by, struct observe *ob)
{
	struct watch w = watch_of(opts, sig, NULL);
	struct error err = { 0 };
	int status, signo;

	log_line(opts->key, "lock service unavailable (%s); running without the lock",
		 why->msg);
	if ((signo = signals_interrupt(sig)) != 0)
		return 128 + signo;
	if (child_set_env(job, lk->key, NULL, "", NULL, false, NULL, &err) < 0) {
		log_error(opts->key, &err);
		return err.exit;
	}
	if (opts->no_fork) {
		observe_end(ob, RUN_UNAVAILABLE, -1);	/* the command's to know */
		child_exec(job, getpgrp(), &err);
		log_error(opts->key, &err);
		return err.exit;
	}
	w.max_hold_ms = -1;
	child_find_inherited(job);
	if (child_start(job, &err) < 0) {
		log_error(opts->key, &err);
		return err.exit;
	}
	status = supervise(job, &w);
	if (job->term_signal && signals_from_terminal(job->term_signal, job->tty_handed))
		*die_by = job->term_signal;
	return status;
}

/* --unavailable run runs the command only once every server asked could
 * not be reached and none said the lock is held. With -k, the keys after
 * the one that failed were never asked (on a Cluster they live on other
 * masters, which may hold them); with --fair, the ticket round fails
 * before any server is asked for the lock. Neither can tell, so neither
 * runs unlocked: refused, rather than fail where run was asked. */
static int unavailable_fits(const struct options *opts, const struct settings *st)
{
	if (!st->unavailable_run || (!opts->multi && !opts->fair))
		return 0;
	fprintf(stderr, "dlock: --unavailable run%s does not apply to %s: %s; give --unavailable fail\n",
		opts->cfg.unavailable == UNAVAILABLE_RUN ? "" : " (config file)",
		opts->multi ? "-k" : "--fair",
		opts->multi ? "keys after an unreachable one are never asked whether they are held" :
		"the queue's ticket fails before any server is asked whether the lock is held");
	return -1;
}

/* One run of the first forms, for the steps below: the locks (one, or
 * several with -k: one lock is a multi-lock of one), the job, what is
 * observed of it. */
struct run {
	struct options *opts;
	const struct settings *st;
	const struct lock_params *base;	/* main()'s, for every key */
	const struct signals *sig;
	int *die_by;		/* the signal dlock ends by, as the job did */
	struct multi m;
	struct job job;
	struct observe ob;
	enum lock_result got;
	enum run_outcome outcome;
	bool handed_over;	/* the command took our place (re-entered, -F):
				 * nothing to release, nothing to observe */
	int64_t start_us;
	char command[256];	/* the holder info's (lock_params.command) */
};

/* The command, before anything is contacted: one that cannot be run never
 * takes the lock. 0, or dlock's exit status with the line said. */
static int prepare_job(struct run *r)
{
	struct options *opts = r->opts;
	struct error err = { 0 };
	size_t keys_len = 0, n = 0;

	for (; opts->keys[n]; n++)	/* DLOCK_KEYS: the keys and a blank each */
		keys_len += (n ? 1 : 0) + strlen(r->st->prefix) + strlen(opts->keys[n]);
	if (child_prepare(&r->job, opts->argv, opts->shell_cmd, r->sig, &err) == 0 &&
	    child_check_size(&r->job, keys_len, keys_len, 0, 0, &err) == 0)
		return 0;
	/* dlock -k A -k B C cmd: C was meant as a KEY */
	if (opts->multi && err.exit == 127 && opts->argv && !cli_is_option(opts->argv[0]))
		error_set(&err, 127, "%s: command not found (with -k, every lock is a -k: what follows the options is the command)",
			  opts->argv[0]);
	misplaced_option(opts, &err);
	log_error(opts->key, &err);
	return err.exit;
}

/* Takes the locks: -1 once they are ours (acquired, or re-entered), else
 * dlock's exit status, r->outcome saying why. */
static int take_locks(struct run *r)
{
	struct options *opts = r->opts;
	struct lock_params base = *r->base;
	struct error err = { 0 };
	struct lock *failed;
	int signo = 0;
	size_t n = 0;

	while (opts->keys[n])
		n++;
	command_line(opts, r->command, sizeof r->command);
	base.command = r->command;
	if (multi_init(&r->m, &base, opts->keys, n, &err) < 0) {
		log_error(r->m.locks ? multi_failed_name(&r->m) : opts->key, &err);
		return err.exit;
	}
	/* After the locks' set-up: a server named twice is one line (64). */
	config_report(&opts->cfg, r->st);	/* --verbose: the servers' source */
	/* Again with the engine's own keys (a ZooKeeper znode path) and
	 * variables (etcd's ETCD_LOCK_*), still before any server is asked:
	 * a command that cannot start never takes the lock. */
	if (child_check_size(&r->job, strlen(r->m.first_key), strlen(r->m.keys),
			     n == 1 ? r->m.locks[0].env_max : 0,
			     n == 1 && r->m.locks[0].env_max ? LOCK_ENV_MAX : 0, &err) < 0) {
		log_error(opts->key, &err);
		return err.exit;
	}
	r->start_us = log_now_us();
	r->got = multi_acquire(&r->m, opts->nonblock ? 0 : opts->wait_ms, r->sig,
			       &signo, &err);
	failed = &r->m.locks[r->m.failed];
	switch (r->got) {
	case LOCK_ACQUIRED:
		observe_acquired(&r->ob, r->m.fence);
		return -1;
	case LOCK_REENTERED:
		return -1;
	case LOCK_HELD:
		report_conflict(opts, failed);
		r->outcome = RUN_CONFLICT;
		return opts->conflict_exit;
	case LOCK_INTERRUPTED:
		r->outcome = RUN_INTERRUPTED;
		if (signals_from_terminal(signo, false))
			*r->die_by = signo;
		return 128 + signo;
	case LOCK_FAILED:
		break;
	}
	if (opts->verbose)
		lock_log_servers(failed);
	if (err.exit == EX_UNAVAILABLE)
		r->outcome = RUN_UNAVAILABLE;
	if (r->st->unavailable_run && err.exit == EX_UNAVAILABLE &&
	    only_unreachable(failed))
		return run_unlocked(opts, failed, &r->job, r->sig, &err, r->die_by,
				    &r->ob);
	log_error(failed->p->name, &err);
	return err.exit;
}

/* The locks are ours: the command runs under them, or takes our place
 * (re-entered: the outer dlock keeps the lease; -F: a helper keeps it).
 * Returns its exit status, or dlock's. */
static int start_job(struct run *r)
{
	struct options *opts = r->opts;
	struct multi *m = &r->m;
	bool in = r->got == LOCK_REENTERED;
	struct error err = { 0 };
	int signo, status;

	/* A signal that came while we acquired: the command must not start. */
	if ((signo = signals_interrupt(r->sig)) != 0) {
		r->outcome = RUN_INTERRUPTED;
		return 128 + signo;
	}
	/* Re-entered: the same DLOCK_* values as the outer command's. One
	 * lock: its engine's variables too (etcd's ETCD_LOCK_KEY...). */
	if (child_set_env(&r->job, in ? outer_var("DLOCK_KEY", m->first_key) : m->first_key,
			  in ? outer_var("DLOCK_KEYS", m->keys) : m->keys,
			  job_token(opts, r->got, m->token), m->fence[0] ? m->fence : NULL,
			  in, m->n == 1 ? m->locks[0].env : NULL, &err) < 0) {
		log_error(opts->key, &err);
		return err.exit;
	}
	if (opts->verbose)
		log_flock_took(r->start_us);
	say_executing(opts, &r->job);
	if (in) {	/* in the outer job's process group, in our place */
		r->handed_over = true;
		multi_free(m);
		child_exec_reentered(&r->job, &err);
		log_error(opts->key, &err);
		return err.exit;
	}
	if (opts->no_fork) {
		r->handed_over = true;
		return run_no_fork(opts, m->locks, m->n, &r->job, r->sig, &r->ob);
	}
	status = run_job(opts, r->st, m->locks, m->n, &r->job, r->sig, &r->ob);
	r->outcome = r->job.lost ? RUN_LOST : r->job.ran ? RUN_ACQUIRED : RUN_FAILED;
	if (r->job.term_signal && signals_from_terminal(r->job.term_signal, r->job.tty_handed))
		*r->die_by = r->job.term_signal;
	return status;
}

/* Every lock given back once the job is over (or never started); a lease
 * lost that the job was not told of is 75. Returns the exit status. */
static int release_locks(struct run *r, int status)
{
	struct error err = { 0 };
	bool lost = r->job.lost || !r->job.ran;	/* told already, or nothing ran */

	if (r->got != LOCK_ACQUIRED)
		return status;
	observe_stopping(&r->ob, r->job.lost);
	for (size_t i = 0; i < r->m.n; i++) {
		struct lock *lk = &r->m.locks[i];
		int rel = lock_release_job(lk, status, r->job.ran && !r->job.lost, &err);

		status = report_release(r->opts, lk, rel, &err, status, lost);
		lost |= rel == LOCK_RELEASE_LOST;
	}
	return status;
}

int run_main(struct options *opts, const struct settings *st,
	     const struct lock_params *base, const struct signals *sig,
	     int *die_by)
{
	struct run r = { .opts = opts, .st = st, .base = base, .sig = sig,
			 .die_by = die_by, .got = LOCK_FAILED,
			 .outcome = RUN_FAILED };
	int status;

	if (unavailable_fits(opts, st) < 0)
		return EX_USAGE;
	observe_init(&r.ob, opts, st, opts->keys);
	if ((status = prepare_job(&r)) != 0) {
		child_free(&r.job);
		observe_end(&r.ob, RUN_FAILED, status);
		return status;
	}
	/* --fd N: the descriptor is the lock's, not the command's (flock -o
	 * closes it there); without -o the command has it, as under flock. */
	if (opts->fd >= 0 && opts->close)
		fcntl(opts->fd, F_SETFD, FD_CLOEXEC);
	if ((status = take_locks(&r)) < 0) {
		status = start_job(&r);
		if (r.handed_over) {	/* exec failed; -F's helper releases */
			multi_free(&r.m);
			child_free(&r.job);
			return status;
		}
		status = release_locks(&r, status);
	}
	observe_end(&r.ob, r.outcome, status);
	multi_free(&r.m);
	child_free(&r.job);
	return status;
}
