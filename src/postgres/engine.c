/* engine.c - PostgreSQL behind the engine interface (src/engine.h): its
 * settings (url.c), its lock operations (lock.c) and its inspection
 * (inspect.c: status and --force), wired; what it cannot do, and why. */
#include <stdbool.h>
#include <stddef.h>
#include "postgres.h"

/* ---- settings ------------------------------------------------------------ */

static int parse(const char *const *urls, size_t n, void **servers, char *err,
		 size_t errlen)
{
	return pg_parse_urls(urls, n, (struct pg_url **)servers, err, errlen);
}

static void free_servers(void *servers, size_t n)
{
	pg_free_urls(servers, n);
}

static const char *server_text(const void *servers, size_t i)
{
	return ((const struct pg_url *)servers)[i].text;
}

static bool uses_tls(const void *servers, size_t n)
{
	return n > 0 && ((const struct pg_url *)servers)[0].tls;
}

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
		.parse = parse,
		.free_servers = free_servers,
		.server_text = server_text,
		.uses_tls = uses_tls,
	},
	.lock = {
		.open = pg_open,
		.close = pg_close,
		.begin = pg_begin,
		.try = pg_try,
		.wait_fds = pg_wait_fds,
		.wait_events = pg_wait_events,
		.end_wait = pg_end_wait,
		.extend = pg_extend,
		.watch_fds = pg_watch_fds,
		.watch_events = pg_watch_events,
		.fds = pg_fds,
		.release = pg_release,
		.raise_fence = pg_raise_fence,
		.finished = pg_finished,
	},
	.inspect = {
		.status = pg_status,
		.force = pg_force,
	},
};
