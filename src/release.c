/* release.c - dlock release: one holder by its token, or the lock broken
 * whoever holds it (--force). */
#include <sysexits.h>
#include "commands.h"

int release_main(const struct lock_params *base, const struct command_args *a)
{
	(void)a;
	log_line(base->name, "release: not implemented yet");
	return EX_USAGE;
}
