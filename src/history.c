/* history.c - dlock history: a lock's last events, merged from the
 * servers that answer. */
#include <sysexits.h>
#include "commands.h"

int history_main(const struct lock_params *base, const struct command_args *a)
{
	(void)a;
	log_line(base->name, "history: not implemented yet");
	return EX_USAGE;
}
