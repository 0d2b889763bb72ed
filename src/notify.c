/* notify.c - --notify: READY=1, STATUS=, WATCHDOG=1 and STOPPING=1 for
 * systemd, and with --notify-pass a socket of dlock's for the command.
 *
 * No libsystemd: sd_notify(3) is one datagram on an AF_UNIX socket, and
 * the protocol is stable (systemd's docs/PORTABILITY_AND_STABILITY.md);
 * linking libsystemd would cost every run its loading, for a sendmsg().
 *
 * --notify-pass, for a command that is itself Type=notify: systemd takes
 * notifications from the unit's main process (NotifyAccess=main), which
 * is dlock, holding the lock. So the command gets NOTIFY_SOCKET naming a
 * socket of dlock's (an abstract one), and dlock forwards what it sends,
 * from its own PID: READY=1 then says the lock is held *and* the service
 * is ready. MAINPID= is dropped (the main process must stay dlock, which
 * holds the lock), and so is what needs descriptors (FDSTORE=1, BARRIER=1:
 * none are passed on); its WATCHDOG=1 is forwarded only while the lease
 * is kept, and dlock sends none of its own: the watchdog then watches the
 * service and the lease together. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "notify.h"

/* The process's, as NOTIFY_SOCKET is (see notify.h). */
static struct notifier {
	int fd;			/* connected to NOTIFY_SOCKET; -1: off */
	bool failed;		/* a send failed: said once, then quiet */
	bool watchdog;		/* WATCHDOG_USEC asks for pings, to us */
	bool pass;		/* --notify-pass */
	char waiting[320];	/* the holder last told of */
	/* --notify-pass: the command's socket, and the thread forwarding */
	int proxy_fd, stop_fd;
	pthread_t thread;
	bool started;
	atomic_bool lease_ok;	/* forward the command's WATCHDOG=1 */
} nt = { .fd = -1, .proxy_fd = -1, .stop_fd = -1 };

static void send_text(const char *text)
{
	if (nt.fd < 0 || nt.failed)
		return;
	if (send(nt.fd, text, strlen(text), MSG_NOSIGNAL) < 0) {
		char why[128];

		nt.failed = true;
		snprintf(why, sizeof why, "%s", strerror(errno));
		log_lower_first(why);
		log_line(NULL, "warning: --notify: NOTIFY_SOCKET: %s; no more notifications",
			 why);
	}
}

/* NOTIFY_SOCKET as sd_notify takes it: a path, or '@' for an abstract
 * name. (systemd 254's vsock: addresses are for VMs: not here.) */
static int address(const char *s, struct sockaddr_un *sa, socklen_t *len)
{
	size_t n = strlen(s);

	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	if ((s[0] != '/' && s[0] != '@') || n < 2 || n >= sizeof sa->sun_path)
		return -1;
	memcpy(sa->sun_path, s, n);
	if (s[0] == '@')
		sa->sun_path[0] = '\0';
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
			   (s[0] == '/'));
	return 0;
}

/* The watchdog is ours when WATCHDOG_PID is unset or names us, as
 * sd_watchdog_enabled(3) decides. Returns its period, 0 when none. */
static int64_t watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	char *end;
	long long v;

	if (!usec || !*usec)
		return 0;
	errno = 0;
	v = strtoll(usec, &end, 10);
	if (errno || *end || v <= 0)
		return 0;
	if (pid && *pid) {
		long long p = strtoll(pid, &end, 10);

		if (*end || p != (long long)getpid())
			return 0;
	}
	return v;
}

/* --notify-pass: an abstract socket of ours (autobind: the kernel picks
 * a free name), that the command's NOTIFY_SOCKET names. Only processes of
 * our user (or root) are heard: SO_PASSCRED says who sent. */
static int make_proxy(struct error *err)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa_family_t);
	char name[sizeof sa.sun_path + 1];
	int on = 1;

	nt.proxy_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	nt.stop_fd = eventfd(0, EFD_CLOEXEC);
	sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	if (nt.proxy_fd < 0 || nt.stop_fd < 0 ||
	    setsockopt(nt.proxy_fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) < 0 ||
	    bind(nt.proxy_fd, (struct sockaddr *)&sa, len) < 0 ||
	    getsockname(nt.proxy_fd, (struct sockaddr *)&sa, &(socklen_t){ sizeof sa }) < 0) {
		error_set(err, EX_OSERR, "--notify-pass: socket: %s", strerror(errno));
		return -1;
	}
	/* autobind: a NUL and five hex digits */
	name[0] = '@';
	memcpy(name + 1, sa.sun_path + 1, 5);
	name[6] = '\0';
	if (setenv("NOTIFY_SOCKET", name, 1) < 0) {
		error_set(err, EX_OSERR, "--notify-pass: %s", strerror(errno));
		return -1;
	}
	atomic_store(&nt.lease_ok, true);
	return 0;
}

