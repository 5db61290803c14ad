/* SPDX-License-Identifier: MIT */
/* fork/exec with both output streams captured (polled, so neither blocks). */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdio.h"
#include "file.h"

struct buf {
	char *data;
	size_t len, cap;
};

static int buf_read(int fd, struct buf *b)
{
	if (b->cap - b->len < 4096) {
		size_t cap = b->cap ? b->cap * 2 : 65536;
		char *d = realloc(b->data, cap);

		if (!d)
			return -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	ssize_t n = read(fd, b->data + b->len, b->cap - b->len - 1);

	if (n < 0)
		return errno == EINTR ? 1 : -errno;
	b->len += (size_t)n;
	b->data[b->len] = '\0';
	return n > 0;
}

static int spawn_capture(char *const argv[], uid_t uid, struct run_result *ret)
{
	int out[2], err[2], status;
	struct buf bo = { 0 }, be = { 0 };
	struct pollfd pfd[2];
	pid_t pid;

	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		dup2(devnull, 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (uid != (uid_t)-1 &&
		    (setgroups(0, NULL) < 0 || setgid(uid) < 0 ||
		     setuid(uid) < 0))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	pfd[0] = (struct pollfd){ .fd = out[0], .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = err[0], .events = POLLIN };
	while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			if (buf_read(pfd[i].fd, i ? &be : &bo) <= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
			}
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	ret->status = WIFEXITED(status) ? WEXITSTATUS(status) :
					  128 + WTERMSIG(status);
	ret->out = bo.data ? bo.data : strdup("");
	ret->err = be.data ? be.data : strdup("");
	return 0;
}

/*
 * A copy of the program at path in a new directory under /tmp that every
 * user may search (mode 0755), for a child that runs as another user: the
 * build tree may sit under a directory only root can enter (a clone in
 * /root, mode 0700). The copy's path into copy; nothing is left behind
 * on failure.
 */
static int copy_reachable(const char *path, char *copy, size_t len)
{
	char dir[] = "/tmp/fleetbench-run-XXXXXX";
	char *data = NULL;
	ssize_t n;
	int fd, r = 0;

	n = read_full_file(path, 256u << 20, &data);
	if (n < 0)
		return (int)n;
	if (!mkdtemp(dir)) {
		free(data);
		return -errno;
	}
	snprintf(copy, len, "%s/%s", dir,
		 strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
	fd = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (fd < 0 || fd_write_all(fd, data, (size_t)n) < 0 ||
	    chmod(dir, 0755) < 0)
		r = errno ? -errno : -EIO;
	if (fd >= 0)
		close(fd);
	free(data);
	if (r < 0) {
		unlink(copy);
		rmdir(dir);
	}
	return r;
}

/* Removes copy_reachable()'s copy and its directory. */
static void copy_remove(char *copy)
{
	unlink(copy);
	*strrchr(copy, '/') = '\0';
	rmdir(copy);
}

int run_program(char *const argv[], uid_t uid, struct run_result *ret)
{
	char copy[4096], **av;
	size_t n = 0;
	int r;

	if (uid == (uid_t)-1)
		return spawn_capture(argv, uid, ret);
	while (argv[n])
		n++;
	av = calloc(n + 1, sizeof(*av));
	if (!av)
		return -ENOMEM;
	r = copy_reachable(argv[0], copy, sizeof(copy));
	if (r == 0) {
		memcpy(av, argv, n * sizeof(*av));
		av[0] = copy;
		r = spawn_capture(av, uid, ret);
		copy_remove(copy);
	}
	free(av);
	return r;
}

void run_result_release(struct run_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}
