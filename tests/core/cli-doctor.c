/* SPDX-License-Identifier: MIT */
/*
 * cli-doctor: `bypass doctor` says what the library itself detects.  Runs
 * the command (--json and the text form) and checks each answer against the
 * library's own probe, called here in the same process: io_uring (a ring
 * made as the modules make theirs), userfaultfd and its SIGBUS and write-protect features
 * (the pager's bp_uffd_features_available), IORING_OP_EPOLL_WAIT (batch's
 * bp_bt_merged_wait_available and the opcode probe), protection keys (bypass_ipc_pkey_supported),
 * user interrupts (core's bp_uintr_available, which must say no today: no
 * data path; notify has no such backend); the text
 * and JSON forms agree line by line; a bad option is exit 2.  Then the
 * "why not" side: under a seccomp filter that refuses io_uring_setup and
 * userfaultfd with EPERM (as a container's profile does), doctor says no to
 * io_uring, every opcode, userfaultfd and its features, batch and the pager,
 * each with the reason.  And the pager's two modes as the pager itself
 * answers (bypass_pager_create in upcall and in handler mode), as root and,
 * dropped to nobody, where handler mode needs a privilege it lacks.
 *
 * The swap line reads /proc/swaps, which other tests change while this one
 * runs (the pager benchmark's baseline and pager tests add and remove swap
 * areas): as root the test runs in a private mount namespace with a fixed
 * /proc/swaps of two areas bind-mounted over the real one, so every doctor
 * run here reads the same file, and the swap line must say what that file
 * holds.  Where it cannot (not root, no mount namespace) the swap line is
 * left out of the text/JSON agreement, and said so.
 */
#include <bypass/bypass.h>
#include <linux/userfaultfd.h>
#include <stddef.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include "harness.h"
#include "core/internal.h"
#include "core/testutil.h"
#include <liburing.h>
#if BYPASS_WITH_BATCH
#include "batch/batch_internal.h"
#endif
#if BYPASS_WITH_PAGER
#include "pager/pager_internal.h"
#endif

static char json[65536], text[65536];

/* Two areas: 1 GiB and 512 MiB, which doctor sums to 1536 MiB. */
static const char pinned_swaps[] =
	"Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
	"/bypass-cli-doctor.swap                 file\t\t1048576\t\t0\t\t-2\n"
	"/dev/bypass-cli-doctor                  partition\t524288\t\t0\t\t-3\n";

/* /proc/swaps pinned to pinned_swaps for this process and the doctor runs
 * it starts: 1 when pinned, 0 when it cannot be (and nothing changed
 * outside this process). */
static int pin_swaps(void)
{
	if (geteuid() != 0 || unshare(CLONE_NEWNS))
		return 0;
	/* private: the bind mount below must not reach the machine's namespace */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 0;
	char path[] = "/tmp/bypass-cli-doctor-swaps.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 0;
	int ok = write(fd, pinned_swaps, sizeof(pinned_swaps) - 1) ==
			 (ssize_t)(sizeof(pinned_swaps) - 1) &&
		 fchmod(fd, 0444) == 0;
	close(fd);
	ok = ok && mount(path, "/proc/swaps", NULL, MS_BIND, NULL) == 0;
	unlink(path); /* the mount keeps the file */
	return ok;
}

static int run(const char *args, char *out, size_t len)
{
	const char *build = getenv("BYPASS_BUILD");
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "'%s/bypass' %s 2>/dev/null", build, args);
	FILE *f = popen(cmd, "r");
	CHECK(f);
	size_t n = fread(out, 1, len - 1, f);
	out[n] = 0;
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* run("doctor --json") in a child whose io_uring_setup and userfaultfd fail
 * with EPERM; 0 when done, -1 when this machine cannot filter. */
