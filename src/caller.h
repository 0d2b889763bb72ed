/* caller.h - the descriptor form's caller, read from /proc */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Whether /proc is our PID namespace's: its PIDs are the ones getpid()
 * and kill() use (unshare -p without --mount-proc shows another's). */
bool caller_proc_is_ours(void);
/* The parent of pid; 0 when it cannot be told. */
pid_t caller_parent_of(pid_t pid);
/* Whether pid is our parent or one of its ancestors. */
bool caller_is_ancestor(pid_t pid);
/* The process whose life the lock lasts: our parent; with --export
 * (export_vars), the nearest ancestor that reads the pipe our stdout is
 * (0 when none does). */
pid_t caller_find(bool export_vars);
/* "COMMAND LINE (dlock FD)" of caller, for the holder info. */
void caller_command(pid_t caller, int fd, char *out, size_t len);
