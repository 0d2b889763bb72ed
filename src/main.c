/* main.c - dlock: flock(1) for distributed hosts.
 *
 * Parse, resolve settings and the command, take the lock, run the command
 * while the lease is renewed, release. Errors travel up to here, where what
 * was taken is given back, one line is printed and the exit code chosen. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include "child.h"
#include "cli.h"
#include "config.h"
#include "lease.h"
#include "lock.h"
#include "log.h"
#include "wait.h"
#include "waitline.h"

/* Blocked from the start, so the renewal thread inherits the mask and
 * the supervisor alone takes them, through a signalfd. */
static int block_signals(sigset_t *orig_mask)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGCHLD);
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	/* SIGTTOU: handing the terminal to the command must not stop us. */
	sigaddset(&set, SIGTTOU);
	if (fd < 0 || sigprocmask(SIG_BLOCK, &set, orig_mask) < 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return fd;
}

/* A signal that came while we acquired: the command must not start. */
static int pending_signal(int sigfd)
{
	struct signalfd_siginfo si;

	if (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
		return (int)si.ssi_signo;
	return 0;
}

static int run(struct options *opts, struct settings *st, int sigfd,
	       const sigset_t *orig_mask)
{
	struct lock lk;
	struct job job;
	struct lease lease;
	struct error err = { 0 };
	struct watch w = { .opts = opts, .sigfd = sigfd };
	enum lock_result got;
	int status, signo = 0;
	bool have_lease = false;

	if (child_prepare(&job, opts, orig_mask, &err) < 0) {
		log_error(opts->key, &err);
		child_free(&job);
		return err.exit;
	}
	if (lock_init(&lk, opts, st, &err) < 0) {
		log_error(opts->key, &err);
		status = err.exit;
		goto out;
	}
	got = wait_acquire(&lk, sigfd, &signo, &err);
	switch (got) {
	case LOCK_ACQUIRED:
	case LOCK_REENTERED:
		break;
	case LOCK_HELD:
		if (opts->verbose) {
			char who[320];

			waitline_describe(lk.held_by, who, sizeof who);
			log_line(opts->key, "lock is %s", who);
		}
		status = opts->conflict_exit;
		goto out;
	case LOCK_INTERRUPTED:
		status = 128 + signo;
		goto out;
	case LOCK_FAILED:
		if (opts->verbose)
			lock_log_servers(&lk);
		log_error(opts->key, &err);
		status = err.exit;
		goto out;
	}
	if ((signo = pending_signal(sigfd)) != 0) {
		status = 128 + signo;
		goto release;
	}
	if (child_set_env(&job, lk.key, lk.token, lk.fence, &err) < 0) {
		log_error(opts->key, &err);
		status = err.exit;
		goto release;
	}
	/* Re-entered, the outer dlock keeps the lease and releases. */
	if (got == LOCK_ACQUIRED) {
		lease_init(&lease, &lk);
		have_lease = true;
		w.lease = &lease;
	}
	if (child_start(&job, &err) < 0) {
		log_error(opts->key, &err);
		status = err.exit;
		goto release;
	}
	if (child_wait_exec(&job, &err) < 0) {
		log_error(opts->key, &err);
		status = err.exit;
	} else {
		status = child_supervise(&job, &w);
	}
	if (have_lease)
		lease_stop(&lease);
release:
	if (got == LOCK_ACQUIRED && lock_release(&lk, &err) < 0 && opts->verbose)
		log_error(opts->key, &err);
out:
	if (have_lease)
		lease_free(&lease);
	lock_free(&lk);
	child_free(&job);
	return status;
}

int main(int argc, char **argv)
{
	struct options opts;
	struct settings st;
	sigset_t orig_mask;
	char why[1024];
	int sigfd, status;

	cli_parse(argc, argv, &opts);
	if (config_resolve(&opts, &st, why, sizeof why) < 0) {
		fprintf(stderr, "dlock: %s\n", why);
		config_free(&st);
		free(opts.servers);
		return EX_USAGE;
	}
	if (st.n_urls > 1 && st.n_urls % 2 == 0)
		log_line(opts.key, "warning: %zu servers: an even number tolerates no more failures than %zu",
			 st.n_urls, st.n_urls - 1);
	sigfd = block_signals(&orig_mask);
	if (sigfd < 0) {
		log_line(opts.key, "signal set-up: %s", strerror(errno));
		return EX_OSERR;
	}
	status = run(&opts, &st, sigfd, &orig_mask);
	close(sigfd);
	config_free(&st);
	free(opts.servers);
	return status;
}
