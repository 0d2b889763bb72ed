/* fanout.c - one request to every node at once, multiplexed with poll() */
#include <errno.h>
#include <poll.h>
#include <sysexits.h>
#include "clock.h"
#include "config.h"
#include "fanout.h"

void fanout_end(struct node *nodes, size_t n_nodes)
{
	for (size_t i = 0; i < n_nodes; i++)
		node_end(&nodes[i]);
}

size_t fanout_round(struct node *nodes, size_t n_nodes, const struct cmd *cmds,
		    int n_cmds, int64_t timeout_ms)
{
	int64_t deadline_ms = clock_now_ms() + timeout_ms;
	size_t n_done = 0;

	for (size_t i = 0; i < n_nodes; i++) {
		node_end(&nodes[i]);
		if (!nodes[i].skip)
			node_begin(&nodes[i], cmds, n_cmds, deadline_ms);
	}
	for (;;) {
		struct pollfd pfd[MAX_SERVERS];
		size_t which[MAX_SERVERS], n_pfd = 0;
		int64_t wait_ms, wake_ms;

		for (size_t i = 0; i < n_nodes; i++) {
			short events = node_events(&nodes[i]);

			if (events) {
				pfd[n_pfd] = (struct pollfd){ node_fd(&nodes[i]), events, 0 };
				which[n_pfd++] = i;
			}
		}
		if (n_pfd == 0)
			break;
		/* the deadline, or sooner the end of a connect attempt on one
		 * of a host's addresses (then the next one is tried) */
		wake_ms = deadline_ms;
		for (size_t k = 0; k < n_pfd; k++)
			if (node_wake_ms(&nodes[which[k]]) < wake_ms)
				wake_ms = node_wake_ms(&nodes[which[k]]);
		wait_ms = wake_ms - clock_now_ms();
		if (poll(pfd, n_pfd, clock_poll_ms(wait_ms)) < 0 &&
		    errno != EINTR)
			break;
		for (size_t k = 0; k < n_pfd; k++)
			if (pfd[k].revents)
				node_step(&nodes[which[k]], pfd[k].revents);
		wait_ms = clock_now_ms();
		for (size_t k = 0; k < n_pfd; k++)
			node_check_deadline(&nodes[which[k]], wait_ms);
	}
	for (size_t i = 0; i < n_nodes; i++)
		n_done += nodes[i].state == NODE_DONE;
	return n_done;
}

static int rank(int exit)
{
	return exit == EX_USAGE ? 4 : exit == EX_NOPERM ? 3 :
	       exit == EX_SOFTWARE ? 2 : 1;
}

const struct error *fanout_worst_error(const struct node *nodes, size_t n_nodes)
{
	const struct error *worst = NULL;

	for (size_t i = 0; i < n_nodes; i++)
		if (nodes[i].state == NODE_FAILED &&
		    (!worst || rank(nodes[i].err.exit) > rank(worst->exit)))
			worst = &nodes[i].err;
	return worst;
}
