/* engine.c - etcd v3 behind the engine interface (src/engine.h): its
 * settings (url.c), its lock operations (lock.c) and its inspection
 * (inspect.c), wired; what it cannot do, and why. */
#include "config.h"
#include "etcd.h"
#include "url.h"

/* ---- settings ------------------------------------------------------------ */

static int init(const struct settings *st, struct error *err)
{
	return st->tls ? http_tls_init(err) : 0;
}

static const struct engine_cannot cannot[] = {
	{ CAP_SEVERAL, "several -S: one etcd cluster keeps the lock, its members in one URL" },
	{ CAP_WAIT_REPLICAS, "etcd's writes are on a majority of members already" },
	{ 0, NULL }
};

ENGINE_MODULE_ABI;

const struct engine etcd_engine = {
	.settings = {
		.name = "etcd",
		.flags = CAP_SHARED | CAP_LIMIT | CAP_FAIR | CAP_NO_FORK |
			 CAP_UNAVAILABLE_RUN,
		.cannot = cannot,
		.min_ttl_ms = 1000,
		ENGINE_URL_OPS(etcd, struct etcd_url),
		.url_tls = etcd_url_tls,
		.init = init,
		.end = http_tls_end,
	},
	ENGINE_OPS(etcd),
	ENGINE_WATCH_OPS(etcd),
	ENGINE_HISTORY_OPS(etcd),
	ENGINE_STEPS_OPS(etcd),
	.lock.watch_after_ms = 20,
	.lock.finished = etcd_finished,
	.inspect.list = etcd_list,
	.inspect.force = etcd_force,
};
