/* SPDX-License-Identifier: MIT */
/*
 * Service names: the socket address a name stands for, and binding it.
 *
 * A name that starts with '/' or '.' is a path in the file system; any
 * other is abstract ("bypass-ipc:" or "bypass-lib:" + the name), and an
 * abstract name vanishes with the last socket bound to it.  A path stays
 * behind when its server is killed: bp_ipc_bind then finds it taken
 * (EADDRINUSE), checks that it is a socket no server holds any more,
 * removes it and binds again.  A socket where a server listens,
 * or anything that is not a socket, is left alone (-EADDRINUSE).  Two
 * servers that start on the same stale path at the same moment can both
 * see it stale; the second to bind then replaces the first's socket (the
 * first keeps running, unreachable by that name): start one server per
 * name.
 */
#include "ipc/ipc_internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define NAME_MAX_LEN 100

/*
 * Fill a sockaddr for name; returns its length or -EINVAL.  lib: the
 * library-mode socket beside it (lib.h): "bypass-lib:" + name in the
 * abstract namespace, or the path with ".lib" appended.
 */
int bp_ipc_make_addr(const char *name, bool lib, struct sockaddr_un *sa, bool *is_path)
{
	if (!name || !*name)
		return -EINVAL;
	size_t n = strlen(name);
	if (n > NAME_MAX_LEN)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (name[0] == '/' || name[0] == '.') {
		memcpy(sa->sun_path, name, n);
		if (lib) {
			memcpy(sa->sun_path + n, ".lib", 4);
			n += 4;
		}
		*is_path = true;
		return (int)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	}
	/* Both prefixes are 11 bytes: the same names fit either socket. */
	const char *pfx = lib ? "bypass-lib:" : "bypass-ipc:";
	size_t pl = strlen(pfx);
	/* A NUL, the prefix and the name must fit in sun_path: 96 bytes. */
	if (n > sizeof(sa->sun_path) - pl - 1)
		return -EINVAL;
	memcpy(sa->sun_path + 1, pfx, pl);
	memcpy(sa->sun_path + 1 + pl, name, n);
	*is_path = false;
	return (int)(offsetof(struct sockaddr_un, sun_path) + 1 + pl + n);
}

/*
 * No socket is bound at sa's path any more (its server is gone).  Asked
 * with a datagram socket: the kernel answers EPROTOTYPE while a stream
 * socket is bound there (listening or about to), ECONNREFUSED when none
 * is, and no connection is ever queued on a live server.
 */
static bool stale(const struct sockaddr_un *sa, int alen)
{
	struct stat st;
	if (lstat(sa->sun_path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	int s = bp_sys_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return false;
	int r = bp_sys_connect(s, (const struct sockaddr *)sa, (socklen_t)alen);
	int e = errno;
	bp_sys_close(s);
	return r < 0 && e == ECONNREFUSED;
}

int bp_ipc_bind(int fd, const struct sockaddr_un *sa, int alen, bool is_path)
{
	if (bp_sys_bind(fd, (const struct sockaddr *)sa, (socklen_t)alen) == 0)
		return 0;
	int e = errno;
	if (e != EADDRINUSE || !is_path || !stale(sa, alen))
		return -e;
	bp_info("bypass: ipc: %s: no server listens there: the stale socket is removed",
		sa->sun_path);
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return -EADDRINUSE;
	return bp_sys_bind(fd, (const struct sockaddr *)sa, (socklen_t)alen) == 0 ? 0 : -errno;
}
