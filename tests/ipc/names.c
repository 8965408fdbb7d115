/* SPDX-License-Identifier: MIT */
/*
 * names: service names at their limits.  A file-system path may have up to
 * 100 bytes; a name in the abstract namespace (stored after a NUL and the
 * "bypass-ipc:" prefix in the 108 bytes of sun_path) up to 96.  The longest
 * of each connect and talk; one byte more is -EINVAL from listen and
 * connect, without writing past the socket address (AddressSanitizer).
 */
#include "util.h"

static void roundtrip(const char *name)
{
	bypass_ipc_service *svc;
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		bypass_ipc_conn *c = test_connect(name, NULL);
		CHECK_ERR(bypass_ipc_send(c, "n", 2, BYPASS_FOREVER), 0);
		CHECK_ERR(bypass_ipc_close(c), 0);
		_exit(0);
	}
	bypass_ipc_conn *s = test_accept(svc);
	struct bypass_ipc_msg m;
	CHECK_ERR(bypass_ipc_recv(s, &m, BYPASS_FOREVER), 0);
	CHECK_ERR(bypass_ipc_release(s, &m), 0);
	wait_child(pid);
	CHECK_ERR(bypass_ipc_close(s), 0);
	CHECK_ERR(bypass_ipc_service_close(svc), 0);
}

static void refused(const char *name)
{
	bypass_ipc_service *svc = NULL;
	bypass_ipc_conn *c = NULL;
	CHECK_ERR(bypass_ipc_listen(name, NULL, &svc), -EINVAL);
	CHECK_ERR(bypass_ipc_connect(name, NULL, &c), -EINVAL);
	CHECK(svc == NULL && c == NULL);
}

int main(void)
{
	test_timeout(30);
	int fds = test_count_fds();
	char name[128];

	/* Abstract names: 96 bytes work, 97 and 100 do not. */
	test_svc_name(name, sizeof(name), "names");
	size_t n = strlen(name);
	memset(name + n, 'a', 96 - n);
	name[96] = 0;
	roundtrip(name);
	name[96] = 'a';
	name[97] = 0;
	refused(name);
	memset(name + 97, 'a', 3);
	name[100] = 0;
	refused(name);

	/* Paths: 100 bytes work, 101 do not. */
	n = (size_t)snprintf(name, sizeof(name), "/tmp/bypass-names-%d-", (int)getpid());
	memset(name + n, 'p', 100 - n);
	name[100] = 0;
	roundtrip(name);
	CHECK(access(name, F_OK) < 0 && errno == ENOENT); /* unlinked at close */
	name[100] = 'p';
	name[101] = 0;
	refused(name);

	CHECK_EQ(test_count_fds(), fds);
	return test_pass("ipc/names");
}
