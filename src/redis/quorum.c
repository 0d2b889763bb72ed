/* quorum.c - RedLock arithmetic */
#include "quorum.h"

size_t quorum_majority(size_t n_servers)
{
	return n_servers / 2 + 1;
}

int64_t quorum_drift_ms(int64_t ttl_ms)
{
	return ttl_ms / 100 + 2;
}

int64_t quorum_validity_ms(int64_t ttl_ms, int64_t elapsed_ms)
{
	return ttl_ms - elapsed_ms - quorum_drift_ms(ttl_ms);
}

int64_t quorum_notice_ms(int64_t ttl_ms)
{
	return ttl_ms / 10 > 0 ? ttl_ms / 10 : 1;
}
