/* signals.h - the signals dlock takes, and those it was started with */
#pragma once
#include <signal.h>
#include <stdbool.h>

/* What the watchdog's exit sends dlock while the watchdog shares its
 * memory (watchdog.c): not SIGCHLD, so that a waitid() without __WALL
 * tells whether dlock has any other child (supervise.c). It is taken as
 * a SIGCHLD (signals_next()), and a wait that is to see the watchdog
 * needs __WALL. Ignored by default, as SIGCHLD is. */
#define SIGNAL_WATCHDOG_EXIT SIGURG

struct signals {
	int fd;			/* signalfd: INT, TERM, HUP, QUIT, CHLD and
				 * SIGNAL_WATCHDOG_EXIT */
	sigset_t orig_mask;	/* the mask dlock was started with */
	sigset_t ignored;	/* those of INT, TERM, HUP, QUIT ignored then */
	struct sigaction orig_pipe;	/* SIGPIPE as dlock was started with */
};

/* Blocks the signals dlock takes through s->fd (before any thread exists:
 * threads inherit the mask), ignores SIGPIPE, and gives SIGCHLD its
 * default action: a parent that ignored it would have the kernel reap the
 * command before dlock learns how it ended. Returns 0, or -1 (errno). */
int signals_init(struct signals *s);
/* A second signalfd, of the signals that stop dlock and were not ignored
 * when it started (not SIGCHLD): readable while one is pending, never
 * read (signals_next() takes it). -1 when there is none or on failure. */
int signals_stop_fd(const struct signals *s);
/* The next signal taken, 0 when none is pending. One that dlock's parent
 * ignored (nohup, a background job of sh) is dropped, as the parent meant.
 * SIGNAL_WATCHDOG_EXIT comes back as SIGCHLD. */
int signals_next(const struct signals *s);
/* The next signal that interrupts a wait, 0 when none is pending.
 * SIGCHLD there is a child dlock inherited across exec (sleep & exec dlock):
 * it is reaped, and is nobody's business. */
int signals_interrupt(const struct signals *s);
/* In a child before exec (async-signal-safe): the mask and SIGPIPE as
 * dlock got them, so the command gets them as it would under flock. */
void signals_restore(const struct signals *s);
/* Whether sig, which ends us, came from the terminal (Ctrl-C, Ctrl-\):
 * SIGINT or SIGQUIT while dlock, or the job it handed the terminal to
 * (tty_handed), is in the foreground. The shell must then see us killed
 * by it, as it would see flock: a loop or script stops only then. */
bool signals_from_terminal(int sig, bool tty_handed);
/* Ends dlock by sig, its default action restored, without a core dump. */
void signals_die(int sig);
