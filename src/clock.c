/* clock.c - the only clock_gettime calls, and timers on the same clock */
#include <limits.h>
#include <time.h>
#include <sys/timerfd.h>
#include "clock.h"

int64_t clock_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int clock_poll_ms(int64_t ms)
{
	if (ms <= 0)
		return 0;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

int clock_timer(void)
{
	return timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
}

int clock_arm(int timer_fd, int64_t at_ms)
{
	struct itimerspec its = { 0 };

	/* 0 would disarm: a deadline already past fires at once instead. */
	if (at_ms == 0)
		at_ms = 1;
	if (at_ms > 0)
		its.it_value = (struct timespec){ at_ms / 1000, (at_ms % 1000) * 1000000 };
	return timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}
