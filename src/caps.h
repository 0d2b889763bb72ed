/* caps.h - what an engine can do, from what it fills (engine.h).
 *
 * One source of truth: the inspection functions an engine fills give
 * CAP_STEPS, CAP_HISTORY, CAP_FORCE and CAP_LIST; settings.flags declares
 * the rest; settings.cannot says why for each one it lacks. The option
 * check (main.c), `dlock help engines` and, through it, the man page's
 * table of features by engine (tests/docs.bats) read them here. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "engine.h"

/* Every capability e has: its declared flags and the derived ones. */
unsigned caps_of(const struct engine *e);
bool caps_has(const struct engine *e, unsigned cap);
/* Why e lacks cap, for the usage error; NULL for a trait or one it has. */
const char *caps_why(const struct engine *e, unsigned cap);
/* Whether e's declaration holds together: the required functions there,
 * pairs filled together, no derived capability declared, a reason for
 * every capability it lacks (traits aside), none for one it has, each
 * once. 0, or -1 with the first fault in why. */
int caps_check(const struct engine *e, char *why, size_t whylen);
/* The name of cap as the man page's table of features names its row;
 * NULL for no single capability. */
const char *caps_label(unsigned cap);
/* e's row of the features table, one line each: "  LABEL  yes", or "no:
 * " and the engine's reason (a trait: the core's words). */
void caps_print(FILE *out, const struct engine *e);
