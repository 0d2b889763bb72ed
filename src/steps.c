/* steps.c - a lock held across separate processes, for pipelines:
 * dlock acquire, dlock extend (dlock release is in release.c). */
#include <sysexits.h>
#include "commands.h"

int acquire_main(const struct lock_params *base, const struct command_args *a)
{
	(void)a;
	log_line(base->name, "acquire: not implemented yet");
	return EX_USAGE;
}

int extend_main(const struct lock_params *base, const struct command_args *a)
{
	(void)a;
	log_line(base->name, "extend: not implemented yet");
	return EX_USAGE;
}