int notify_init(bool pass, const char *key, int64_t ttl_ms,
		int64_t node_timeout_ms, struct error *err)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t len;
	int64_t usec = watchdog_usec(), needed_ms = ttl_ms / 3 + node_timeout_ms;

	nt.pass = pass;
	if (!path || !*path)
		return 0;	/* not a notify service: nothing to tell */
	if (address(path, &sa, &len) < 0) {
		log_line(key, "warning: --notify: NOTIFY_SOCKET '%s' is no AF_UNIX address; no notifications",
			 path);
	} else if ((nt.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0) {
		error_set(err, EX_OSERR, "--notify: socket: %s", strerror(errno));
		return -1;
	} else if (connect(nt.fd, (struct sockaddr *)&sa, len) < 0) {
		char why[128];

		snprintf(why, sizeof why, "%s", strerror(errno));
		log_lower_first(why);
		log_line(key, "warning: --notify: NOTIFY_SOCKET %s: %s; no notifications",
			 path, why);
		close(nt.fd);
		nt.fd = -1;
	}
	nt.watchdog = nt.fd >= 0 && usec > 0 && !pass;
	if (nt.watchdog && usec / 1000 < needed_ms)
		log_line(key, "warning: --notify: WatchdogSec=%.3gs is shorter than a renewal period and a server's deadline (%.3gs): systemd would stop a unit that works; give it the --ttl at least",
			 (double)usec / 1e6, (double)needed_ms / 1000);
	/* The command's environment: systemd's variables are for dlock */
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_PID");
	if (!pass) {
		unsetenv("WATCHDOG_USEC");
		return 0;
	}
	return nt.fd >= 0 ? make_proxy(err) : 0;
}

static bool is_line(const char *line, size_t len, const char *name)
{
	size_t n = strlen(name);

	return len >= n && memcmp(line, name, n) == 0;
}

/* What of a datagram of the command's is passed on (see the top). */
static size_t filter(char *buf, size_t len)
{
	size_t out = 0;

	for (size_t at = 0; at < len;) {
		char *nl = memchr(buf + at, '\n', len - at);
		size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;
		const char *line = buf + at;
		bool keep = n > 0 && !is_line(line, n, "MAINPID=") &&
			    !is_line(line, n, "FDSTORE") &&
			    !is_line(line, n, "FDNAME=") &&
			    !is_line(line, n, "FDPOLL=") &&
			    !is_line(line, n, "BARRIER=");

		if (keep && is_line(line, n, "WATCHDOG=1") &&
		    !atomic_load(&nt.lease_ok))
			keep = false;
		if (keep) {
			memmove(buf + out, line, n);
			out += n;
			buf[out++] = '\n';
		}
		at += n + 1;
	}
	return out;
}

static void *forward(void *arg)
{
	char buf[4096 + 1], cbuf[CMSG_SPACE(sizeof(struct ucred))];

	for (;;) {
		struct pollfd pfd[2] = { { nt.proxy_fd, POLLIN, 0 },
					 { nt.stop_fd, POLLIN, 0 } };
		struct iovec iov = { buf, sizeof buf - 1 };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
				      .msg_control = cbuf,
				      .msg_controllen = sizeof cbuf };
		struct cmsghdr *c;
		const struct ucred *cred = NULL;
		ssize_t n;
		size_t out;

		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (!(pfd[0].revents & POLLIN))
			continue;
		n = recvmsg(nt.proxy_fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n <= 0)
			continue;
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
					close(((int *)(void *)CMSG_DATA(c))[i]);
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
				cred = (const struct ucred *)(void *)CMSG_DATA(c);
		}
		if (!cred || (cred->uid != geteuid() && cred->uid != 0))
			continue;
		out = filter(buf, (size_t)n);
		if (out > 0)
			out--;	/* the last line's newline */
		buf[out] = '\0';
		if (out > 0)
			send_text(buf);
	}
	return NULL;
}

bool notify_active(void)
{
	return nt.fd >= 0;
}

void notify_waiting(const char *key, const char *who)
{
	char text[512];
	size_t same = strcspn(who, ")");

	if (nt.fd < 0 || strncmp(nt.waiting, who, same) == 0)
		return;
	snprintf(nt.waiting, sizeof nt.waiting, "%s", who);
	snprintf(text, sizeof text, "STATUS=waiting for %s, %.*s%s", key,
		 (int)same, who, who[same] ? ")" : "");
	send_text(text);
}

void notify_holding(const char *keys, const char *fence)
{
	char text[512];

	if (nt.fd < 0)
		return;
	nt.waiting[0] = '\0';
	if (fence && *fence)
		snprintf(text, sizeof text, "STATUS=holding %s, fence %s", keys, fence);
	else
		snprintf(text, sizeof text, "STATUS=holding %s", keys);
	send_text(text);
}

void notify_started(void)
{
	if (nt.fd < 0)
		return;
	if (!nt.pass) {
		send_text("READY=1");
		return;
	}
	if (nt.started || nt.proxy_fd < 0)
		return;
	/* signals stay blocked in it: they are the supervisor's */
	if (pthread_create(&nt.thread, NULL, forward, NULL) == 0)
		nt.started = true;
	else
		log_line(NULL, "warning: --notify-pass: no thread to forward the command's notifications: %s",
			 strerror(errno));
}

void notify_renewed(bool ok)
{
	if (nt.fd < 0)
		return;
	atomic_store(&nt.lease_ok, ok);
	if (ok && nt.watchdog)
		send_text("WATCHDOG=1");
}

static void stop_forwarding(void)
{
	uint64_t one = 1;

	if (!nt.started)
		return;
	nt.started = false;
	(void)!write(nt.stop_fd, &one, sizeof one);
	pthread_join(nt.thread, NULL);
}

void notify_stopping(const char *keys, bool lost)
{
	char text[512];

	if (nt.fd < 0)
		return;
	stop_forwarding();
	snprintf(text, sizeof text, "STOPPING=1\nSTATUS=%s %s", lost ?
		 "lease lost, releasing" : "releasing", keys);
	send_text(text);
}

void notify_end(void)
{
	stop_forwarding();
	if (nt.fd >= 0)
		close(nt.fd);
	if (nt.proxy_fd >= 0)
		close(nt.proxy_fd);
	if (nt.stop_fd >= 0)
		close(nt.stop_fd);
	nt.fd = nt.proxy_fd = nt.stop_fd = -1;
}
