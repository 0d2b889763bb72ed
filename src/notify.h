/* notify.h - --notify: systemd's notification protocol, without libsystemd
 *
 * One datagram of "NAME=value" lines on the AF_UNIX socket NOTIFY_SOCKET
 * names (a path, or '@' for an abstract name), as sd_notify(3) sends it.
 * The state is the process's, as NOTIFY_SOCKET is: set up once by main()
 * before any thread, then sent to from the main thread, the renewal hook
 * (main thread) and, with --notify-pass, a thread of its own. Every call is
 * a no-op when --notify was not given or NOTIFY_SOCKET is not set. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "log.h"

/* --notify (pass: --notify-pass) for a lease of ttl_ms renewed every
 * ttl_ms/3, each round bounded by node_timeout_ms. Reads NOTIFY_SOCKET,
 * WATCHDOG_USEC and WATCHDOG_PID and takes them out of the environment the
 * command will get; with pass, the command's NOTIFY_SOCKET is a socket of
 * dlock's instead (notify_started() forwards what comes there). Returns 0,
 * or -1 with err (71) when no socket could be made. */
int notify_init(bool pass, const char *key, int64_t ttl_ms,
		int64_t node_timeout_ms, struct error *err);
/* Whether there is a NOTIFY_SOCKET to tell. */
bool notify_active(void);
/* STATUS=waiting for KEY, held by ... (sent again only when the holder
 * changes; who is waitline_describe()'s text) */
void notify_waiting(const char *key, const char *who);
/* STATUS=holding KEY, fence N (fence "" or NULL: none) */
void notify_holding(const char *keys, const char *fence);
/* The command started: READY=1 (with pass, the command's own READY=1 is
 * forwarded instead, whenever it sends it) */
void notify_started(void);
/* A renewal round's result: WATCHDOG=1 after one that kept the lease,
 * when WATCHDOG_USEC asks (and, with pass, the command's are forwarded
 * only while the lease is kept). */
void notify_renewed(bool ok);
/* STOPPING=1, and STATUS= saying why: the job is over (lost: its lease
 * was lost, why says how). Stops forwarding the command's lines. */
void notify_stopping(const char *keys, bool lost);
/* Closes what notify_init() opened. */
void notify_end(void);
