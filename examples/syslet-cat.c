/* SPDX-License-Identifier: MIT */
/*
 * syslet-cat: cat(1) written as one syslet per file.
 *
 * Each file is one program of four atoms, submitted with one call:
 *
 *   0 openat(AT_FDCWD, path, O_RDONLY)      stop if negative
 *   1 read(fd from atom 0, buf, size)       stop if <= 0: go to atom 3
 *   2 write(1, buf, length from atom 1)     then back to atom 1 (a loop)
 *   3 close(fd from atom 0)
 *
 * The descriptor openat returns and the length read returns are fed to the
 * later atoms; the read/write loop and the branch to close run without
 * coming back to this code.  bypass_syslet_run() runs it in this thread
 * while nothing blocks (a cached file, a pipe with room) and hands the rest
 * to a worker thread when something would (then we wait for it, to keep
 * the files in order).  At the end, which engine ran how many atoms.
 *
 *   ./syslet-cat FILE...
 */
#include <bypass/syslet.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	bypass_syslet *s;
	int r = bypass_syslet_create(NULL, &s);
	if (r) {
		fprintf(stderr, "bypass_syslet_create: %s\n", strerror(-r));
		return 1;
	}
	static char buf[65536];
	int status = 0;
	for (int i = 1; i < argc; i++) {
		struct bypass_syslet_atom a[4] = {
			{ .nr = SYS_openat, .flags = BYPASS_SYSLET_STOP_ON_NEGATIVE,
			  .arg = { BYPASS_SYSLET_C(AT_FDCWD), BYPASS_SYSLET_P(argv[i]),
				   BYPASS_SYSLET_C(O_RDONLY), BYPASS_SYSLET_C(0) } },
			{ .nr = SYS_read, .flags = BYPASS_SYSLET_STOP_ON_NON_POSITIVE,
			  .on_stop = BYPASS_SYSLET_GOTO(3),
			  .arg = { BYPASS_SYSLET_R(0), BYPASS_SYSLET_P(buf),
				   BYPASS_SYSLET_C(sizeof(buf)) } },
			{ .nr = SYS_write, .flags = BYPASS_SYSLET_STOP_ON_NEGATIVE,
			  .on_stop = BYPASS_SYSLET_GOTO(3), .next = BYPASS_SYSLET_GOTO(1),
			  .arg = { BYPASS_SYSLET_C(1), BYPASS_SYSLET_P(buf),
				   BYPASS_SYSLET_R(1) } },
			{ .nr = SYS_close, .arg = { BYPASS_SYSLET_R(0) } },
		};
		struct bypass_syslet_prog p = {
			.atoms = a, .natoms = 4, .tag = (uint64_t)i,
			.max_steps = 1u << 30, /* it loops: a budget is required */
		};
		struct bypass_syslet_completion c;
		r = bypass_syslet_run(s, &p, &c);
		if (r == 0) { /* went asynchronous: wait for it */
			r = bypass_syslet_wait(s, 1, BYPASS_FOREVER);
			if (r > 0)
				r = bypass_syslet_reap(s, &c, 1);
		}
		if (r < 0) {
			fprintf(stderr, "syslet: %s\n", strerror(-r));
			return 1;
		}
		if (c.atom == 0 || c.result < 0) {
			fprintf(stderr, "syslet-cat: %s: %s (atom %u)\n", argv[i],
				strerror((int)-c.result), c.atom);
			status = 1;
		}
	}
	struct bypass_syslet_stats st;
	bypass_syslet_stats(s, &st);
	fprintf(stderr,
		"syslet-cat: %llu programs: %llu ended inline, %llu on workers "
		"(%llu atoms inline, %llu on workers)\n",
		(unsigned long long)st.programs, (unsigned long long)st.programs_inline,
		(unsigned long long)st.programs_workers,
		(unsigned long long)st.atoms_inline, (unsigned long long)st.atoms_workers);
	bypass_syslet_destroy(s);
	return status;
}
