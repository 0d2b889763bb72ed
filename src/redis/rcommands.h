/* rcommands.h - Redis: what the engine interface's inspection and repair
 * commands run (status.c, history.c, release.c), and the engine's lock. */
#pragma once
#include "engine.h"
#include "rlock.h"

/* The Redis part of a lock the engine opened. */
struct rlock *redis_rlock(const struct lock *lk);

/* engine.c: the lock part of struct engine (src/engine.h); status.c,
 * list.c, history.c, release.c: its inspection part. */
ENGINE_DECLARE(redis);
