/* engine.c - MySQL and MariaDB behind the engine interface (src/engine.h):
 * its settings (url.c), its lock operations (lock.c) and its inspection
 * (inspect.c), wired; what it cannot do, and why. */
#include <stdio.h>
#include <stdlib.h>
#include <sysexits.h>
#include "config.h"
#include "mysql.h"

/* ---- settings ---------------------------------------------------------- */

static int parse(const char *const *urls, size_t n, void **servers, char *err,
		 size_t errlen)
{
	struct my_url *u = calloc(n, sizeof *u);
	char why[256];

	if (!u) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (my_url_parse(urls[i], &u[i], why, sizeof why) < 0) {
			engine_bad_url(urls[i], why, err, errlen);
			free(u);
			return -1;
		}
	*servers = u;
	return 0;
}

static int init(const struct settings *st, struct error *err)
{
	char why[256];

	/* before any thread: the library's own set-up is not thread-safe */
	if (my_library_init(my_uses_tls(st->servers, st->n_servers), why,
			    sizeof why) < 0) {
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
		.parse = parse,
		.free_servers = my_free_urls,
		.server_text = my_url_text,
		.uses_tls = my_uses_tls,
		.init = init,
		.end = end,
	},
	.lock = {
		.open = my_lock_open,
		.close = my_lock_close,
		.begin = my_begin,
		.try = my_try,
		.wait_fds = my_wait_fds,
		.wait_events = my_wait_events,
		.end_wait = my_end_wait,
		.extend = my_extend,
		.watch_fds = my_watch_fds,
		.watch_events = my_watch_events,
		.note_killed = my_note_killed,
		.fds = my_lock_fds,
		.release = my_release,
		.raise_fence = my_raise_fence,
		.finished = my_finished,
	},
	.inspect = {
		.status = my_status,
		.list = my_list,
		.history = my_history,
		.force = my_force,
	},
};
