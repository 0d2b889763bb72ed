/* lock.c - the core's side of a lock: who holds it (the holder info), when
 * a nested dlock re-enters its caller's lock, and each step handed to the
 * lock's engine. */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include "caps.h"
#include "clock.h"
#include "lock.h"
/* A field of the holder info: the scripts split it at tabs, and a
 * newline would end a line of its own in status and history. Any name
 * may hold them (USER, LOGNAME, a command line; a host name set by
 * sethostname()): each becomes a space. */
static void flatten(char *field)
{
	for (char *c = field; *c; c++)
		if (*c == '\t' || *c == '\n' || *c == '\r')
			*c = ' ';
}

/* Holder info, as the status line and status show it:
 * "host\tpid\tuser\tsince_ms\tcommand", no tab or newline in a field. */
static void describe_holder(struct lock *lk, const char *command)
{
	const char *user = getenv("USER");
	char host[128], uid[16], cmd[256], name[128];

	if (gethostname(host, sizeof host) < 0)
		strcpy(host, "?");
	host[sizeof host - 1] = '\0';
	/* Not getpwuid(): NSS (nscd, nsswitch.conf, /etc/passwd) costs more
	 * than the rest of start-up, on every run. The environment names the
	 * user where someone set it up: a login, sudo, su, cron (LOGNAME),
	 * systemd with User=. A system service without User= has neither:
	 * uid 0 is root by definition (and su to root keeps the caller's
	 * USER, which is not who runs). */
	if (getuid() == 0)
		user = "root";
	if (!user || !*user)
		user = getenv("LOGNAME");
	if (!user || !*user) {
		snprintf(uid, sizeof uid, "uid %u", (unsigned)getuid());
		user = uid;
	}
	snprintf(cmd, sizeof cmd, "%s", command ? command : "");
	snprintf(name, sizeof name, "%s", user);
	flatten(host);
	flatten(name);
	flatten(cmd);
	snprintf(lk->info, sizeof lk->info, "%s\t%d\t%s\t%" PRId64 "\t%s", host,
		 lk->p->holder_pid ? lk->p->holder_pid : (int)getpid(), name,
		 clock_wall_ms(), cmd);
}

/* The holder info's since is the try that acquires, not rlock_init():
 * waiting is not holding. Overwritten in place: wall-clock ms have 13
 * digits from 2001 to 2286. */
static void stamp_since(struct lock *lk)
{
	char *since = lk->info, now[24];
	int len;

	for (int tabs = 0; tabs < 3 && since; tabs++)
		if ((since = strchr(since, '\t')))
			since++;
	len = snprintf(now, sizeof now, "%" PRId64, clock_wall_ms());
	if (since && strspn(since, "0123456789") == (size_t)len)
		memcpy(since, now, (size_t)len);
}

/* Re-entry is for the job's own processes: one that left the job's
 * session (a daemon, setsid) keeps DLOCK_TOKEN but not the lock, which is
 * released once the job is over. DLOCK_JOB is the job's process group;
 * without it (the token was handed on by other means), any process. */
static bool in_the_job(void)
{
	const char *job = getenv("DLOCK_JOB");
	char *end;
	long pgid;

	if (!job)
		return true;
	pgid = strtol(job, &end, 10);
	if (*job == '\0' || *end != '\0' || pgid <= 0)
		return false;
	return getpgrp() == pgid || getsid(0) == getsid((pid_t)pgid);
}

/* Whether key is one of the outer dlock's: DLOCK_KEY, or a word of
 * DLOCK_KEYS (-k). The server has the last word: it re-enters only a key
 * that holds DLOCK_TOKEN. */
static bool outer_key(const char *key)
{
	const char *env_key = getenv("DLOCK_KEY");
	const char *keys = getenv("DLOCK_KEYS");
	size_t len = strlen(key);

	if (env_key && strcmp(env_key, key) == 0)
		return true;
	for (const char *w = keys; w && *w; w += strcspn(w, " ")) {
		w += strspn(w, " ");
		if (strncmp(w, key, len) == 0 && (w[len] == ' ' || w[len] == '\0'))
			return true;
	}
	return false;
}


int lock_init(struct lock *lk, const struct lock_params *p, struct error *err)
{
	const char *env_token = getenv("DLOCK_TOKEN");

	*lk = (struct lock){
		.p = p,
		.eng = p->engine,
		.ttl_ms = p->ttl_ms,
		.node_timeout_ms = p->node_timeout_ms,
		.wait_deadline_ms = -1,
	};
	describe_holder(lk, p->command);
	if (lk->eng->lock.open(lk, err) < 0)
		return -1;
	if (env_token && *env_token && outer_key(lk->key) && in_the_job())
		lk->reentry_token = env_token;
	return 0;
}

void lock_free(struct lock *lk)
{
	if (lk->eng && lk->e)
		lk->eng->lock.close(lk);
	lk->e = NULL;
}

void lock_log_servers(const struct lock *lk)
{
	if (lk->eng->lock.log_servers)
		lk->eng->lock.log_servers(lk);
}

int lock_begin(struct lock *lk, struct error *err)
{
	return lk->eng->lock.begin(lk, err);
}

enum lock_result lock_try(struct lock *lk, int64_t *retry_ms, struct error *err)
{
	lk->held_by[0] = '\0';
	lk->queue_pos = 0;
	stamp_since(lk);
	*retry_ms = -1;
	return lk->eng->lock.try(lk, retry_ms, err);
}

void lock_end_wait(struct lock *lk, enum lock_result r)
{
	lk->eng->lock.end_wait(lk, r);
}

