#!/usr/bin/env bats
# interop3.bats - dlock and the multi-server Redis lock clients exclude each
# other on three servers: node-redlock (npm redlock 5 over ioredis) and a
# redsync-style client (Go redsync's SET NX PX and its delete script, sent
# with redis-cli). The npm modules come from NODE_PATH (.ci/run installs
# them); without them the node tests skip, or fail under DLOCK_TEST_STRICT.

load helpers
load modes_helpers

# redsync v4's delete script, as go-redsync/redsync's scripts.go has it
REDSYNC_DELETE='local val = redis.call("GET", KEYS[1])
if val == ARGV[1] then
	return redis.call("DEL", KEYS[1])
elseif val == false then
	return -1
else
	return 0
end'

setup() {
	common_setup
	servers 3
	cat >"$T/nodelock.js" <<'EOF'
// nodelock MODE P SOCK...: node-redlock on the servers' unix sockets, on
// the resource dlock:K.
//   hold: acquire (no retries), touch P.ready, release once P.release
//         exists (60 s at most)
//   try:  print whether an acquire without retries succeeded (then release)
const fs = require("fs");
const Redis = require("ioredis");
const Redlock = require("redlock").default;
const [mode, p, ...socks] = process.argv.slice(2);
const clients = socks.map((path) => new Redis({ path, lazyConnect: false }));
// a connection that ends while quit() is under way is no failure of ours
clients.forEach((c) => c.on("error", () => {}));
const redlock = new Redlock(clients, { retryCount: 0 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function main() {
	let lock;
	try {
		lock = await redlock.acquire(["dlock:K"], 30000);
	} catch (e) {
		if (mode === "try") {
			console.log("false");
			return 0;
		}
		console.error("nodelock: could not acquire dlock:K: " + e.message);
		return 1;
	}
	if (mode === "try") {
		console.log("true");
	} else {
		fs.writeFileSync(p + ".value", lock.value);
		fs.closeSync(fs.openSync(p + ".ready", "w"));
		const end = Date.now() + 60000;
		while (!fs.existsSync(p + ".release") && Date.now() < end)
			await sleep(50);
	}
	// release() returns once a majority released; the last server's
	// reply may still be on its way: wait for every vote, then quit()
	// (which sends what is queued), not disconnect() (which drops it).
	const result = await lock.release();
	await Promise.all(result.attempts);
	return 0;
}
main().then(async (rc) => {
	await Promise.all(clients.map((c) => c.quit().catch(() => {})));
	process.exitCode = rc;
});
EOF
}

socks() { local s; for s in "${NAMES[@]}"; do sock "$s"; done; }

need_node() {
	command -v node >/dev/null || skip_unless_strict "no node"
	node -e 'require("redlock"); require("ioredis")' 2>/dev/null ||
		skip_unless_strict "node has no redlock and ioredis modules (NODE_PATH=${NODE_PATH:-})"
}

# node_hold ID: node-redlock holds dlock:K on the three servers
node_hold() {
	node "$T/nodelock.js" hold "$T/$1" $(socks) </dev/null 3>&- 2>"$T/$1.err" &
	echo $! >"$T/$1.node"
	track $!
	wait_until 10 test -e "$T/$1.ready" || fail "node-redlock did not get the lock: $(cat "$T/$1.err")"
}

# node_release ID: it releases, and ends
node_release() {
	local pid; pid=$(<"$T/$1.node")
	touch "$T/$1.release"
	wait_until 10 dead "$pid" || fail "node-redlock did not finish"
	wait "$pid" || fail "node-redlock failed: $(cat "$T/$1.err")"
}

@test "node-redlock holding on 3 servers keeps dlock out, then lets it in" {
	need_node
	node_hold n
	every_server "$(<"$T/n.value")" get dlock:K
	run -1 dlock "${SRV[@]}" -n K touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran beside node-redlock's lock"
	every_server "$(<"$T/n.value")" get dlock:K	# and left it alone
	node_release n
	run -0 dlock "${SRV[@]}" -n K touch "$T/ran"
	[[ -e $T/ran ]] || fail "the command did not run"
	nothing_left
}

@test "dlock holding on 3 servers keeps node-redlock out, also when shared" {
	need_node
	local flag
	for flag in -x -s; do
		hold h "${SRV[@]}" "$flag" K
		wait_ready h
		run -0 node "$T/nodelock.js" try "$T/n" $(socks)
		assert_output false
		finish h
		assert_equal "$bg_status" 0
		rm -f "$T/h.ready" "$T/h.release"
	done
	run -0 node "$T/nodelock.js" try "$T/n" $(socks)
	assert_output true
}

@test "a waiting dlock gets in when node-redlock releases (no wake-up pushed)" {
	need_node
	node_hold n
	start_bg w "${SRV[@]}" -w 15 K touch "$T/w.ran"
	wait_until 5 blocked_all 1 || fail "the waiter never blocked: $(cat "$T/w.err")"
	[[ ! -e $T/w.ran ]] || fail "the waiter ran beside node-redlock"
	local t0; t0=$(now_ms)
	node_release n
	reap w 10
	assert_equal "$bg_status" 0
	[[ -e $T/w.ran ]] || fail "the command did not run"
	echo "# in $(($(now_ms) - t0)) ms after node-redlock's release" >&3
	nothing_left
}

@test "redsync-style holder on 3 servers: dlock refused; its delete script lets dlock in" {
	local s
	for s in "${NAMES[@]}"; do
		assert_equal "$(rcli "$s" set dlock:K gotoken42 NX PX 30000)" OK
	done
	run -1 dlock "${SRV[@]}" -n K touch "$T/ran"
	[[ ! -e $T/ran ]] || fail "the command ran beside redsync's lock"
	every_server gotoken42 get dlock:K
	for s in "${NAMES[@]}"; do
		assert_equal "$(rcli "$s" eval "$REDSYNC_DELETE" 1 dlock:K gotoken42)" 1
	done
	run -0 dlock "${SRV[@]}" -n K touch "$T/ran"
	[[ -e $T/ran ]] || fail "the command did not run"
}

@test "dlock holding: redsync's SET NX fails, and its delete with another value leaves the lock" {
	hold h "${SRV[@]}" K
	wait_ready h
	local s token; token=$(job_var h DLOCK_TOKEN)
	for s in "${NAMES[@]}"; do
		assert_equal "$(rcli "$s" set dlock:K gotoken42 NX PX 30000)" ''
		assert_equal "$(rcli "$s" eval "$REDSYNC_DELETE" 1 dlock:K gotoken42)" 0
	done
	every_server "$token" get dlock:K
	finish h
	assert_equal "$bg_status" 0
	for s in "${NAMES[@]}"; do	# free for redsync now
		assert_equal "$(rcli "$s" set dlock:K gotoken42 NX PX 30000)" OK
	done
}
