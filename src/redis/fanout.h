/* fanout.h - one round of commands sent to every server at once */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "conn.h"

/* Sends cmds to every node in parallel and collects the replies, each node
 * with its own deadline (now + timeout_ms): a hung server costs one
 * deadline, a refused one nothing. Returns how many nodes answered every
 * command (state NODE_DONE; replies in node->replies, errors in node->err).
 * The replies stay until the next round or fanout_end(). Nodes marked
 * skip sit the round out. */
size_t fanout_round(struct node *nodes, size_t n_nodes, const struct cmd *cmds,
		    int n_cmds, int64_t timeout_ms);
void fanout_end(struct node *nodes, size_t n_nodes);
/* The most telling error among failed nodes: credentials (77) over
 * unexpected replies (70) over unreachable (69), a clash of modes (64)
 * above all. NULL when none failed. */
const struct error *fanout_worst_error(const struct node *nodes, size_t n_nodes);
