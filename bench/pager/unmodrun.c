/* SPDX-License-Identifier: MIT */
/*
 * pager.unmodified's runs (split from unmodified.c): the programs, their
 * inputs, one run of a program on one side (the reference, the preload,
 * Linux in a cgroup), its output compared, the preload's stats file.
 */
#include "unmodified.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *const pu_w_name[W_N] = { "C program (malloc + read/write)", "sort",
				   "python (small objects)", "sqlite (in memory)",
				   "hash table (C, random lookups)",
				   "python multiprocessing (fork)",
				   "redis (populate, reads, BGSAVE)" };
const char *const pu_w_key[W_N] = { "syscalls", "sort", "python", "sqlite",
				  "hash", "mp", "redis" };


/* The Python programs: argv[1] sizes them; stdout is the result. */
static const char py_objects[] =
	"import sys\n"
	"n = int(sys.argv[1])\n"
	"a = [i * 3 for i in range(n)]\n"
	"s = 0\n"
	"for p in range(2):\n"
	"    for x in a:\n"
	"        s += x\n"
	"b = [x + 1 for x in a[::7]]\n"
	"print(s, len(a), sum(b))\n";
static const char py_sqlite[] =
	"import sqlite3, sys\n"
	"n = int(sys.argv[1])\n"
	"db = sqlite3.connect(':memory:')\n"
	"db.execute('PRAGMA cache_size=-4000000')\n"
	"db.execute('CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)')\n"
	"db.executemany('INSERT INTO t VALUES(?, ?)', ((i, 'v%08d-%s' % ((i * 7919) % n, 'x' * 60))"
	" for i in range(n)))\n"
	"db.execute('CREATE INDEX tv ON t(v)')\n"
	"print(db.execute(\"SELECT count(*), sum(k % 1000), min(v), max(v) FROM t WHERE v >= "
	"'v00000500'\").fetchone())\n"
	"print(db.execute('SELECT k FROM t ORDER BY v LIMIT 5 OFFSET ?', (n // 2,)).fetchall())\n";
/* Python multiprocessing (issue 32, item 5): a list of ints built by the
 * parent, summed in 8 parts by a pool of 4 forked workers (each worker's
 * reads write the objects' reference counts: copy-on-write of the list's
 * pages in every worker). */
static const char py_mp[] =
	"import multiprocessing as mp, sys\n"
	"n = int(sys.argv[1])\n"
	"data = [i * 3 for i in range(n)]\n"
	"def part(k):\n"
	"    return sum(data[k::8])\n"
	"with mp.get_context('fork').Pool(4) as pool:\n"
	"    r = pool.map(part, range(8))\n"
	"print(sum(r), len(data), r[0])\n";
/* Redis's client side (issue 32, item 5), a shell outside the measured
 * cgroup, without the preload: wait for the server's socket ($1), DEBUG
 * POPULATE $2 keys of 200 bytes, $3 random reads of them by redis-benchmark
 * (a Lua GET: its __rand_int__ is 12 digits, DEBUG POPULATE's keys are
 * not padded), BGSAVE and its end, DBSIZE, SHUTDOWN NOSAVE.  Its stdout is
 * the run's output.  BGSAVE's end is waited for at most $4 seconds, and not
 * at all once the server is gone (last session's loop had no bound: it
 * outlived a stopped bench for 11 minutes, polling no server).  $5, set by
 * plant=pager.unmodified.redis.stall (tests/pager/bench-plant.sh): a file
 * its pid goes into, and the wait looks for an end that never comes and
 * does not notice the server's end (as the old loop): only its bound or the
 * bench's cleanup (its process group, pb_running_group) ends it. */
