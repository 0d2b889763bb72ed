/* caps.c - what an engine can do, from what it fills: caps.h. */
#include <stdio.h>
#include <string.h>
#include "caps.h"

/* In the order of the man page's table of features by engine, each named
 * as its row is (tests/docs.bats compares the two). */
static const struct feature {
	unsigned cap;
	const char *label;
	const char *trait_no;	/* a trait's "no", in the core's words */
} features[] = {
	{ CAP_SHARED, "-s", NULL },
	{ CAP_LIMIT, "--limit", NULL },
	{ CAP_FAIR, "--fair", NULL },
	{ CAP_SEVERAL, "several servers", NULL },
	{ CAP_STEPS, "acquire, extend, release --token", NULL },
	{ CAP_HISTORY, "history", NULL },
	{ CAP_FORCE, "release --force", NULL },
	{ CAP_MIN_HOLD_KEPT, "--min-hold kept by the store",
	  "dlock keeps the lock itself until --min-hold is over" },
	{ CAP_UNAVAILABLE_RUN, "--unavailable run", NULL },
	{ CAP_LIST, "status without key", NULL },
	{ CAP_NO_FORK, "-F", NULL },
	{ CAP_WAIT_REPLICAS, "--wait-replicas", NULL },
	{ CAP_HELD_BY_CONNECTION, "held by the connection",
	  "the lock outlives its connection until its lease or session ends" },
};

#define N_FEATURES (sizeof features / sizeof features[0])

unsigned caps_of(const struct engine *e)
{
	const struct engine_inspect_ops *in = &e->inspect;
	unsigned caps = e->settings.flags & ~CAPS_DERIVED;

	if (in->release_token && in->extend_token)
		caps |= CAP_STEPS;
	if (in->history)
		caps |= CAP_HISTORY;
	if (in->force)
		caps |= CAP_FORCE;
	if (in->list)
		caps |= CAP_LIST;
	return caps;
}

bool caps_has(const struct engine *e, unsigned cap)
{
	return (caps_of(e) & cap) == cap;
}

const char *caps_why(const struct engine *e, unsigned cap)
{
	if (caps_has(e, cap) || !e->settings.cannot)
		return NULL;
	for (const struct engine_cannot *c = e->settings.cannot; c->cap; c++)
		if (c->cap == cap)
			return c->why;
	return NULL;
}

const char *caps_label(unsigned cap)
{
	for (size_t i = 0; i < N_FEATURES; i++)
		if (features[i].cap == cap)
			return features[i].label;
	return NULL;
}

/* The first required function e leaves NULL, or NULL. */
static const char *missing(const struct engine *e)
{
	const struct { bool there; const char *name; } required[] = {
#define REQ(part, fn) { e->part.fn != NULL, #part "." #fn }
		{ e->settings.url_size > 0, "settings.url_size" },
		REQ(settings, parse_url), REQ(settings, url_text),
		REQ(lock, open), REQ(lock, close), REQ(lock, begin),
		REQ(lock, try), REQ(lock, wait_fds), REQ(lock, wait_events),
		REQ(lock, end_wait), REQ(lock, extend), REQ(lock, fds),
		REQ(lock, release),
		REQ(inspect, status),
#undef REQ
	};

	for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
		if (!required[i].there)
			return required[i].name;
	return NULL;
}

static int check_reasons(const struct engine *e, unsigned caps, char *why,
			 size_t whylen)
{
	unsigned given = 0;

	for (const struct engine_cannot *c = e->settings.cannot; c && c->cap; c++) {
		const char *label = caps_label(c->cap);

		if (!label) {
			snprintf(why, whylen, "a reason for %#x, which is no capability",
				 c->cap);
			return -1;
		}
		if (c->cap & CAPS_TRAITS) {
			snprintf(why, whylen, "a reason for the trait '%s' (nothing is refused for it)",
				 label);
			return -1;
		}
		if (caps & c->cap) {
			snprintf(why, whylen, "a reason why it cannot '%s', which it can",
				 label);
			return -1;
		}
		if ((given & c->cap) || !c->why || !*c->why) {
			snprintf(why, whylen, "%s reason for '%s'",
				 given & c->cap ? "a second" : "an empty", label);
			return -1;
		}
		given |= c->cap;
	}
	for (size_t i = 0; i < N_FEATURES; i++) {
		unsigned cap = features[i].cap;

		if (!(caps & cap) && !(cap & CAPS_TRAITS) && !(given & cap)) {
			snprintf(why, whylen, "no reason why it cannot '%s'",
				 features[i].label);
			return -1;
		}
	}
	return 0;
}

int caps_check(const struct engine *e, char *why, size_t whylen)
{
	const struct engine_lock_ops *lk = &e->lock;
	const struct engine_inspect_ops *in = &e->inspect;
	const char *fn;

	if (!e->settings.name || !*e->settings.name) {
		snprintf(why, whylen, "no name");
		return -1;
	}
	if ((fn = missing(e))) {
		snprintf(why, whylen, "no %s", fn);
		return -1;
	}
	if (!lk->watch_fds != !lk->watch_events) {
		snprintf(why, whylen, "lock.watch_fds and lock.watch_events: one without the other");
		return -1;
	}
	if (!in->release_token != !in->extend_token) {
		snprintf(why, whylen, "inspect.release_token and inspect.extend_token: one without the other");
		return -1;
	}
	if (lk->note_killed && !in->history) {
		snprintf(why, whylen, "lock.note_killed without inspect.history");
		return -1;
	}
	for (size_t i = 0; i < N_FEATURES; i++)
		if (e->settings.flags & features[i].cap & CAPS_DERIVED) {
			snprintf(why, whylen, "settings.flags declares '%s', which follows from the inspection functions",
				 features[i].label);
			return -1;
		}
	if (e->settings.flags & ~CAPS_ALL) {
		snprintf(why, whylen, "settings.flags has unknown bits %#x",
			 e->settings.flags & ~CAPS_ALL);
		return -1;
	}
	return check_reasons(e, caps_of(e), why, whylen);
}

void caps_print(FILE *out, const struct engine *e)
{
	for (size_t i = 0; i < N_FEATURES; i++) {
		const struct feature *f = &features[i];
		const char *why = f->trait_no ? f->trait_no : caps_why(e, f->cap);

		if (caps_has(e, f->cap))
			fprintf(out, "  %-34s yes\n", f->label);
		else
			fprintf(out, "  %-34s no%s%s\n", f->label, why ? ": " : "",
				why ? why : "");
	}
}
