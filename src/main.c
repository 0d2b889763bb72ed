/* main.c - dlock: flock(1) for distributed hosts.
 *
 * Parse, resolve settings and the command, take the lock, run the command
 * while the lease is renewed, release. Errors travel up to here, where what
 * was taken is given back, one line is printed and the exit code chosen. */
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
#include "caps.h"
#include "child.h"
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "keeper.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "multi.h"
#include "notify.h"
#include "observe.h"
#include "signals.h"
#include "supervise.h"
#include "wait.h"
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

/* The lock layer's view of the command line and the settings. */
static void lock_params_of(const struct options *opts, const struct settings *st,
			   const char *command, struct lock_params *p)
{
	_Static_assert(LIMIT_SHARED == LOCK_SHARED, "one value for -s");
	*p = (struct lock_params){
		.name = opts->key,
		.prefix = st->prefix,
		.engine = st->engine,
		.servers = st->servers,
		.n_servers = st->n_servers,
		.server_texts = st->server_texts,
		.password = st->password,
		.tls = &st->tls_opts,
		.ttl_ms = st->ttl_ms,
		.node_timeout_ms = st->node_timeout_ms,
		.limit = opts->limit,
		.fair = opts->fair,
		.waits = !opts->nonblock,
		.wait_replicas = opts->wait_replicas,
		.command = command,
		.history = st->history,
		.min_hold_ms = st->min_hold_ms,
		.no_fence = opts->no_fence,
		.verbose = opts->verbose,
	};
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

/* A lease the minimum hold could not fit in: the lease is never
 * lengthened at the end. Before anything is contacted. */
static int min_hold_fits(const struct settings *st)
{
	if (st->min_hold_ms <= st->ttl_ms)
		return 0;
	log_event(LOG_ERROR, NULL, "usage", NULL, 0, "--min-hold %.15g is longer than the lease (--ttl %.15g): give --ttl %.15g or more",
		(double)st->min_hold_ms / 1000, (double)st->ttl_ms / 1000,
		(double)st->min_hold_ms / 1000);
	return -1;
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
	    child_check_size(&r->job, keys_len, &err) == 0)
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
	struct lock_params base;
	struct error err = { 0 };
	struct lock *failed;
	int signo = 0;
	size_t n = 0;

	while (opts->keys[n])
		n++;
	command_line(opts, r->command, sizeof r->command);
	lock_params_of(opts, r->st, r->command, &base);
	if (multi_init(&r->m, &base, opts->keys, n, &err) < 0) {
		log_error(r->m.locks ? multi_failed_name(&r->m) : opts->key, &err);
		return err.exit;
	}
	/* After the locks' set-up: a server named twice is one line (64). */
	config_report(&opts->cfg, r->st);	/* --verbose: the servers' source */
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

static int run(struct options *opts, const struct settings *st,
	       const struct signals *sig, int *die_by)
{
	struct run r = { .opts = opts, .st = st, .sig = sig, .die_by = die_by,
			 .got = LOCK_FAILED, .outcome = RUN_FAILED };
	int status;

	if (min_hold_fits(st) < 0 || unavailable_fits(opts, st) < 0)
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

/* dlock [options] FD: a keeper holds the lock for our caller. A config
 * file's "unavailable = run" means fail here: there is no command to run
 * without the lock, and the caller must not go on as if it had it. */
static int run_fd_form(struct options *opts, struct settings *st,
		       const struct signals *sig)
{
	struct lock_params params;

	if (min_hold_fits(st) < 0)
		return EX_USAGE;
	lock_params_of(opts, st, "", &params);
	return keeper_lock(opts, st, &params, sig);
}

/* status, history, release, acquire, extend */
static int run_command(const struct options *opts, const struct settings *st,
		       const struct signals *sig)
{
	static int (*const mains[])(const struct lock_params *,
				    const struct command_args *) = {
		[CMD_STATUS] = status_main,
		[CMD_HISTORY] = history_main,
		[CMD_RELEASE] = release_main,
		[CMD_ACQUIRE] = acquire_main,
		[CMD_EXTEND] = extend_main,
	};
	struct command_args a = {
		.keys = opts->keys,
		.json = opts->json,
		.quiet = opts->quiet,
		.count = opts->count,
		.token = opts->token,
		.force = opts->force,
		.export_vars = opts->export_vars,
		.wait_ms = opts->nonblock ? 0 : opts->wait_ms,
		.conflict_exit = opts->conflict_exit,
		.history = st->history,
		.watch = opts->watch,
		.sig = sig,
	};
	struct lock_params base;

	while (opts->keys[a.n_keys])
		a.n_keys++;
	lock_params_of(opts, st, opts->cmd == CMD_ACQUIRE ? "(dlock acquire)" : "",
		       &base);
	return mains[opts->cmd](&base, &a);
}

/* What the engine cannot honour is a usage error, before anything is
 * contacted: "ZooKeeper cannot -F: ...". One line, 64. */
static int refuse_unsupported(const struct options *opts,
			      const struct settings *st)
{
	const struct { bool asked; unsigned cap; const char *option; } wants[] = {
		{ opts->limit == LIMIT_SHARED, CAP_SHARED, "-s (shared locks)" },
		{ opts->limit > 0, CAP_LIMIT, "--limit" },
		{ opts->fair, CAP_FAIR, "--fair" },
		{ opts->wait_replicas > 0, CAP_WAIT_REPLICAS, "--wait-replicas" },
		{ opts->cmd == CMD_RUN && opts->no_fork, CAP_NO_FORK, "-F" },
		{ opts->cmd == CMD_RUN && st->unavailable_run, CAP_UNAVAILABLE_RUN,
		  "--unavailable run" },
		{ opts->cmd == CMD_ACQUIRE, CAP_STEPS, "dlock acquire" },
		{ opts->cmd == CMD_EXTEND, CAP_STEPS, "dlock extend" },
		{ opts->cmd == CMD_RELEASE && !opts->force, CAP_STEPS,
		  "dlock release --token" },
		{ opts->cmd == CMD_RELEASE && opts->force, CAP_FORCE,
		  "dlock release --force" },
		{ opts->cmd == CMD_HISTORY, CAP_HISTORY, "dlock history" },
		{ opts->cmd == CMD_STATUS && !opts->keys[0], CAP_LIST,
		  "dlock status without KEY" },
	};
	const struct engine *e = st->engine;

	if (st->ttl_ms < e->settings.min_ttl_ms) {
		log_line(NULL, "%s cannot keep a --ttl below %.3g s (its timeouts count in whole seconds)",
			 e->settings.name, (double)e->settings.min_ttl_ms / 1000);
		return -1;
	}
	for (size_t i = 0; i < sizeof wants / sizeof wants[0]; i++) {
		const char *why;

		if (!wants[i].asked || caps_has(e, wants[i].cap))
			continue;
		why = caps_why(e, wants[i].cap);
		log_event(LOG_ERROR, NULL, "usage", NULL, 0, "%s cannot %s%s%s",
			  e->settings.name, wants[i].option,
			  why ? ": " : "", why ? why : "");
		return -1;
	}
	return 0;
}

/* Closed standard descriptors would be taken by the first socket, and a
 * line meant for stderr would go to a server. /dev/null takes their place,
 * opened the other way round, so that a read or write still fails as on
 * the closed descriptor: a token printed to a closed stdout (dlock acquire
 * K >&-) must not pass for printed, and the lock be kept for nobody. */
static void open_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", fd == STDIN_FILENO ? O_WRONLY : O_RDONLY) != fd)
			_exit(EX_OSERR);
}

/* --export's output is for eval: a dlock that failed printed no
 * variables, and eval "$(dlock --export -n 9)" of nothing would go on to
 * the work without the lock. So a failure prints "exit N" for the eval
 * (flock's `dlock -n 9 || exit 1`), whatever ended dlock: a usage error
 * in cli.c (errx), a lock held, a server down. Only in the process that
 * armed it: a forked child's exit() runs on_exit handlers too. */
static pid_t export_guard_pid;

static void export_guard(int status, void *arg)
{
	if (status != 0 && export_guard_pid == getpid())
		printf("exit %d\n", status);
}

static void arm_export_guard(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--export") == 0) {
			export_guard_pid = getpid();
			on_exit(export_guard, NULL);
			return;
		}
}

