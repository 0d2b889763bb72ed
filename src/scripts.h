/* scripts.h - the lock's Lua scripts, run on every server */
#pragma once
#include "node.h"	/* struct script */

extern const struct script script_acquire;
extern const struct script script_extend;
extern const struct script script_release;
extern const struct script script_leave;
extern const struct script script_fence_max;
extern const struct script script_force;
extern const struct script script_status;
