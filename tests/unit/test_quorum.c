/* test_quorum.c - RedLock majority, drift and validity (src/quorum.h) */
#include <inttypes.h>
#include "quorum.h"
#include "tap.h"

int main(void)
{
	static const size_t majority[][2] = {
		{ 1, 1 }, { 2, 2 }, { 3, 2 }, { 4, 3 }, { 5, 3 }, { 6, 4 }, { 7, 4 },
	};

	for (size_t i = 0; i < sizeof majority / sizeof majority[0]; i++)
		ok(quorum_majority(majority[i][0]) == majority[i][1],
		   "majority of %zu is %zu", majority[i][0], majority[i][1]);
	/* Any two majorities of the same servers share one. */
	size_t disjoint = 0;

	for (size_t n = 1; n <= 32; n++)
		if (2 * quorum_majority(n) <= n)
			disjoint = n;
	ok(disjoint == 0, "two majorities of 1..32 servers always overlap (%zu)",
	   disjoint);

	ok(quorum_drift_ms(30000) == 302, "drift of 30 s is 1%% + 2 ms");
	ok(quorum_drift_ms(10) == 2, "drift of 10 ms is 2 ms");
	ok(quorum_validity_ms(30000, 0) == 29698, "validity after no time");
	ok(quorum_validity_ms(30000, 98) == 29600, "validity after 98 ms");
	ok(quorum_validity_ms(1000, 988) == 0, "nothing left: 1000 - 988 - 12");
	ok(quorum_validity_ms(1000, 2000) < 0, "a round longer than the TTL");
	return done_testing();
}