int main(int argc, char **argv)
{
	struct options opts;
	struct settings st;
	struct signals sig;
	struct error err;
	char why[1024];
	int status, die_by = 0;

	if (argc == 1 && strcmp(argv[0], "dlock watchdog") == 0)
		return watchdog_main();
	open_std_fds();
	arm_export_guard(argc, argv);
	cli_parse(argc, argv, &opts);
	if (!opts.export_vars)	/* "--export" was the command's own word */
		export_guard_pid = 0;
	/* Until the settings are known, the format the command line or
	 * DLOCK_LOG_FORMAT named (cli.c): a broken config file's is not. */
	if (config_resolve(&opts.cfg, &st, why, sizeof why) < 0) {
		log_event(LOG_ERROR, NULL, "usage", NULL, 0, "%s", why);
		config_free(&st);
		cli_free(&opts);
		return EX_USAGE;
	}
	log_set_format(st.log_format);
	if (opts.notify && opts.cmd == CMD_RUN &&
	    notify_init(opts.notify_pass, opts.key, st.ttl_ms, st.node_timeout_ms,
			&err) < 0) {
		log_error(opts.key, &err);
		config_free(&st);
		cli_free(&opts);
		return err.exit;
	}
	/* What the engine loads (OpenSSL only for rediss://: loading it is
	 * not a plain run's cost), on this thread, before any other. */
	if (st.engine->settings.init && st.engine->settings.init(&st, &err) < 0) {
		log_error(opts.key, &err);
		config_free(&st);
		cli_free(&opts);
		return err.exit;
	}
	if (signals_init(&sig) < 0) {
		log_line(opts.key, "signal set-up: %s", strerror(errno));
		config_free(&st);
		cli_free(&opts);
		return EX_OSERR;
	}
	if (refuse_unsupported(&opts, &st) < 0)
		status = EX_USAGE;
	else if (opts.cmd == CMD_RUN && opts.unlock)
		status = keeper_unlock(&opts, &st);
	else if (opts.cmd == CMD_RUN && opts.fd_form)
		status = run_fd_form(&opts, &st, &sig);
	else if (opts.cmd == CMD_RUN)
		status = run(&opts, &st, &sig, &die_by);
	else
		status = run_command(&opts, &st, &sig);
	close(sig.fd);
	notify_end();
	if (st.engine->settings.end)
		st.engine->settings.end();
	config_free(&st);
	cli_free(&opts);
	if (die_by) {
		/* dies by the signal: no on_exit handler runs */
		export_guard(128 + die_by, NULL);
		fflush(stdout);
		signals_die(die_by);
	}
	return status;
}
