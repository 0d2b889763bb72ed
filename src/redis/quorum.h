/* quorum.h - RedLock majority and validity arithmetic (pure) */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* N/2+1: any two majorities of the same N servers share a server. */
size_t quorum_majority(size_t n_servers);
/* Clock drift allowance for a lease of ttl_ms: 1 % plus 2 ms (redsync,
 * node-redlock and the RedLock description use the same). */
int64_t quorum_drift_ms(int64_t ttl_ms);
/* How long the lock is ours after a round that took elapsed_ms, counted
 * from the round's start: TTL - elapsed - drift (<= 0: not ours). */
int64_t quorum_validity_ms(int64_t ttl_ms, int64_t elapsed_ms);
/* How long before the validity ends the command is told the lease is
 * gone: a tenth of the TTL (at least 1 ms), time for it to stop while the
 * lock is still ours. A command starts only with more than this left. */
int64_t quorum_notice_ms(int64_t ttl_ms);
