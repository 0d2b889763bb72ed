/* clock.h - monotonic milliseconds: every deadline in dlock is one of these */
#pragma once
#include <stdint.h>

int64_t clock_now_ms(void);
int64_t clock_wall_ms(void);	/* for "since" in holder info only */
