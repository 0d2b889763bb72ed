/* engine.c - MySQL and MariaDB behind the engine interface (src/engine.h):
 * its settings (url.c), its lock operations (lock.c) and its inspection
 * (inspect.c), wired; what it cannot do, and why. */
#include <sysexits.h>
#include "config.h"
#include "mysql.h"

/* ---- settings ---------------------------------------------------------- */

static int init(const struct settings *st, struct error *err)
{
	char why[256];

	/* before any thread: the library's own set-up is not thread-safe */
	if (my_library_init(st->tls, why, sizeof why) < 0) {
		error_set(err, EX_SOFTWARE, "%s", why);
		return -1;
	}
	return 0;
}

static void end(void)
{
	mysql_library_end();
}

static const struct engine_cannot cannot[] = {
	{ CAP_SHARED, "GET_LOCK has no shared mode" },
	{ CAP_LIMIT, "GET_LOCK has one holder per name" },
	{ CAP_FAIR, "the server grants GET_LOCK's waiters in no defined order" },
	{ CAP_STEPS, "the lock lives and dies with the connection of the dlock that took it" },
	{ CAP_SEVERAL, "one server is the lock (a replica never sees GET_LOCK): name one URL" },
	{ CAP_WAIT_REPLICAS, "GET_LOCK is not replicated" },
	{ 0, NULL }
};

ENGINE_MODULE_ABI;

const struct engine mysql_engine = {
	.settings = {
		.name = "MySQL",
		.flags = CAP_NO_FORK | CAP_UNAVAILABLE_RUN | CAP_HELD_BY_CONNECTION,
		.cannot = cannot,
		.min_ttl_ms = 1000,
		ENGINE_URL_OPS(my, struct my_url),
		.free_url = my_url_free,
		.url_tls = my_url_tls,
		.init = init,
		.end = end,
	},
	ENGINE_OPS(my),
	ENGINE_WATCH_OPS(my),
	ENGINE_HISTORY_OPS(my),
	.lock.raise_fence = my_raise_fence,
	.lock.finished = my_finished,
	.inspect.list = my_list,
	.inspect.force = my_force,
};