static const char rd_driver[] =
	"S=$1; N=$2; R=$3; W=$4; P=$5\n"
	"[ -z \"$P\" ] || echo $$ >>\"$P\"\n"
	"c() { redis-cli -s \"$S\" \"$@\"; }\n"
	"i=0; until [ \"$(c ping 2>/dev/null)\" = PONG ]; do\n"
	"  i=$((i+1)); [ $i -lt 6000 ] || { echo 'redis: no server' >&2; exit 2; }; sleep 0.01\n"
	"done\n"
	"[ \"$(c debug populate \"$N\" key 200)\" = OK ] || { echo 'redis: populate' >&2; exit 3; }\n"
	"redis-benchmark -s \"$S\" -n \"$R\" -r \"$N\" -c 4 -P 16 -q eval "
	"\"return redis.call('get', 'key:' .. tonumber(ARGV[1]))\" 0 __rand_int__ >/dev/null "
	"|| { echo 'redis: redis-benchmark' >&2; exit 4; }\n"
	"c bgsave >/dev/null || exit 5\n"
	"e='^rdb_bgsave_in_progress:0'; [ -z \"$P\" ] || e='^rdb_bgsave_in_progress:planted'\n"
	"i=0; while :; do\n"
	"  p=$(c info persistence 2>/dev/null)\n"
	"  [ -n \"$p\" ] || [ -n \"$P\" ] || { echo 'redis: the server went away during BGSAVE' "
	">&2; exit 6; }\n"
	"  printf '%s\\n' \"$p\" | grep -q \"$e\" && break\n"
	"  i=$((i+1)); [ $i -lt $((W*20)) ] || { echo \"redis: BGSAVE did not end in $W s\" >&2; exit 7; }\n"
	"  sleep 0.05\n"
	"done\n"
	"st=$(c info persistence | grep '^rdb_last_bgsave_status' | tr -d '\\r')\n"
	"echo \"$st\"\n"
	"echo \"dbsize $(c dbsize)\"\n"
	"c shutdown nosave >/dev/null 2>&1\n"
	"[ \"$st\" = rdb_last_bgsave_status:ok ] || exit 9 # its child killed\n"
	"exit 0\n";
/* After the run, outside it: the dump BGSAVE wrote ($2/$3) loaded by a
 * server without the preload and without a limit; its key count and DEBUG
 * DIGEST are the rest of the output (the whole data set, byte for byte). */
static const char rd_check[] =
	"S=$1; D=$2; F=$3\n"
	"redis-server --port 0 --unixsocket \"$S\" --unixsocketperm 700 --save '' "
	"--appendonly no --dir \"$D\" --dbfilename \"$F\" --logfile '' "
	"--enable-debug-command yes >/dev/null 2>&1 & p=$!\n"
	"c() { redis-cli -s \"$S\" \"$@\"; }\n"
	"i=0; until [ \"$(c ping 2>/dev/null)\" = PONG ]; do\n"
	"  i=$((i+1)); [ $i -lt 6000 ] || { kill -9 $p; echo 'redis check: no server' >&2; exit 2; }\n"
	"  sleep 0.01\n"
	"done\n"
	"echo \"dump: dbsize $(c dbsize) digest $(c debug digest)\"\n"
	"c shutdown nosave >/dev/null 2>&1; wait $p\n"
	"rm -f \"$D/$F\"\n"
	"exit 0\n";
static double pu_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Lines of the sort input: a pseudo-random key, a line number, a payload. */
int pu_make_sort_input(const char *path, size_t bytes)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	uint64_t x = 88172645463325252ull;
	size_t done = 0;
	for (unsigned long i = 0; done < bytes; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int k = fprintf(f, "%016llx %lu payload-%llu-payload-payload-payload\n",
				(unsigned long long)x, i, (unsigned long long)(x % 100000));
		if (k < 0)
			break;
		done += (size_t)k;
	}
	return fclose(f) ? -errno : 0;
}

int pu_make_prog_input(const char *path, size_t bytes)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	unsigned char buf[65536];
	uint64_t x = 1234567;
	int e = 0;
	for (size_t done = 0; !e && done < bytes;) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			buf[i] = (unsigned char)(x >> 56);
		}
		size_t k = bytes - done < sizeof(buf) ? bytes - done : sizeof(buf);
		if (write(fd, buf, k) != (ssize_t)k)
			e = -EIO;
		done += k;
	}
	close(fd);
	return e;
}