enum extend_result lock_extend(struct lock *lk, int64_t timeout_ms,
			       struct error *err)
{
	return lk->eng->lock.extend(lk, timeout_ms, err);
}

int lock_release(struct lock *lk, struct error *err)
{
	const struct release_how how = { .exit_status = LOCK_EXIT_UNKNOWN };

	return lk->eng->lock.release(lk, &how, err);
}

/* --min-hold where the store cannot keep a lock once its holder is gone
 * (it lives with a connection or a session): dlock keeps it, renewing,
 * until the minimum is over, and exits after. Signals wait meanwhile. */
static void hold_until(struct lock *lk, int64_t until_ms)
{
	int64_t now_ms;

	while ((now_ms = clock_now_ms()) < until_ms) {
		int64_t next_ms = now_ms + lk->ttl_ms / 3;
		struct error ignored;

		if (next_ms > until_ms)
			next_ms = until_ms;
		poll(NULL, 0, clock_poll_ms(next_ms - now_ms));
		if (clock_now_ms() < until_ms &&
		    lk->eng->lock.extend(lk, lk->node_timeout_ms, &ignored) != EXTEND_OK)
			return;		/* the release says what became of it */
	}
}

/* The job ended, and dlock keeps the lock for the rest of --min-hold:
 * the holder info says when (show.h's finished field), in the store.
 * Whether the store took it: then the lock was still ours after the job
 * (the write is made on our key, node, session or connection). */
static bool mark_finished(struct lock *lk)
{
	size_t len = strlen(lk->info);
	struct error ignored;

	if (!lk->eng->lock.finished)
		return false;
	snprintf(lk->info + len, sizeof lk->info - len, "\t%s\t%" PRId64,
		 lk->fence, clock_wall_ms());
	if (lk->eng->lock.finished(lk, &ignored) == 0)
		return true;
	log_line(lk->p->name, "warning: the holder info could not say that the command finished: %s",
		 ignored.msg);
	return false;
}

int lock_release_job(struct lock *lk, int exit_status, bool min_hold,
		     struct error *err)
{
	const struct release_how how = {
		.job = true, .exit_status = exit_status, .min_hold = min_hold,
	};

	bool ours_after_job = false;
	int r;

	if (min_hold && !caps_has(lk->eng, CAP_MIN_HOLD_KEPT) &&
	    clock_now_ms() < lk->acquired_ms + lk->p->min_hold_ms) {
		size_t info_len = strlen(lk->info);

		ours_after_job = mark_finished(lk);
		hold_until(lk, lk->acquired_ms + lk->p->min_hold_ms);
		/* the history's event names the holder as it always does */
		lk->info[info_len] = '\0';
	}
	err->msg[0] = '\0';
	r = lk->eng->lock.release(lk, &how, err);
	if (!lk->lost_at_release)
		return r;
	/* Ended while kept, after the job (release --token, --force, a
	 * lapse): the job ran under the lock to its end, as on Redis, whose
	 * dlock has exited by then; its status stands, not 75. */
	if (ours_after_job) {
		error_set(err, EX_TEMPFAIL, "the lock kept for --min-hold was ended before the minimum was over (released, broken or lapsed), after the command finished");
		return 1;
	}
	if (err->exit != EX_TEMPFAIL || !err->msg[0])
		error_set(err, EX_TEMPFAIL, "the lock was no longer ours at the release (deleted, lapsed or taken over)");
	return LOCK_RELEASE_LOST;
}

int lock_raise_fence(struct lock *lk, const char *fence, struct error *err)
{
	if (lk->eng->lock.raise_fence)
		return lk->eng->lock.raise_fence(lk, fence, err);
	snprintf(lk->fence, sizeof lk->fence, "%s", fence);
	return 0;
}

bool lock_busy(const struct lock *lk)
{
	return lk->busy;
}

size_t lock_held_fds(const struct lock *lk, size_t n, int *fds, size_t max)
{
	size_t got = 0;

	for (size_t i = 0; i < n && got < max; i++)
		if (caps_has(lk[i].eng, CAP_HELD_BY_CONNECTION))
			got += lk[i].eng->lock.fds(&lk[i], fds + got, max - got);
	return got;
}

int64_t lock_notice_ms(int64_t ttl_ms)
{
	return ttl_ms / 10 > 0 ? ttl_ms / 10 : 1;
}

int64_t lock_lapse_ms(const struct lock *lk)
{
	return lk->lapse_ms > 0 ? lk->lapse_ms : lk->ttl_ms;
}

int64_t lock_node_timeout_ms(const struct lock *lk)
{
	/* a third: the default's share of the TTL, which leaves a lease to
	 * run the command under after an answer waited for that long */
	if (lk->ttl_ms < lk->p->ttl_ms && lk->p->node_timeout_ms > lk->ttl_ms / 3)
		return lk->ttl_ms / 3 > 0 ? lk->ttl_ms / 3 : 1;
	return lk->p->node_timeout_ms;
}

int lock_check_left(const struct lock *lk, struct error *err)
{
	int64_t left_ms = lk->valid_until_ms - clock_now_ms();

	/* The notice the command would get, and time for a renewal round
	 * (which may wait a --node-timeout on a server that is down). */
	if (left_ms > lock_notice_ms(lk->ttl_ms) + lk->node_timeout_ms)
		return 0;
	error_set(err, EX_UNAVAILABLE,
		  "acquiring took so long that %lld ms of the lease were left (--ttl too short?)",
		  (long long)(left_ms > 0 ? left_ms : 0));
	return -1;
}
