/* names.c - PostgreSQL: a lock's NAME as the keys the server locks
 * (names.h). Pure: no I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "names.h"
#include "show.h"

char *pg_key_text(const char *prefix, const char *name)
{
	char *key;

	if (asprintf(&key, "%s%s", prefix, name) < 0)
		return NULL;
	return key;
}

int pg_name_check(const char *key, char *why, size_t len)
{
	long at = show_not_utf8(key, strlen(key));

	if (at < 0)
		return 0;
	snprintf(why, len, "PostgreSQL hashes a lock's name as text, and this one is not UTF-8 (byte 0x%02x at %ld)",
		 (unsigned char)key[at], at);
	return -1;
}

int pg_call(char *out, size_t len, const char *fn, bool shared, long slot)
{
	const char *suffix = shared ? "_shared" : "";

	if (slot <= 0)
		return snprintf(out, len, "%s%s(" PG_KEY_OF ")", fn, suffix);
	/* two ints: the halves of the name's hash seeded with the slot */
	return snprintf(out, len, "%s%s((hashtextextended($1, %ld) >> 32)::int, "
			"(hashtextextended($1, %ld) << 32 >> 32)::int)", fn, suffix, slot, slot);
}
