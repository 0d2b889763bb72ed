/* steps.c - a lock held across separate processes, for pipelines:
 * dlock acquire, dlock extend (dlock release is in release.c). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include "commands.h"
#include "signals.h"
#include "wait.h"
#include "waitline.h"

/* Characters a POSIX shell takes literally in a word. */
#define SHELL_SAFE "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" \
		   "0123456789_@%+=:,./-"

/* s as one word for eval: as it is when nothing in it is special, else in
 * single quotes, each ' written as '\'' (a lock name may hold anything). */
static void put_word(const char *s)
{
	if (*s && s[strspn(s, SHELL_SAFE)] == '\0') {
		fputs(s, stdout);
		return;
	}
	putchar('\'');
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	putchar('\'');
}

static void put_var(const char *name, const char *value)
{
	printf("export %s=", name);
	put_word(value);
	putchar('\n');
}

int steps_export(const char *key, const char *token, const char *fence,
		 bool reentered)
{
	put_var("DLOCK_KEY", key);
	put_var("DLOCK_TOKEN", token);
	if (fence[0])
		put_var("DLOCK_FENCE", fence);
	else
		puts("unset DLOCK_FENCE");	/* --no-fence */
	/* A lock taken here belongs to no job: a DLOCK_JOB inherited from an
	 * outer dlock names that job's process group, and would confine
	 * re-entry to it, so it goes. A re-entered lock is the caller's,
	 * whose DLOCK_JOB (if any) stays. */
	if (!reentered)
		puts("unset DLOCK_JOB");
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -1;
}

/* The token alone, or with --export the variables a later `dlock KEY ...`
 * re-enters by. Returns -1 when stdout could not take it. */
static int print_lock(const struct lock *lk, const struct command_args *a,
		      bool reentered)
{
	if (a->export_vars)
		return steps_export(lk->key, lk->token, lk->fence, reentered);
	printf("%s\n", lk->token);
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -1;
}

int acquire_main(const struct lock_params *base, const struct command_args *a)
{
	struct lock_params p = *base;
	struct signals sig;
	struct lock lk;
	struct error err = { 0 };
	enum lock_result got = LOCK_FAILED;
	char who[320], why[128];
	int status, signo = 0;

	/* dlock acquire exits at once: the holder info names its parent, the
	 * script or shell that runs the pipeline's steps. */
	p.holder_pid = (int)getppid();
	/* main() has set these up already; their descriptor is not ours to
	 * read, so a second one (the signals stay blocked, as they were). */
	if (signals_init(&sig) < 0) {
		log_line(p.name, "signal set-up: %s", strerror(errno));
		return EX_OSERR;
	}
	if (lock_init(&lk, &p, &err) < 0) {
		log_error(p.name, &err);
		status = err.exit;
		goto out;
	}
	got = wait_acquire(&lk, a->wait_ms, &sig, &signo, &err);
	switch (got) {
	case LOCK_ACQUIRED:
	case LOCK_REENTERED:
		break;
	case LOCK_HELD:
		if (p.verbose) {
			waitline_describe(lk.held_by, who, sizeof who);
			log_line(p.name, "lock is %s", who);
		}
		status = a->conflict_exit;
		goto out;
	case LOCK_INTERRUPTED:
		status = 128 + signo;
		goto out;
	case LOCK_FAILED:
		if (p.verbose)
			lock_log_servers(&lk);
		log_error(p.name, &err);
		status = err.exit;
		goto out;
	}
	/* A signal that came during the last round: nobody would learn the
	 * token, so the lock goes back at once. */
	if ((signo = signals_interrupt(&sig)) != 0) {
		status = 128 + signo;
		goto release;
	}
	if (print_lock(&lk, a, got == LOCK_REENTERED) < 0) {
		snprintf(why, sizeof why, "%s", strerror(errno ? errno : EIO));
		log_lower_first(why);
		log_line(p.name, "cannot write the token: %s; lock given back", why);
		status = EX_IOERR;
		goto release;
	}
	status = EX_OK;
	goto out;
release:
	if (got == LOCK_ACQUIRED && lock_release(&lk, &err) < 0)
		log_line(p.name, "release failed: %s; the lock lapses within %.3g s",
			 err.msg, (double)lock_lapse_ms(&lk) / 1000);
out:
	lock_free(&lk);
	close(sig.fd);
	/* Interrupted by the terminal (Ctrl-C), a command must be seen
	 * killed by that signal, as main() does for the job's forms: a shell
	 * running `t=$(dlock acquire KEY)` in a loop stops only then. */
	if (signo && signals_from_terminal(signo, false))
		signals_die(signo);
	return status;
}

int extend_main(const struct lock_params *base, const struct command_args *a)
{
	struct lock lk;
	struct error err = { 0 };
	const char *token;
	int status = command_by_token(&lk, base, a, &token, "--token",
				      " (dlock acquire --export)");

	if (status != 0)
		goto out;
	if (strlen(token) >= sizeof lk.token) {
		log_line(base->name, "bad --token '%s': a token has at most %zu characters",
			 token, sizeof lk.token - 1);
		status = EX_USAGE;
		goto out;
	}
	strcpy(lk.token, token);
	switch (lk.eng->inspect.extend_token(&lk, &err)) {
	case EXTEND_OK:
		status = EX_OK;
		break;
	case EXTEND_LOST:
		log_line(base->name, "not extended: the lock is not held with that token (it lapsed, was released or taken over)");
		status = 1;
		break;
	default:
		if (base->verbose)
			lock_log_servers(&lk);
		log_error(base->name, &err);
		status = err.exit;
	}
out:
	lock_free(&lk);
	return status;
}