/* --param plant=pager.unmodified: the bypass side's output gains a byte,
 * which the comparison with the reference must catch. */
void pu_append_byte(const char *path)
{
	FILE *f = fopen(path, "a");
	if (f) {
		fputc('x', f);
		fclose(f);
	}
}

/* Byte-identical files? */
bool pu_same_file(const char *a, const char *b)
{
	FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
	bool same = fa && fb;
	char ba[65536], bb[65536];
	while (same) {
		size_t na = fread(ba, 1, sizeof(ba), fa), nb = fread(bb, 1, sizeof(bb), fb);
		if (na != nb || memcmp(ba, bb, na))
			same = false;
		if (!na)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}


/* The processes left in cgroup cg after its program's parent ended (a
 * pool's worker or a BGSAVE child whose parent the OOM killer took):
 * killed, so that the next run starts from an empty cgroup (a cgroup v1,
 * which has no cgroup.kill). */
static void pu_cg_kill_rest(const char *cg)
{
	char path[600], line[64];
	if (!cg || !cg[0])
		return;
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	for (int tries = 0; tries < 100; tries++) {
		FILE *f = fopen(path, "r");
		int n = 0;
		while (f && fgets(line, sizeof(line), f)) {
			pid_t p = (pid_t)atoi(line);
			if (p > 0 && p != getpid()) {
				kill(p, SIGKILL);
				n++;
			}
		}
		if (f)
			fclose(f);
		if (!n)
			return;
		struct timespec ts = { 0, 20000000 };
		nanosleep(&ts, NULL);
	}
}

int pu_left_n[W_N];
double pu_left_cpu[W_N];
int pu_left_stuck;

static double pu_ru_s(const struct rusage *ru)
{
	return (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec * 1e-6 +
	       (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec * 1e-6;
}

/*
 * A run's leftovers, once its program (pid, the leader of a process group
 * of its own) has ended: the processes of its group and of its cgroup cg
 * (a pool's workers, a BGSAVE child, whose parent the OOM killer took) are
 * killed (cgroup.kill where the cgroup has it, and the group), and reaped
 * here: bypass-bench is the child subreaper of pager.unmodified's runs
 * (bench_pager_unmodified), so they come to it, not to init.  Their CPU
 * time is the run's (added to res->cpu_s, and counted in pu_left_*): it was
 * counted as other processes' when init reaped them (last session's
 * "disturbed" hash+mp window).  Bounded to 10 s (pu_left_stuck).
 */
static void pu_kill_left(pid_t pid, int w, const char *cg, struct pu_res *res)
{
	bool cgkill = false;
	if (cg && cg[0]) {
		char path[600];
		snprintf(path, sizeof(path), "%s/cgroup.kill", cg);
		cgkill = access(path, W_OK) == 0 && pb_write_small(path, "1") == 0;
	}
	double t0 = pu_now_s();
	kill(-pid, SIGKILL);
	for (;;) {
		int st;
		struct rusage ru;
		pid_t p = wait4(-pid, &st, WNOHANG, &ru);
		if (p > 0) {
			double s = pu_ru_s(&ru);
			res->cpu_s += s;
			pu_left_n[w]++;
			pu_left_cpu[w] += s;
			continue;
		}
		if (p < 0 && errno == EINTR)
			continue;
		/* none to reap now: done when the group has no process left
		 * (a zombie is one: a dying parent's children come to us) */
		if (kill(-pid, 0) < 0 && errno == ESRCH)
			break;
		if (pu_now_s() - t0 > 10) {
			pu_left_stuck++;
			break;
		}
		kill(-pid, SIGKILL);
		usleep(1000);
	}
	if (!cgkill)
		pu_cg_kill_rest(cg);
}

/* The writer of a run's stdout (a child outside the measured cgroup):
 * the pipe's bytes into out; exits 0, or 5 (open) or 6 (write). */
static __attribute__((noreturn)) void pu_writer(int rfd, const char *out)
{
	pb_cleanup_on_signal(NULL);
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		_exit(5);
	static char buf[1 << 16];
	for (;;) {
		ssize_t n = read(rfd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t o = 0; o < n;) {
			ssize_t k = write(fd, buf + o, (size_t)(n - o));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				_exit(6);
			o += k;
		}
	}
	_exit(close(fd) ? 6 : 0);
}

/*
 * Run workload w on one side; its stdout goes through a pipe to a writer
 * outside cg, into out.  0 and res, or -errno with the reason in why.
 */
int pu_run(enum side side, int w, const struct sizes *z, const char *dir,
	       const char *cg, const char *out, struct pu_res *res, char *why, size_t whylen)
{
	char in[400], pout[400], spec[1000], buf[64], pre[600], stats[400];
	snprintf(in, sizeof(in), "%s/%s.in", dir, w == W_SORT ? "sort" : "prog");
	snprintf(pout, sizeof(pout), "%s/prog-%d.out", dir, (int)side);
	snprintf(stats, sizeof(stats), "%s/stats", dir);
	snprintf(spec, sizeof(spec), "%s %s %zu %llu", in, pout, z->prog_bytes,
		 (unsigned long long)z->updates);
	snprintf(pre, sizeof(pre), "%s/libbypass-pager.so", bench_build_dir());
	/* Redis: the server's socket and dump; the client side's arguments */
	char sock[400], csock[400], dump[64], nk[32], nr[32], nw[32];
	snprintf(sock, sizeof(sock), "%s/redis-%d.sock", dir, (int)side);
	snprintf(csock, sizeof(csock), "%s/redis-check.sock", dir);
	snprintf(dump, sizeof(dump), "dump-%d.rdb", (int)side);
	snprintf(nk, sizeof(nk), "%llu", (unsigned long long)z->rd_keys);
	snprintf(nr, sizeof(nr), "%llu", (unsigned long long)z->rd_reads);
	snprintf(nw, sizeof(nw), "%u", z->rd_wait_s);
	memset(res, 0, sizeof(*res));
	/* the output through a pipe to a writer in the bench's own cgroup:
	 * what the measured cgroup is charged is the program's own memory */
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	pid_t wpid = fork();
	if (wpid < 0) {
		int e = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return e;
	}
	if (!wpid) {
		close(pfd[1]); /* its EOF: the program's end */
		pu_writer(pfd[0], out);
	}
	close(pfd[0]);
	struct pb_cg_sampler smp;
	pb_cg_mem_begin(&smp, cg);
	if (z->cg_trace) {
		static const char *const side_name[S_N] = {
			[S_REF] = "reference (no limit, no preload)", [S_LINUX] = "Linux, swap file",
			[S_BYPASS] = "the preload", [S_ZRAM] = "Linux, zram",
			[S_ZSWAP] = "Linux, zswap", [S_TIER] = "the preload with its tier",
		};
		char label[200];
		snprintf(label, sizeof(label), "%s, %s", pu_w_name[w], side_name[side]);
		pb_cg_mem_trace(&smp, z->cg_trace, label);
	}
	double t0 = pu_now_s();
	pid_t pid = fork();
	if (pid > 0)
		setpgid(pid, pid); /* as the child does: whichever runs first */
	if (pid < 0) {
		int e = -errno;
		close(pfd[1]);
		waitpid(wpid, NULL, 0);
		pb_cg_mem_end(&smp, &res->mem);
		return e;
	}
	if (!pid) {
		pb_cleanup_on_signal(NULL);
		setpgid(0, 0); /* its processes' group: what pu_kill_left ends */
		if (cg && cg[0] && pb_cg_join(cg, getpid()))
			_exit(4); /* the side's cgroup: its limit, or a peak to measure */
		if (w == W_REDIS) { /* its output is the client side's */
			int nfd = open("/dev/null", O_WRONLY);
			if (nfd < 0 || dup2(nfd, 1) < 0)
				_exit(5);
		} else if (dup2(pfd[1], 1) < 0) {
			_exit(5);
		}
		setenv("LC_ALL", "C", 1);
		if (side == S_BYPASS || side == S_TIER) {
			if (side == S_TIER)
				setenv("BYPASS_PAGER_TIER", "1", 1);
			setenv("LD_PRELOAD", pre, 1);
			snprintf(buf, sizeof(buf), "%zu", z->budget);
			setenv("BYPASS_PAGER_BUDGET", buf, 1);
			setenv("BYPASS_PAGER_THRESHOLD", "1M", 1);
			/* the budget covers every allocation from the first */
			setenv("BYPASS_PAGER_HEAP_AFTER", "0", 1);
			setenv("BYPASS_PAGER_SWAP", dir, 1);
			setenv("BYPASS_STATS_FILE", stats, 1);
			if (z->scope)
				setenv("BYPASS_PAGER_BUDGET_SCOPE", z->scope, 1);
		}
		if (w == W_SORT) {
			/* sort's buffer: room for all of the input in one piece */
			snprintf(buf, sizeof(buf), "%zuK", (z->sort_bytes * 3) >> 10);
			execlp("sort", "sort", "-S", buf, in, (char *)NULL);
			_exit(127);
		}
		if (w == W_PYTHON || w == W_SQLITE || w == W_MP) {
			snprintf(buf, sizeof(buf), "%llu",
				 (unsigned long long)(w == W_PYTHON ? z->py_n : w == W_MP ? z->mp_n
						      : z->sq_n));
			execl(PYTHON, "python3", "-c", w == W_PYTHON ? py_objects : w == W_MP ?
			      py_mp : py_sqlite, buf, (char *)NULL);
			_exit(127);
		}
		if (w == W_REDIS) {
			execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", sock,
			       "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
			       "--dir", dir, "--dbfilename", dump, "--logfile", "",
			       "--enable-debug-command", "yes", (char *)NULL);
			_exit(127);
		}
		if (w == W_HASH) {
			snprintf(spec, sizeof(spec), "%llu %llu", (unsigned long long)z->hash_n,
				 (unsigned long long)z->hash_lookups);
			setenv("BYPASS_BENCH_UNMODIFIED_HASH", spec, 1);
			execl("/proc/self/exe", "bypass-bench-hash", (char *)NULL);
			_exit(127);
		}
		if (z->orphans) /* plant=pager.unmodified.orphan */
			setenv("BYPASS_BENCH_UNMODIFIED_ORPHAN", z->orphans, 1);
		setenv("BYPASS_BENCH_UNMODIFIED_PROG", spec, 1);
		execl("/proc/self/exe", "bypass-bench-unmodified", (char *)NULL);
		_exit(127);
	}
	/* Redis's client side: outside the cgroup, without the preload, its
	 * stdout the run's output; a process group of its own */
	pid_t dpid = w == W_REDIS ? fork() : 0;
	if (!dpid && w == W_REDIS) {
		pb_cleanup_on_signal(NULL);
		setpgid(0, 0);
		if (dup2(pfd[1], 1) < 0)
			_exit(5);
		execl("/bin/sh", "sh", "-c", rd_driver, "sh", sock, nk, nr, nw,
		      z->rd_stall ? z->rd_stall : "", (char *)NULL);
		_exit(127);
	}
	pb_running_child = pid;
	if (dpid > 0) {
		setpgid(dpid, dpid);
		pb_running_group = dpid; /* a signal's cleanup ends it too */
	}
	bench_watchdog(900, "pager.unmodified: a run", pid); /* a stall fails, never hangs */
	int st = 0, dst = 0;
	bool ours = false; /* the server killed by us: its client side failed */
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	close(pfd[1]);
	if (dpid > 0) {
		/* whichever ends first: a client side that fails stops the
		 * server; a server that dies stops its client side */
		bool sdone = false, ddone = false;
		while (!sdone || !ddone) {
			if (!sdone && wait4(pid, &st, WNOHANG, &ru) == pid) {
				sdone = true;
				res->secs = pu_now_s() - t0;
				if (!ddone && (WIFSIGNALED(st) || WEXITSTATUS(st)))
					kill(-dpid, SIGKILL);
			}
			if (!ddone && waitpid(dpid, &dst, WNOHANG) == dpid) {
				ddone = true;
				if (!sdone && (!WIFEXITED(dst) || WEXITSTATUS(dst))) {
					kill(pid, SIGKILL);
					ours = true;
				}
			}
			if (!sdone || !ddone)
				usleep(1000);
		}
	} else {
		if (dpid < 0)
			kill(pid, SIGKILL);
		while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
			;
		res->secs = pu_now_s() - t0;
	}
	res->maxrss_kb = ru.ru_maxrss; /* the whole process's peak resident set */
	res->cpu_s = pu_ru_s(&ru);
	/* what it left (before the writer: they may hold its pipe) */
	pu_kill_left(pid, w, cg, res);
	if (dpid > 0) { /* the client side's group: whatever it left */
		kill(-dpid, SIGKILL);
		pb_running_group = 0;
	}
	pb_cg_mem_end(&smp, &res->mem);
	if (smp.trace_err) /* the run stands; its trace is lost, and said so */
		fprintf(stderr, "bypass-bench: cg_trace=%s: %s (a run's samples not written)\n",
			z->cg_trace, strerror(-smp.trace_err));
	int wst = 0;
	while (waitpid(wpid, &wst, 0) < 0 && errno == EINTR)
		;
	bench_watchdog(0, NULL, 0);
	pb_running_child = 0;
	if (!WIFSIGNALED(st) && !WEXITSTATUS(st) && (!WIFEXITED(wst) || WEXITSTATUS(wst))) {
		snprintf(why, whylen, "%s: the writer of its output to %s failed (status %d)",
			 pu_w_name[w], out, wst);
		return -EIO;
	}
	if (w == W_REDIS && !WIFSIGNALED(st) && !WEXITSTATUS(st) && WIFEXITED(dst) &&
	    WEXITSTATUS(dst) == 9) {
		/* the server lived, BGSAVE failed: its child was killed (on a
		 * Linux side at its limit: the cgroup's OOM killer) */
		snprintf(why, whylen, "%s: its BGSAVE child was killed (rdb_last_bgsave_status "
			 "not ok)", pu_w_name[w]);
		return -EINTR;
	}
	if (w == W_REDIS && (dpid < 0 || ours || (!WIFSIGNALED(st) && !WEXITSTATUS(st) &&
						  (!WIFEXITED(dst) || WEXITSTATUS(dst))))) {
		snprintf(why, whylen, "%s: its client side failed (status %d)", pu_w_name[w], dst);
		return -EIO;
	}
	if (WIFSIGNALED(st)) {
		snprintf(why, whylen, "%s killed by signal %d", pu_w_name[w], WTERMSIG(st));
		return -EINTR;
	}
	if (WEXITSTATUS(st)) {
		snprintf(why, whylen, "%s exited with %d", pu_w_name[w], WEXITSTATUS(st));
		return -EIO;
	}
	if (w == W_REDIS) { /* the dump, loaded outside the run: the rest of the output */
		fflush(NULL);
		pid_t k = fork();
		if (k > 0) {
			setpgid(k, k);
			pb_running_group = k;
		}
		if (!k) {
			pb_cleanup_on_signal(NULL);
			setpgid(0, 0);
			int ofd = open(out, O_WRONLY | O_APPEND);
			if (ofd < 0 || dup2(ofd, 1) < 0)
				_exit(5);
			execl("/bin/sh", "sh", "-c", rd_check, "sh", csock, dir, dump, (char *)NULL);
			_exit(127);
		}
		int kst = -1;
		while (k > 0 && waitpid(k, &kst, 0) < 0 && errno == EINTR)
			;
		if (k > 0) { /* its server, if the check failed before ending it */
			kill(-k, SIGKILL);
			pb_running_group = 0;
		}
		if (k < 0 || !WIFEXITED(kst) || WEXITSTATUS(kst)) {
			snprintf(why, whylen, "%s: loading its dump failed (status %d)", pu_w_name[w],
				 kst);
			return -EIO;
		}
	}
	if (w == W_SYSCALLS) { /* its output file is part of its output */
		char ref[400];
		snprintf(ref, sizeof(ref), "%s/prog-%d.out", dir, (int)S_REF);
		if (side != S_REF && !pu_same_file(ref, pout)) {
			snprintf(why, whylen, "%s: its output file differs from the reference",
				 pu_w_name[w]);
			return -EIO;
		}
	}
	return 0;
}

/* The sum of a counter over the stats file's lines (then the file goes). */
uint64_t pu_stats_take(const char *dir, const char *key, bool remove)
{
	char path[400], pat[64], line[8192];
	snprintf(path, sizeof(path), "%s/stats", dir);
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	uint64_t sum = 0;
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, pat);
		if (p)
			sum += strtoull(p + strlen(pat), NULL, 10);
	}
	if (f)
		fclose(f);
	if (remove)
		unlink(path);
	return sum;
}

