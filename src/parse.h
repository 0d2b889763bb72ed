/* parse.h - strict parsers for numbers, durations and signals (pure) */
#pragma once
#include <stdint.h>

#define MAX_SECONDS_MS ((int64_t)315360000 * 1000)	/* ten years */
#define PARSE_SIGNAL_IGNORE 0	/* "ignore" */

/* Seconds -> ms, sub-ms rounded up. Accepts "30", "1.5", ".007".
 * Rejects "", "-1", " 2", "1e3", "0x10", "inf", "nan", "1,5", "1.".
 * Returns 0, or -1 when malformed or above max_ms. */
int parse_seconds(const char *s, int64_t max_ms, int64_t *out_ms);

/* A decimal integer in [min, max]: no sign, space or other base. */
int parse_count(const char *s, long min, long max, long *out);

/* "TERM", "SIGTERM", "15" -> 15; "ignore" -> 0; -1 when unknown. */
int parse_signal(const char *s);