static int run_refused(char *out, size_t len)
{
#if defined(__x86_64__)
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		static const int nrs[] = { __NR_io_uring_setup, __NR_userfaultfd };
		if (test_seccomp_refuse(nrs, 2, EPERM))
			_exit(77);
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		char path[4096];
		snprintf(path, sizeof(path), "%s/bypass", getenv("BYPASS_BUILD"));
		execl(path, path, "doctor", "--json", (char *)NULL);
		_exit(126);
	}
	close(pfd[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < len && (r = read(pfd[0], out + n, len - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = 0;
	close(pfd[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		return -1;
	CHECK_EQ(WEXITSTATUS(st), 0);
	return 0;
#else
	(void)out;
	(void)len;
	return -1;
#endif
}

/* The detail of check name in the JSON, or "". */
static const char *json_detail(const char *name, char *buf, size_t len)
{
	char key[96];
	snprintf(key, sizeof(key), "{\"name\": \"%s\", ", name);
	const char *p = strstr(json, key);
	buf[0] = 0;
	if (!p || !(p = strstr(p, "\"detail\": \"")))
		return buf;
	p += 11;
	size_t l = strcspn(p, "\"");
	if (l >= len)
		l = len - 1;
	memcpy(buf, p, l);
	buf[l] = 0;
	return buf;
}

static void expect(const char *name, int want);

#if BYPASS_WITH_PAGER
/* doctor's pager lines against bypass_pager_create in both modes, here. */
static void pager_agrees(void)
{
	CHECK_EQ(run("doctor --json", json, sizeof(json)), 0);
	struct bypass_pager_config c = {
		.budget = 16 * 4096, .swap_path = "/tmp", .swap_size = 64 * 4096,
		.mode = BYPASS_PAGER_UPCALL, .flags = BYPASS_PAGER_SWAP_TEMP,
	};
	bypass_pager *p;
	int r = bypass_pager_create(&c, &p);
	expect("pager.upcall", r == 0);
	if (!r)
		bypass_pager_destroy(p);
	c.mode = BYPASS_PAGER_HANDLER;
	r = bypass_pager_create(&c, &p);
	expect("pager.handler", r == 0);
	if (!r)
		bypass_pager_destroy(p);
	/* pager.heap against the built preload: only its jemalloc build
	 * exports malloc_conf (preload/pager/heap.c) */
	char cmd[4096], out[256];
	snprintf(cmd, sizeof(cmd),
		 "test -e '%1$s/libbypass-pager.so' && command -v nm >/dev/null && "
		 "{ nm -D --defined-only '%1$s/libbypass-pager.so' | "
		 "grep -c ' malloc_conf$'; } 2>/dev/null",
		 getenv("BYPASS_BUILD"));
	FILE *f = popen(cmd, "r");
	CHECK(f);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	pclose(f);
	if (n)
		expect("pager.heap", atoi(out) > 0);
	else
		TEST_LOG("no libbypass-pager.so or no nm here: pager.heap not compared");
}
#endif

/* "available" of check name in the JSON: 1, 0, or -1 when absent. */
static int json_avail(const char *name)
{
	char key[96];
	snprintf(key, sizeof(key), "{\"name\": \"%s\", \"available\": ", name);
	const char *p = strstr(json, key);
	if (!p)
		return -1;
	p += strlen(key);
	return !strncmp(p, "true", 4) ? 1 : !strncmp(p, "false", 5) ? 0 : -1;
}

/* The same in the text form: "name   yes  detail". */
static int text_avail(const char *name)
{
	for (const char *p = text; (p = strstr(p, name)); p++) {
		if (p != text && p[-1] != '\n')
			continue;
		const char *q = p + strlen(name);
		if (*q != ' ')
			continue;
		while (*q == ' ')
			q++;
		return !strncmp(q, "yes", 3) ? 1 : !strncmp(q, "no", 2) ? 0 : -1;
	}
	return -1;
}

static void expect(const char *name, int want)
{
	int got = json_avail(name);
	if (got != want)
		TEST_FAIL("doctor says %s = %d, the library says %d", name, got, want);
	TEST_LOG("%-20s %s, as expected", name, want ? "yes" : "no");
}

int main(void)
{
	test_timeout(60);
	if (!getenv("BYPASS_BUILD"))
		SKIP("BYPASS_BUILD unset (run through ctest)");
	int pinned = pin_swaps();
	if (pinned)
		TEST_LOG("/proc/swaps pinned to two areas for this test's doctor runs");
	else
		TEST_LOG("cannot pin /proc/swaps (not root, or no mount namespace): "
			 "the swap line is left out of the text/JSON agreement");
	CHECK_EQ(run("doctor --json", json, sizeof(json)), 0);
	CHECK_EQ(run("doctor", text, sizeof(text)), 0);
	CHECK(strstr(json, "\"checks\": ["));
	CHECK_EQ(run("doctor --bogus", text + sizeof(text) / 2, sizeof(text) / 2), 2);
	text[sizeof(text) / 2] = 0;
	CHECK_EQ(run("doctor", text, sizeof(text)), 0);

	/* Every JSON check is a text line with the same answer. */
	unsigned n = 0;
	for (const char *p = json; (p = strstr(p, "{\"name\": \"")); n++) {
		p += 10;
		char name[64];
		size_t l = strcspn(p, "\"");
		CHECK(l < sizeof(name));
		memcpy(name, p, l);
		name[l] = 0;
		if (!pinned && !strcmp(name, "swap"))
			continue; /* other tests add and remove swap areas meanwhile */
		if (json_avail(name) != text_avail(name))
			TEST_FAIL("%s: json %d, text %d", name, json_avail(name), text_avail(name));
	}
	CHECK(n >= 20);
	TEST_LOG("%u checks, text and JSON agree", n);
	if (pinned) {
		char d[512];
		expect("swap", 1);
		if (!strstr(json_detail("swap", d, sizeof(d)), "2 swap area(s), 1536 MiB"))
			TEST_FAIL("doctor's swap line '%s' is not the pinned /proc/swaps "
				  "(2 areas, 1536 MiB)", d);
	}

	struct io_uring ring_mem, *ring = &ring_mem;
	int e = io_uring_queue_init(256, ring, 0);
	expect("io_uring", e == 0);
	if (!e) {
		struct io_uring_probe *p = io_uring_get_probe_ring(ring);
		expect("io_uring.EPOLL_WAIT", p && io_uring_opcode_supported(p, 59));
		expect("io_uring.SEND", p && io_uring_opcode_supported(p, IORING_OP_SEND));
		if (p)
			io_uring_free_probe(p);
		io_uring_queue_exit(ring);
	}

	CHECK_EQ(bp_uintr_available(), 0); /* no uintr data path: never */
	expect("uintr", bp_uintr_available());
#if BYPASS_WITH_NOTIFY
	/* No uintr data path: not a notify backend at all. */
	CHECK_EQ(bypass_notify_backend_available("uintr"), -EINVAL);
	expect("notify", bypass_notify_backend_available("futex") == 1);
#endif
	CHECK(json_avail("uintr.notify") == -1); /* no such line any more */
	CHECK(json_avail("batch.epoll_wait") == -1);
#if BYPASS_WITH_BATCH
	/* batch's own probe: whether the preload merges its flush and wait */
	expect("io_uring.EPOLL_WAIT", bp_bt_merged_wait_available());
	CHECK(strstr(json, bp_bt_merged_wait_available() ? "share one io_uring_enter"
							 : "stay two system calls"));
#endif

#if BYPASS_WITH_PAGER
	uint64_t f = 0;
	int u = bp_uffd_features_available(&f);
	expect("userfaultfd", u == 0);
	expect("uffd.sigbus", u == 0 && (f & UFFD_FEATURE_SIGBUS) != 0);
	expect("uffd.wp", u == 0 && (f & UFFD_FEATURE_PAGEFAULT_FLAG_WP) != 0);
	/* bypass_pager_create's own test: upcall mode needs both, and io_uring */
	expect("pager.upcall", u == 0 && (f & UFFD_FEATURE_SIGBUS) &&
				       (f & UFFD_FEATURE_PAGEFAULT_FLAG_WP) && e == 0);
#endif
#if BYPASS_WITH_IPC
	const char *why = NULL;
	int pk = bypass_ipc_pkey_supported(&why);
	expect("pkeys", pk == 1);
	if (pk != 1 && why && !strstr(json, why))
		TEST_FAIL("doctor does not give ipc's reason '%s'", why);
#endif
	expect("cpu.tsc", BYPASS_HAVE_RDTSCP);

#if BYPASS_WITH_PAGER
	pager_agrees();
	/* As nobody: handler mode needs kernel-mode faults (privilege). */
	if (geteuid() == 0 && access(getenv("BYPASS_BUILD"), X_OK) == 0) {
		fflush(stdout);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
				_exit(77);
			char self[4096];
			snprintf(self, sizeof(self), "%s/bypass", getenv("BYPASS_BUILD"));
			if (access(self, X_OK))
				_exit(77); /* the build tree is not open to nobody */
			TEST_LOG("as nobody:");
			pager_agrees();
			fflush(stdout);
			_exit(0);
		}
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 77));
		if (WEXITSTATUS(st) == 77)
			TEST_LOG("nobody cannot run the build tree's bypass: not checked as nobody");
	}
#endif

	/* Refused: every answer that depends on it is no, with the reason. */
	if (run_refused(json, sizeof(json))) {
		TEST_LOG("no seccomp filter here: the refused case is not checked");
		return test_pass("core/cli-doctor");
	}
	char d[512];
	expect("io_uring", 0);
	CHECK(strstr(json_detail("io_uring", d, sizeof(d)), strerror(EPERM)));
	expect("io_uring.SEND", 0);
	expect("io_uring.EPOLL_WAIT", 0);
	CHECK(strstr(json_detail("io_uring.SEND", d, sizeof(d)), "io_uring refused"));
	expect("userfaultfd", 0);
	CHECK(strstr(json_detail("userfaultfd", d, sizeof(d)), strerror(EPERM)));
	expect("uffd.sigbus", 0);
	expect("uffd.wp", 0);
#if BYPASS_WITH_BATCH
	expect("batch", 0);
	CHECK(strstr(json_detail("batch", d, sizeof(d)), "needs io_uring"));
#endif
#if BYPASS_WITH_PAGER
	expect("pager.upcall", 0);
	CHECK(strstr(json_detail("pager.upcall", d, sizeof(d)), "needs io_uring"));
#endif
	expect("uintr", 0);
	return test_pass("core/cli-doctor");
}
