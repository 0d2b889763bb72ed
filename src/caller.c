/* caller.c - the process a lock of the descriptor form is held for, as
 * /proc tells it: our parent, or with --export the shell that reads our
 * output; its ancestors; its command line (keeper.c). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "caller.h"

bool caller_proc_is_ours(void)
{
	char buf[32];
	ssize_t n = readlink("/proc/self", buf, sizeof buf - 1);
	int pid;

	if (n <= 0)
		return false;
	buf[n] = '\0';
	return sscanf(buf, "%d", &pid) == 1 && pid == (int)getpid();
}

/* The parent of pid, from /proc; 0 when it cannot be told. */
pid_t caller_parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int ppid = 0;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the command's name may hold anything */
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

/* The caller's command line, for the holder info: whose the lock is. */
void caller_command(pid_t caller, int fd, char *out, size_t len)
{
	char path[64], buf[200];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)caller);
	f = fopen(path, "re");
	if (f) {
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
	}
	for (size_t i = 0; i + 1 < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	snprintf(out, len, "%s (dlock %d)", n ? buf : "?", fd);
}

/* The pipe our standard output is, as /proc names it ("pipe:[123]"); ""
 * when it is none. */
static void stdout_pipe(char *name, size_t len)
{
	struct stat sb;
	ssize_t n = -1;

	if (fstat(STDOUT_FILENO, &sb) == 0 && S_ISFIFO(sb.st_mode))
		n = readlink("/proc/self/fd/1", name, len - 1);
	name[n > 0 ? n : 0] = '\0';
}

/* Whether descriptor fd (a name in /proc/PID/fd) of pid is open for
 * reading only: the read end of a pipe. */
static bool read_end(pid_t pid, const char *fd)
{
	char path[300], line[128];
	unsigned flags = O_WRONLY;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/fdinfo/%s", (int)pid, fd);
	if (!(f = fopen(path, "re")))
		return false;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "flags: %o", &flags) == 1)
			break;
	fclose(f);
	return (flags & O_ACCMODE) == O_RDONLY;
}

/* Whether pid reads the pipe of that name ("pipe:[123]"). */
static bool reads_pipe(pid_t pid, const char *pipe_name)
{
	char dir[64], link[600], target[256];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	if (!(d = opendir(dir)))
		return false;
	while (!found && (e = readdir(d))) {
		ssize_t n;

		snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
		n = readlink(link, target, sizeof target - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		found = strcmp(target, pipe_name) == 0 && read_end(pid, e->d_name);
	}
	closedir(d);
	return found;
}

/* The process whose life the lock lasts: our parent, the shell that runs
 * dlock FD. With --export, the shell that reads our standard output to
 * eval it. In $(dlock --export 9) shells run dlock as their own child, but
 * bash forks a subshell in between when the command has a redirection
 * ($(dlock --export 9 2>/dev/null)), which exits with dlock: the lock
 * would go with it. So the nearest ancestor that reads the pipe our
 * stdout is; 0 when none does (a pipe to another command: whose lock
 * would it be?). */
pid_t caller_find(bool export_vars)
{
	char pipe_name[256];
	pid_t p = getppid();

	if (!export_vars)
		return p;
	stdout_pipe(pipe_name, sizeof pipe_name);
	if (!pipe_name[0])
		return p;
	for (int depth = 0; p > 1 && depth < 64; p = caller_parent_of(p), depth++)
		if (reads_pipe(p, pipe_name))
			return p;
	return 0;
}

bool caller_is_ancestor(pid_t pid)
{
	for (pid_t p = getppid(), depth = 0; p > 1 && depth < 64;
	     p = caller_parent_of(p), depth++)
		if (p == pid)
			return true;
	return false;
}
