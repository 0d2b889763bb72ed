/* test_caps.c - what an engine can do, from what it fills (src/caps.h):
 * the derived capabilities, the reasons, and the check that a declaration
 * holds together, on the built-in engine and on copies of it broken one
 * way each. The modules' declarations are checked as they load, and all
 * of them by `dlock help engines` (tests/docs.bats). */
#include <string.h>

#include "caps.h"
#include "tap.h"

extern const struct engine redis_engine;

static char why[256];

/* A copy of the Redis engine with other flags and reasons. */
static struct engine like_redis(unsigned flags, const struct engine_cannot *cannot)
{
	struct engine e = redis_engine;

	e.settings.flags = flags;
	e.settings.cannot = cannot;
	return e;
}

static void refused(const char *what, const struct engine *e, const char *want)
{
	why[0] = '\0';
	ok(caps_check(e, why, sizeof why) == -1 && strstr(why, want),
	   "%s: refused, saying '%s' (\"%s\")", what, want, why);
}

static void flags_and_reasons(void)
{
	const unsigned declared = redis_engine.settings.flags;
	const struct engine_cannot no_shared[] = {
		{ CAP_SHARED, "no shared mode here" }, { 0, NULL }
	};
	const struct engine_cannot twice[] = {
		{ CAP_SHARED, "no shared mode here" },
		{ CAP_SHARED, "and again" }, { 0, NULL }
	};
	const struct engine_cannot for_trait[] = {
		{ CAP_SHARED, "no shared mode here" },
		{ CAP_MIN_HOLD_KEPT, "the connection keeps it" }, { 0, NULL }
	};
	const struct engine_cannot not_a_cap[] = {
		{ CAP_SHARED, "no shared mode here" }, { 1u << 20, "what?" }, { 0, NULL }
	};
	struct engine e;

	e = like_redis(declared & ~CAP_SHARED, no_shared);
	ok(caps_check(&e, why, sizeof why) == 0, "one capability less, with its reason: holds (\"%s\")", why);
	ok(!caps_has(&e, CAP_SHARED), "no CAP_SHARED then");
	ok(caps_why(&e, CAP_SHARED) && strcmp(caps_why(&e, CAP_SHARED), "no shared mode here") == 0,
	   "its reason is the one given");
	ok(caps_why(&e, CAP_LIMIT) == NULL, "none for a capability it has");

	e = like_redis(declared & ~CAP_SHARED, NULL);
	refused("a capability lacked without a reason", &e, "no reason why it cannot '-s'");
	e = like_redis(declared, no_shared);
	refused("a reason for a capability it has", &e, "a reason why it cannot '-s', which it can");
	e = like_redis(declared & ~CAP_SHARED, twice);
	refused("two reasons for one", &e, "a second reason for '-s'");
	e = like_redis(declared & ~CAP_SHARED & ~CAP_MIN_HOLD_KEPT, for_trait);
	refused("a reason for a trait", &e, "a reason for the trait '--min-hold kept by the store'");
	e = like_redis(declared & ~CAP_SHARED, not_a_cap);
	refused("a reason for no capability", &e, "which is no capability");
	e = like_redis(declared & ~CAPS_TRAITS, NULL);
	ok(caps_check(&e, why, sizeof why) == 0, "traits lacked need no reason (\"%s\")", why);
	e = like_redis(declared | CAP_HISTORY, NULL);
	refused("a derived capability declared", &e, "settings.flags declares 'history'");
}

static void derived(void)
{
	struct engine e = redis_engine;
	const struct engine_cannot no_history[] = {
		{ CAP_HISTORY, "nothing is kept" }, { 0, NULL }
	};
	const struct engine_cannot no_steps[] = {
		{ CAP_STEPS, "one process" }, { 0, NULL }
	};

	ok(caps_has(&e, CAP_STEPS | CAP_HISTORY | CAP_FORCE | CAP_LIST),
	   "Redis: steps, history, force, list, from its inspection functions");
	e.inspect.history = NULL;
	e.lock.note_killed = NULL;
	ok(!caps_has(&e, CAP_HISTORY) && caps_has(&e, CAP_FORCE), "no history function: no CAP_HISTORY");
	refused("then without its reason", &e, "no reason why it cannot 'history'");
	e.settings.cannot = no_history;
	ok(caps_check(&e, why, sizeof why) == 0, "with it: holds (\"%s\")", why);
	e.lock.note_killed = redis_engine.lock.note_killed;
	refused("note_killed without history", &e, "lock.note_killed without inspect.history");

	e = redis_engine;
	e.inspect.extend_token = NULL;
	e.settings.cannot = no_steps;
	ok(!caps_has(&e, CAP_STEPS), "release_token alone: no CAP_STEPS");
	refused("release_token without extend_token", &e, "one without the other");
	e.inspect.release_token = NULL;
	ok(caps_check(&e, why, sizeof why) == 0, "neither, with the reason: holds (\"%s\")", why);

	e = redis_engine;
	e.lock.watch_events = NULL;
	refused("watch_fds without watch_events", &e, "one without the other");
	e = redis_engine;
	e.inspect.status = NULL;
	refused("no status", &e, "no inspect.status");
	e = redis_engine;
	e.lock.try = NULL;
	refused("no try", &e, "no lock.try");
}

int main(void)
{
	ok(caps_check(&redis_engine, why, sizeof why) == 0,
	   "the Redis engine's declaration holds (\"%s\")", why);
	for (unsigned bit = 1; bit & CAPS_ALL; bit <<= 1)
		ok(caps_label(bit) != NULL, "capability %#x has a row in the table of features", bit);
	ok(caps_label(1u << 13) == NULL, "no row for a bit past CAPS_ALL");
	flags_and_reasons();
	derived();
	return done_testing();
}
