/* scripts.h - the lock's Lua scripts, run on every server. Each is a file,
 * src/redis/lua/NAME.lua, headed by its KEYS and ARGV; the build writes the
 * definitions (src/redis/lua/embed.py), each with its body's SHA-1. */
#pragma once
#include "conn.h"	/* struct script */

extern const struct script script_acquire;
extern const struct script script_extend;
extern const struct script script_release;
extern const struct script script_leave;
extern const struct script script_fence_max;
extern const struct script script_force;
extern const struct script script_status;
