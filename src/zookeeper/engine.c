/* engine.c - ZooKeeper behind the engine interface (src/engine.h): its
 * settings (url.c), its lock operations (lock.c) and its inspection
 * (inspect.c), wired; what it cannot do, and why. */
#include "zk.h"

static const struct engine_cannot cannot[] = {
	{ CAP_SEVERAL, "one zk:// URL names the whole ensemble (zk://a:2181,b:2181,c:2181)" },
	{ CAP_WAIT_REPLICAS, "a quorum of the ensemble commits every write already" },
	{ 0, NULL }
};

ENGINE_MODULE_ABI;

const struct engine zookeeper_engine = {
	.settings = {
		.name = "ZooKeeper",
		.flags = CAP_SHARED | CAP_LIMIT | CAP_FAIR | CAP_NO_FORK |
			 CAP_UNAVAILABLE_RUN,
		.cannot = cannot,
		.min_ttl_ms = 1,
		ENGINE_URL_OPS(zk, struct zk_url),
	},
	ENGINE_OPS(zk),
	ENGINE_WATCH_OPS(zk),
	ENGINE_HISTORY_OPS(zk),
	ENGINE_STEPS_OPS(zk),
	.lock.finished = zk_finished,
	.inspect.list = zk_list,
	.inspect.force = zk_force,
};
