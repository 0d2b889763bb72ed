/* scripts.c - the Lua scripts, each headed by its KEYS and ARGV.
 * The SHA-1 beside each body must match it (EVALSHA falls back to EVAL
 * when it does not, at one more round trip): tests/single.bats checks them
 * with SCRIPT EXISTS; recompute with printf %s BODY | sha1sum. */
#include "scripts.h"

/* KEYS[1] lock, KEYS[2] fence counter, KEYS[3] holder info hash
 * ARGV[1] token, ARGV[2] ttl ms, ARGV[3] re-entry token or '',
 * ARGV[4..8] host, pid, user, command, since (ms since the epoch)
 * Returns {1, fence} acquired, {2, fence} re-entered, {0, pttl} held. */
const struct script script_acquire = {
	.name = "acquire",
	.body =
		"if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
		"  local fence = redis.call('INCR', KEYS[2])\n"
		"  redis.call('DEL', KEYS[3])\n"
		"  redis.call('HSET', KEYS[3], 'token', ARGV[1], 'host', ARGV[4], 'pid', ARGV[5],\n"
		"    'user', ARGV[6], 'cmd', ARGV[7], 'since', ARGV[8], 'fence', fence)\n"
		"  redis.call('PEXPIRE', KEYS[3], ARGV[2])\n"
		"  return {1, fence}\n"
		"end\n"
		"if ARGV[3] ~= '' and redis.call('TYPE', KEYS[1]).ok == 'string'\n"
		"    and redis.call('GET', KEYS[1]) == ARGV[3] then\n"
		"  return {2, tonumber(redis.call('GET', KEYS[2]) or '0')}\n"
		"end\n"
		"return {0, redis.call('PTTL', KEYS[1])}\n",
	.sha = "8d9a6fb7dbb71183911739ba95af38576770e4b8",
	.n_keys = 3,
};

/* KEYS[1] lock, KEYS[2] holder info hash; ARGV[1] token, ARGV[2] ttl ms
 * Returns 1 when extended, 0 when the lock is not ours (any more). */
const struct script script_extend = {
	.name = "extend",
	.body =
		"if redis.call('TYPE', KEYS[1]).ok == 'string'\n"
		"    and redis.call('GET', KEYS[1]) == ARGV[1] then\n"
		"  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
		"  redis.call('PEXPIRE', KEYS[2], ARGV[2])\n"
		"  return 1\n"
		"end\n"
		"return 0\n",
	.sha = "5f21fb5f08c143f75b0e10478ed9fcee53d649e1",
	.n_keys = 2,
};

/* KEYS[1] lock, KEYS[2] holder info hash; ARGV[1] token
 * Compare-and-delete, as redis-py, redsync and node-redlock release.
 * Returns 1 when released, 0 when the lock was not ours. */
const struct script script_release = {
	.name = "release",
	.body =
		"if redis.call('TYPE', KEYS[1]).ok == 'string'\n"
		"    and redis.call('GET', KEYS[1]) == ARGV[1] then\n"
		"  redis.call('DEL', KEYS[1], KEYS[2])\n"
		"  return 1\n"
		"end\n"
		"return 0\n",
	.sha = "0af5bf67ba6dc0471c53cbb34bfca83bea374492",
	.n_keys = 2,
};

/* KEYS[1] fence counter; ARGV[1] fence
 * RedLock: raises the counter to ARGV[1] so the next majority, which meets
 * this one on at least one server, counts past it. Returns the new value. */
const struct script script_fence_max = {
	.name = "fence_max",
	.body =
		"local cur = tonumber(redis.call('GET', KEYS[1]) or '0')\n"
		"local want = tonumber(ARGV[1])\n"
		"if cur < want then\n"
		"  redis.call('SET', KEYS[1], ARGV[1])\n"
		"  return want\n"
		"end\n"
		"return cur\n",
	.sha = "416851c4ac73cd6a99c754bfa2aebc70000cb3ff",
	.n_keys = 1,
};
