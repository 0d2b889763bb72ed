/* scripts.h - the Lua scripts run on every server */
#pragma once

struct script {
	const char *name;
	const char *body;
	const char *sha;	/* SHA-1 of body, for EVALSHA */
	int n_keys;
};

extern const struct script script_acquire;
extern const struct script script_extend;
extern const struct script script_release;
extern const struct script script_leave;
extern const struct script script_fence_max;
