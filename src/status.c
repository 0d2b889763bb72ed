/* status.c - dlock status and dlock history: what the servers say of a
 * lock, as a table or as JSON. */
#include <sysexits.h>
#include "commands.h"

int status_main(const struct lock_params *base, const struct command_args *a)
{
	(void)a;
	log_line(base->name, "status: not implemented yet");
	return EX_USAGE;
}

int history_main(const struct lock_params *base, const struct command_args *a)
{
	(void)a;
	log_line(base->name, "history: not implemented yet");
	return EX_USAGE;
}
