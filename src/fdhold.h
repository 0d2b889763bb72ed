/* fdhold.h - the descriptor form after its caller died: which processes
 * still have the caller's open file (fdhold.c) */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define KEEPER_COMM "dlock-keeper"	/* the keeper's name in ps (comm) */
#define FDHOLD_MAX 8	/* holders told apart: pidfds watched, signalled */

struct fdhold {
	int fd;			/* the keeper's copy of the caller's descriptor */
	pid_t self, watchdog;	/* the keeper and its watchdog: they do not count */
	pid_t above;		/* the caller's parent, as it was at lock time */
	pid_t session, pgid;	/* the caller's */
	bool by_file;		/* no kcmp(2): the same file in the caller's
				 * process group stands for the same descriptor */
	dev_t dev;		/* by_file: the file's */
	ino_t ino;
};

/* Fills h for the keeper's descriptor fd; by_file when kcmp(2) is refused
 * (ENOSYS, EPERM: a seccomp filter). 0, or -1 when fd is not open. */
int fdhold_init(struct fdhold *h, int fd);
/* The processes that still hold it, the keeper, its watchdog, the
 * caller's ancestors and their other children left out: how many there
 * are; the first max of them in pids. */
size_t fdhold_scan(const struct fdhold *h, pid_t *pids, size_t max);
