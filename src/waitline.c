/* waitline.c - who holds the lock, and for how long we have waited.
 *
 * On a terminal the line appears after a second of waiting (at once with
 * --verbose) and is redrawn in place; elsewhere only --verbose prints it,
 * once, as an ordinary line, so logs and cron mail stay quiet. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "clock.h"
#include "log.h"
#include "notify.h"
#include "waitline.h"

void waitline_init(struct waitline *wl, const char *key, bool verbose)
{
	*wl = (struct waitline){
		.key = key,
		.verbose = verbose,
		.start_ms = clock_now_ms(),
	};
}

bool waitline_holder_shown(bool verbose)
{
	return verbose || isatty(STDERR_FILENO) || notify_active();
}

/* "host\tpid\tuser\tsince_ms\tcommand[ +N]" -> "user@host pid N (cmd) for Xs" */
void waitline_describe(const char *info, char *out, size_t len)
{
	char host[128] = "", user[64] = "", cmd[128] = "";
	long long pid = 0, since_ms = 0;
	const char *more = strrchr(info, '+');
	/* not atoi(): " +99999999999" from a server would overflow an int */
	long n_more = more && more > info && more[-1] == ' ' ?
		      strtol(more + 1, NULL, 10) : 0;
	size_t used;

	if (!*info || sscanf(info, "%127[^\t]\t%lld\t%63[^\t]\t%lld\t%127[^\t]",
			     host, &pid, user, &since_ms, cmd) < 4) {
		snprintf(out, len, "held by another client");
	} else {
		/* since as the server has it: any number, even negative */
		int64_t now_ms = clock_wall_ms();
		long long held_s = since_ms >= 0 && since_ms < now_ms ?
				   (now_ms - since_ms) / 1000 : 0;

		if (more && n_more && strlen(cmd) >= strlen(more) + 1)
			cmd[strlen(cmd) - strlen(more) - 1] = '\0';
		snprintf(out, len, "held by %s@%s pid %lld (%s) for %llds", user,
			 host, pid, cmd, held_s > 0 ? held_s : 0);
	}
	used = strlen(out);
	if (n_more > 0 && used < len)
		snprintf(out + used, len - used, " and %ld more", n_more);
}

/* --log-format json: no line drawn in place; with --verbose, a "wait"
 * event each time the holder changes. */
static void wait_event(struct waitline *wl, const char *holder, long queue_pos,
		       bool fair, int64_t waited_ms)
{
	char who[320];

	if (!wl->verbose)
		return;
	waitline_describe(holder ? holder : "", who, sizeof who);
	/* "held by ... for 12s": the same holder, a second later */
	if (wl->shown && strncmp(who, wl->said, strcspn(who, ")")) == 0)
		return;
	snprintf(wl->said, sizeof wl->said, "%s", who);
	wl->shown = true;
	log_event(LOG_INFO, wl->key, "wait",
		  (struct log_field[]){ { "waited_ms", NULL, waited_ms },
					{ "queue_position", NULL, fair ? queue_pos + 1 : 0 } },
		  fair ? 2 : 1, "%s; waited %" PRId64 "s", who, waited_ms / 1000);
}

void waitline_update(struct waitline *wl, const char *holder, long queue_pos,
		     bool fair)
{
	int64_t waited_ms = clock_now_ms() - wl->start_ms;
	char who[320], pos[48] = "";

	if (notify_active()) {
		waitline_describe(holder ? holder : "", who, sizeof who);
		notify_waiting(wl->key, who);
	}
	if (log_json()) {
		wait_event(wl, holder, queue_pos, fair, waited_ms);
		return;
	}
	/* Asked here, not at start: an acquisition that never waits should
	 * not pay for the ioctl. */
	if (!wl->tty_known) {
		wl->tty = isatty(STDERR_FILENO);
		wl->tty_known = true;
	}
	if (!wl->verbose && (!wl->tty || waited_ms < 1000))
		return;
	if (!wl->tty && wl->shown)
		return;
	waitline_describe(holder ? holder : "", who, sizeof who);
	if (fair)
		snprintf(pos, sizeof pos, ", queue position %ld", queue_pos + 1);
	fprintf(stderr, "%sdlock: %s: %s; waited %" PRId64 "s%s%s",
		wl->tty ? "\r\033[K" : "", wl->key, who, waited_ms / 1000, pos,
		wl->tty ? "" : "\n");
	fflush(stderr);
	wl->shown = true;
}

void waitline_clear(struct waitline *wl)
{
	if (wl->tty && wl->shown)
		fputs("\r\033[K", stderr);
	wl->shown = false;
}
