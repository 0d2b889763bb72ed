/* jobtree.h - the job's processes that left its process group */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A process, and when it started (clock ticks after boot, as
 * /proc/PID/stat has it): the pair names it even once its number is
 * another process's. */
struct jobtree_proc {
	pid_t pid;
	unsigned long long start;
};

struct jobtree {
	pid_t pgid;		/* the job's process group */
	pid_t sid;		/* its session: who left it left the job */
	pid_t parent;		/* dlock, whose children are the job's roots
				 * (it is their subreaper); 0: none */
	const pid_t *skip;	/* parent's children that are not the job: */
	size_t n_skip;		/* the watchdog, children it inherited */
	const struct jobtree_proc *roots;	/* more roots: processes */
	size_t n_roots;		/* that were parent's children */
	bool leader_reaped;	/* the group's leader (the command) reaped:
				 * its number may be a stranger's now */
	unsigned long long leader_start;	/* its start time; 0: unknown */
};

/* The live processes of the job outside its process group: those in the
 * job's session that descend from a root (parent's children but those
 * skipped, and roots that are still the same process), at most max of
 * them, in out. Once the group's number is not the job's
 * (jobtree_group_ours()), those in a group of that number too: a process
 * of the job may have taken the number and lead a group of its own.
 * A process that left the session (setsid: a daemon) is not looked into.
 * Returns how many. */
size_t jobtree_outside(const struct jobtree *jt, pid_t *out, size_t max);
/* The same walk, but every live process of the job, in its group or not,
 * with its start time and its process group. */
size_t jobtree_members(const struct jobtree *jt, pid_t *pids,
		       unsigned long long *starts, pid_t *pgrps, size_t max);

/* What a reaper adopted that is of the job: in its session, and either in
 * one of its groups or started from since to until (clock ticks after
 * boot). */
struct jobtree_adoption {
	pid_t reaper, sid;
	const pid_t *groups;
	size_t n_groups;
	unsigned long long since, until;
	pid_t job;	/* DLOCK_JOB's value: the job's group */
};

/* The reaper's children that a says are the job's, at most max: in one
 * of its groups, or started between since and until with DLOCK_JOB=job
 * in their environment, or DLOCK_TOKEN and no DLOCK_JOB (dlock acquire
 * --export), or one that cannot be read. */
size_t jobtree_adopted(const struct jobtree_adoption *a, pid_t *pids,
		       unsigned long long *starts, size_t max);
/* A process's group, or 0 when it is gone. */
pid_t jobtree_pgrp(pid_t pid);
/* Now, on the clock of the start times: clock ticks after boot. */
unsigned long long jobtree_now(void);
/* Whether pgid still names the job's group. The kernel gives no new
 * process the number of a group that has members, so once the leader is
 * reaped (or when the process of that number started other than the
 * leader did), a process with that number means ours was empty when it
 * was born: the number, and any group of that number, is not the job's
 * group (a stranger's, or one a process of the job made anew). */
bool jobtree_group_ours(const struct jobtree *jt);
/* Sends sig to the job's process group (while jobtree_group_ours()) and
 * to every process of the job outside it. Returns how many such
 * processes there were. */
size_t jobtree_signal(const struct jobtree *jt, int sig);
/* parent's children but those skipped, at most max, with their start
 * times; returns how many. */
size_t jobtree_children(pid_t parent, const pid_t *skip, size_t n_skip,
			struct jobtree_proc *out, size_t max);
/* A process's start time, or 0 when it is gone. */
unsigned long long jobtree_start(pid_t pid);
