/* clock.h - milliseconds on CLOCK_BOOTTIME: every deadline in dlock is one
 * of these. Unlike CLOCK_MONOTONIC it counts time spent in system suspend,
 * as the servers' lease timers do. */
#pragma once
#include <stdint.h>

int64_t clock_now_ms(void);
int64_t clock_wall_ms(void);	/* for "since" in holder info only */
/* ms as poll()'s timeout: negative means 0, and nothing overflows int
 * (a deadline 30 days away waits INT_MAX ms, then is looked at again). */
int clock_poll_ms(int64_t ms);
/* A timerfd on the same clock; clock_arm() sets it to fire at at_ms
 * (absolute), or disarms it when at_ms < 0. Return 0 or -1 (errno). */
int clock_timer(void);
int clock_arm(int timer_fd, int64_t at_ms);
