/* net.h - TCP connections to a host by name: every address the name has,
 * in getaddrinfo()'s order (RFC 6724's preference), each tried for a
 * bounded time, so that a name whose first address is dead (an IPv6
 * address with no route, a member that drops SYNs) still reaches the next.
 *
 * Looking up and dialling are separate calls: getaddrinfo() blocks beyond
 * any deadline, so an engine looks its names up on the main thread before
 * the lease starts, and dials later, from any thread, either blocking
 * (net_dial) or from an event loop that polls the attempt's descriptor
 * (net_dial_start, net_dial_step). No state outside the structs. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NET_ADDRS_MAX 8		/* addresses kept of one name */
/* The least time one address is given while others are left to try (a
 * round trip across the world, twice); the last one gets all that is
 * left of the deadline. */
#define NET_ADDR_MIN_MS 250

struct net_addr {
	struct sockaddr_storage sa;
	socklen_t len;
};

struct net_addrs {
	struct net_addr addr[NET_ADDRS_MAX];
	size_t n;
};

/* Looks host up (blocking): its stream addresses with port, in the order
 * getaddrinfo() gives them, duplicates dropped, at most NET_ADDRS_MAX.
 * family: AF_UNSPEC, AF_INET or AF_INET6. Returns 0, or -1 with why
 * ("cannot resolve HOST: name or service not known"). */
int net_resolve(const char *host, int port, int family, struct net_addrs *out,
		char *why, size_t whylen);

/* "127.0.0.1:2379", "[::1]:2379". */
const char *net_addr_text(const struct net_addr *a, char *buf, size_t len);

/* One dial: the addresses in turn, one attempt at a time. */
struct net_dial {
	const struct net_addrs *addrs;
	size_t next;		/* the next address to try */
	size_t at;		/* the address of the attempt in progress */
	int fd;			/* its socket, connecting; -1: none */
	int64_t deadline_ms;	/* the whole dial's (absolute, clock.h) */
	int64_t attempt_end_ms;	/* the attempt's */
	int errs[NET_ADDRS_MAX];	/* each address's errno; 0: not tried */
};

/* Starts a dial to a (which must outlive it) by deadline_ms. The first
 * address is tried even when the deadline has passed. Then step. */
void net_dial_start(struct net_dial *d, const struct net_addrs *a,
		    int64_t deadline_ms);
/* Moves the dial on: call it after start, when d->fd polls POLLOUT (or
 * POLLERR, POLLHUP), and at net_dial_wake_ms() at the latest. Returns 1
 * when connected: *fd is the socket (non-blocking, close-on-exec,
 * TCP_NODELAY), the caller's now; 0 while connecting: poll d->fd (it
 * changes from one address to the next) for POLLOUT; -1 when no address
 * connected in time: why says what each did ("connection refused",
 * "[::1]:2379: connection refused, 127.0.0.1:2379: connection timed out"),
 * and nothing is left open. */
int net_dial_step(struct net_dial *d, int *fd, char *why, size_t whylen);
/* When the attempt in progress ends: step then at the latest. */
int64_t net_dial_wake_ms(const struct net_dial *d);
/* Gives the dial up (closes the attempt in progress); safe to repeat. */
void net_dial_end(struct net_dial *d);

/* Waits until fd is ready for events (POLLIN, POLLOUT) or deadline_ms
 * (clock.h) passes, through EINTR. Returns 1 ready (or a hang-up or
 * error on fd, for the next read or write to tell), 0 when the deadline
 * passed first (fd is not polled then), -1 when poll() failed (errno). */
int net_wait(int fd, short events, int64_t deadline_ms);

/* The calling thread's stop descriptor (-1: none): while wait_acquire()
 * waits, a signalfd of the signals that stop dlock. net_wait() and
 * net_dial() return as at their deadline once it is readable, so that a
 * try against a silent server ends at a signal, not at its deadline;
 * engines with their own poll() watch net_stop_fd() too and call
 * net_note_stop() when it ended a wait. The first such end disarms it
 * (net_stop_fd() is -1) until net_take_stop(), which says whether one
 * came: the rest of the try (giving back what it may have set) keeps
 * its deadlines. net_stopped() says whether one came, without taking it:
 * a call that tries one server after another (etcd's members) asks no
 * other once a stop ended its wait on one. */
void net_set_stop_fd(int fd);
int net_stop_fd(void);
void net_note_stop(void);
bool net_take_stop(void);
bool net_stopped(void);

/* The same, blocking until connected or deadline_ms. On -1, errno is
 * the local failure (net_local_failure()) an address met, else 0. */
int net_dial(const struct net_addrs *a, int64_t deadline_ms, int *fd, char *why,
	     size_t whylen);

/* e is this host out of a resource (descriptors, memory, socket
 * buffers), not a server or network that failed: 71 (EX_OSERR), never
 * 69, so never retried as an unreachable server nor a reason for
 * --unavailable run to run the command without the lock. */
bool net_local_failure(int e);
/* The same, of a library that says errno only in strerror()'s words
 * (in our locale): whether msg has them. */
bool net_local_failure_said(const char *msg);
