/* rcommands.h - Redis: what the engine interface's inspection and repair
 * commands run (status.c, history.c, release.c), and the engine's lock. */
#pragma once
#include "engine.h"
#include "rlock.h"

/* The Redis part of a lock the engine opened. */
struct rlock *redis_rlock(const struct lock *lk);

int redis_status(struct lock *lk, struct status_lock *locks, size_t n,
		 struct error *err);
int redis_list(struct lock *lk, char ***names, size_t *n, struct error *err);
int redis_history(struct lock *lk, long count, struct history_report *out,
		  struct error *err);
int redis_release_token(struct lock *lk, const char *token, struct error *err);
int redis_force(struct lock *lk, struct broken_holder **out, size_t *n,
		struct error *err);
enum extend_result redis_extend_token(struct lock *lk, struct error *err);