/* The scratch directory and every file in it (it holds no directory). */
void pu_rmtree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[800];
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

bool pu_have_redis(void)
{
	static const char *const tools[] = { "redis-server", "redis-cli", "redis-benchmark" };
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		bool found = false;
		for (const char *d = path; !found && d && *d; d = strchr(d, ':'), d = d ? d + 1 : NULL) {
			size_t n = strcspn(d, ":");
			char p[600];
			snprintf(p, sizeof(p), "%.*s/%s", (int)n, d, tools[i]);
			found = access(p, X_OK) == 0;
		}
		if (!found)
			return false;
	}
	return true;
}

/* This bench, and so the preload beside it, built with AddressSanitizer. */
bool pu_built_with_asan(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return true;
#else
	return false;
#endif
#else
	return false;
#endif
}

bool pu_preload(struct bench_ctx *c, const char *id, const char *asan_why, char *pre, size_t len)
{
	if (pu_built_with_asan()) {
		bench_skip(c, id, "an AddressSanitizer build: its preload, instrumented, %s",
			   asan_why);
		return false;
	}
	snprintf(pre, len, "%s/libbypass-pager.so", bench_build_dir());
	if (access(pre, R_OK)) {
		bench_skip(c, id, "no %s (the preload is built with the pager module)", pre);
		return false;
	}
	return true;
}


void pu_brun_take(const char *dir, struct brun *b)
{
	b->rdpages = pu_stats_take(dir, "bytes_read", false) / 4096;
	b->evict = pu_stats_take(dir, "evictions", false);
	b->swapin = pu_stats_take(dir, "faults_swapin", false);
	b->hits = pu_stats_take(dir, "access_hits", false);
	b->samples = pu_stats_take(dir, "access_samples", false);
	b->tstored = pu_stats_take(dir, "tier_stored", false);
	b->tpool = pu_stats_take(dir, "tier_swapin_pool", false);
	b->tfile = pu_stats_take(dir, "tier_swapin_file", false);
	b->peak = pu_stats_take(dir, "resident_peak", true);
}
void pu_brun_add(struct brun *sum, const struct brun *b)
{
	sum->rdpages += b->rdpages;
	sum->evict += b->evict;
	sum->swapin += b->swapin;
	sum->hits += b->hits;
	sum->samples += b->samples;
	sum->tstored += b->tstored;
	sum->tpool += b->tpool;
	sum->tfile += b->tfile;
	if (b->peak > sum->peak)
		sum->peak = b->peak;
}
