/* signals.c - the signals dlock takes through a signalfd, and ending by
 * one as the shell must see it */
#include <fcntl.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include "signals.h"

static const int taken[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

int signals_init(struct signals *s)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t set;

	sigemptyset(&set);
	sigemptyset(&s->ignored);
	for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
		struct sigaction old;

		sigaddset(&set, taken[i]);
		if (sigaction(taken[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			sigaddset(&s->ignored, taken[i]);
	}
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGNAL_WATCHDOG_EXIT);
	s->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	/* SIGTTOU: handing the terminal to the command must not stop us. */
	sigaddset(&set, SIGTTOU);
	if (s->fd < 0 || sigprocmask(SIG_BLOCK, &set, &s->orig_mask) < 0 ||
	    sigaction(SIGCHLD, &dfl, NULL) < 0 ||
	    sigaction(SIGPIPE, &ign, &s->orig_pipe) < 0)
		return -1;
	return 0;
}

int signals_stop_fd(const struct signals *s)
{
	sigset_t set;
	bool any = false;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++)
		if (!sigismember(&s->ignored, taken[i])) {
			sigaddset(&set, taken[i]);
			any = true;
		}
	return any ? signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC) : -1;
}

int signals_next(const struct signals *s)
{
	struct signalfd_siginfo si;

	while (read(s->fd, &si, sizeof si) == (ssize_t)sizeof si)
		if (si.ssi_signo == SIGNAL_WATCHDOG_EXIT)
			return SIGCHLD;
		else if (!sigismember(&s->ignored, (int)si.ssi_signo))
			return (int)si.ssi_signo;
	return 0;
}

int signals_interrupt(const struct signals *s)
{
	int sig;

	while ((sig = signals_next(s)) == SIGCHLD)
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	return sig;
}

void signals_restore(const struct signals *s)
{
	sigaction(SIGPIPE, &s->orig_pipe, NULL);
	sigprocmask(SIG_SETMASK, &s->orig_mask, NULL);
}

/* Whether a SIGINT or SIGQUIT that ends us came from the terminal, as
 * Ctrl-C: the shell must then see us killed by it, as it would see flock,
 * so that a loop or script running us stops there (an exit status of 130
 * does not stop them). */
bool signals_from_terminal(int sig, bool tty_handed)
{
	int fd;
	bool fg;

	if (sig != SIGINT && sig != SIGQUIT)
		return false;
	if (tty_handed)
		return true;
	fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
	fg = fd >= 0 && tcgetpgrp(fd) == getpgrp();
	if (fd >= 0)
		close(fd);
	return fg;
}

/* Ends dlock by sig, its default action restored, without a core dump. */
void signals_die(int sig)
{
	struct rlimit none = { 0, 0 };
	sigset_t set;

	setrlimit(RLIMIT_CORE, &none);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}
