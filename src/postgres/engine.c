/* engine.c - PostgreSQL behind the engine interface (src/engine.h): its
 * settings (url.c), its lock operations (lock.c) and its inspection
 * (inspect.c: status and --force), wired; what it cannot do, and why. */
#include "postgres.h"

static const struct engine_cannot cannot[] = {
	{ CAP_SEVERAL, "one server keeps the lock (a standby never sees it): name its hosts in one URL, libpq's host list" },
	{ CAP_STEPS, "an advisory lock belongs to the session that took it and ends with it: acquire, extend and release cannot be separate processes" },
	{ CAP_HISTORY, "advisory locks leave no trace to read back" },
	{ CAP_WAIT_REPLICAS, "a standby never sees advisory locks" },
	{ CAP_LIST, "advisory lock keys are hashes: name the locks (dlock status KEY...)" },
	{ 0, NULL }
};

ENGINE_MODULE_ABI;

const struct engine postgres_engine = {
	.settings = {
		.name = "PostgreSQL",
		.flags = CAP_SHARED | CAP_LIMIT | CAP_FAIR | CAP_NO_FORK |
			 CAP_UNAVAILABLE_RUN | CAP_HELD_BY_CONNECTION,
		.cannot = cannot,
		.min_ttl_ms = 1000,
		ENGINE_URL_OPS(pg, struct pg_url),
		.free_url = pg_url_free,
		.url_tls = pg_url_tls,
	},
	ENGINE_OPS(pg),
	ENGINE_WATCH_OPS(pg),
	.lock.raise_fence = pg_raise_fence,
	.lock.finished = pg_finished,
	.inspect.force = pg_force,
};
