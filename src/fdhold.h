/* fdhold.h - the descriptor form after its caller died: which processes
 * still have the caller's open file (fdhold.c) */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define KEEPER_COMM "dlock-keeper"	/* the keeper's name in ps (comm) */
#define FDHOLD_ABOVE 64	/* the caller's ancestors looked at */
#define FDHOLD_MAX 8	/* holders told apart: pidfds watched, signalled */
#define FDHOLD_MARKS 8	/* init's last children, marked */

struct fdhold {
	int fd;			/* the keeper's copy of the caller's descriptor */
	pid_t self, watchdog;	/* the keeper and its watchdog: they do not count */
	pid_t above;		/* the caller's parent, as it was at lock time */
	unsigned long long above_start, caller_start;	/* clock ticks */
	pid_t session, pgid;	/* the caller's */
	bool by_file;		/* no kcmp(2): the same file in the caller's
				 * process group stands for the same descriptor */
	dev_t dev;		/* by_file: the file's */
	ino_t ino;
	pid_t above_pid[FDHOLD_ABOVE];	/* the caller's ancestors, from */
	size_t n_above;			/* its parent up */
	bool above_known;	/* noted while the caller lived */
	pid_t mark[FDHOLD_MARKS];	/* init's last children at lock time: */
	size_t n_marks;			/* those after them came since */
};

/* Notes in h what must be read while the caller lives, before the lock
 * is taken: its parent, session, start and process group (pgid), and
 * init's last children (a read of /proc/1/task/1/children). */
void fdhold_pin(struct fdhold *h, pid_t caller, pid_t pgid);
/* Notes the caller's ancestors in h, while it lives: in the keeper, once
 * dlock has gone and the caller works. */
void fdhold_note_above(struct fdhold *h);
/* Fills h for the keeper's descriptor fd; by_file when kcmp(2) is refused
 * (ENOSYS, EPERM: a seccomp filter). 0, or -1 when fd is not open. */
int fdhold_init(struct fdhold *h, int fd);
/* The processes that still hold it (keepers, watchdogs, the caller's
 * ancestors and the other descendants of one that holds it left out): how
 * many there are; the first max of them in pids. */
size_t fdhold_scan(const struct fdhold *h, pid_t *pids, size_t max);
