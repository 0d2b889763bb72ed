/* parse.c - strict parsers for numbers, durations and signals (pure:
 * unit-tested, fuzzed). atoi() and strtod() accept far too much: flock
 * takes `-w inf`, then fails with 71. */
#include <ctype.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include "parse.h"

int parse_seconds(const char *s, int64_t max_ms, int64_t *out_ms)
{
	const char *p = s;
	int64_t ms = 0;
	int n_digits = 0;

	for (; isdigit((unsigned char)*p); p++, n_digits++) {
		ms = ms * 10 + (*p - '0');
		if (ms > max_ms / 1000 + 1)
			return -1;
	}
	ms *= 1000;
	if (*p == '.') {
		int64_t scale = 100;
		bool round_up = false;

		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		for (; isdigit((unsigned char)*p); p++, n_digits++) {
			if (scale > 0)
				ms += (*p - '0') * scale;
			else if (*p != '0')
				round_up = true;
			scale /= 10;
		}
		ms += round_up;
	}
	if (n_digits == 0 || *p != '\0' || ms > max_ms)
		return -1;
	*out_ms = ms;
	return 0;
}

int parse_count(const char *s, long min, long max, long *out)
{
	long v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		v = v * 10 + (*p - '0');
		if (v > max)
			return -1;
	}
	if (*p != '\0' || v < min)
		return -1;
	*out = v;
	return 0;
}

int parse_signal(const char *s)
{
	long n;

	if (strcmp(s, "ignore") == 0)
		return PARSE_SIGNAL_IGNORE;
	if (parse_count(s, 1, NSIG - 1, &n) == 0)
		return (int)n;
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (int sig = 1; sig < NSIG; sig++) {
		const char *name = sigabbrev_np(sig);

		if (name && strcasecmp(s, name) == 0)
			return sig;
	}
	return -1;
}
