/* SPDX-License-Identifier: MIT */
/*
 * One mapping of a service arena per process.  An arena is mapped at the
 * server's address (MAP_FIXED_NOREPLACE), so a second handle to the same
 * service in one process (or a client handle in the server's own process)
 * cannot map it again: it shares the first mapping, counted here by the
 * memfd's inode.  The mapping's protection (the key, or none) is chosen by
 * whoever mapped it first in this process; a later opener gets the same
 * (an opener that requires the gate is refused an unguarded mapping).
 * After fork() the child has its own copy of this list, as of its mapping;
 * each mapping also holds this process's lock owner id in that arena
 * (lib_lock.c), which the child gives up at once (the description that
 * holds it is the parent's) and takes anew at its first lock.
 */
#include "ipc/lib.h"

#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct lib_map *maps;
static struct lib_core *cores;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void before_fork(void)
{
	pthread_mutex_lock(&lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

static void after_fork_child(void)
{
	for (struct lib_map *m = maps; m; m = m->next)
		bp_ipc_lib_owner_forked(&m->owner);
	pthread_mutex_unlock(&lock);
}

static void install_atfork(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

static struct lib_map *find(dev_t dev, ino_t ino)
{
	for (struct lib_map *m = maps; m; m = m->next)
		if (m->dev == dev && m->ino == ino)
			return m;
	return NULL;
}

static int add(bypass_arena *a, const struct stat *st, int guarded, struct lib_map **out)
{
	struct lib_map *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->dev = st->st_dev;
	m->ino = st->st_ino;
	m->arena = a;
	m->refs = 1;
	m->guarded = guarded;
	bp_ipc_lib_owner_init(&m->owner, bypass_arena_fd(a));
	int r = bp_ipc_lib_owner_take(&m->owner);
	if (r) {
		bp_warn("bypass: ipc: no lock owner id in the service arena (%s): "
			"library mode is not available", strerror(-r));
		bp_ipc_lib_owner_fini(&m->owner);
		free(m);
		return -EOPNOTSUPP;
	}
	m->next = maps;
	maps = m;
	*out = m;
	return 0;
}

int bp_ipc_lib_map_open(int afd, struct lib_map **out)
{
	pthread_once(&atfork_once, install_atfork);
	struct stat st;
	if (bp_sys_fstat(afd, &st) < 0)
		return -errno;
	pthread_mutex_lock(&lock);
	struct lib_map *m = find(st.st_dev, st.st_ino);
	int r = 0;
	if (m) {
		m->refs++;
		*out = m;
	} else {
		bypass_arena *a;
		r = bypass_arena_open(afd, &a);
		if (!r && (r = add(a, &st, -1, out)))
			bypass_arena_close(a);
	}
	pthread_mutex_unlock(&lock);
	return r;
}

int bp_ipc_lib_map_adopt(bypass_arena *a, int guarded, struct lib_map **out)
{
	pthread_once(&atfork_once, install_atfork);
	struct stat st;
	if (bp_sys_fstat(bypass_arena_fd(a), &st) < 0)
		return -errno;
	pthread_mutex_lock(&lock);
	int r = add(a, &st, guarded, out);
	pthread_mutex_unlock(&lock);
	return r;
}

void bp_ipc_lib_map_put(struct lib_map *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&lock);
	if (--m->refs == 0) {
		for (struct lib_map **pp = &maps; *pp; pp = &(*pp)->next)
			if (*pp == m) {
				*pp = m->next;
				break;
			}
		bp_ipc_lib_owner_fini(&m->owner);
		bypass_arena_close(m->arena);
		free(m);
	}
	pthread_mutex_unlock(&lock);
}

void bp_ipc_lib_core_add(struct lib_core *lc)
{
	pthread_mutex_lock(&lock);
	lc->next_open = cores;
	cores = lc;
	pthread_mutex_unlock(&lock);
}

void bp_ipc_lib_core_del(struct lib_core *lc)
{
	pthread_mutex_lock(&lock);
	for (struct lib_core **pp = &cores; *pp; pp = &(*pp)->next_open)
		if (*pp == lc) {
			*pp = lc->next_open;
			break;
		}
	pthread_mutex_unlock(&lock);
}

bool bp_ipc_lib_core_hold(struct lib_core *lc)
{
	pthread_mutex_lock(&lock);
	for (struct lib_core *c = cores; c; c = c->next_open)
		if (c == lc)
			return true;
	pthread_mutex_unlock(&lock);
	return false;
}

void bp_ipc_lib_core_release(void)
{
	pthread_mutex_unlock(&lock);
}

/* Settle the mapping's protection for an opener that wants (gate) or not
 * the key, or requires it: 1 guarded, 0 not, or -errno. */
int bp_ipc_lib_map_protect(struct lib_map *m, int gate, bool required, void *heap, size_t len)
{
	pthread_mutex_lock(&lock);
	int r;
	if (m->guarded < 0) {
		r = gate ? bp_ipc_lib_guard(heap, len) : 0;
		if (r == 0)
			m->guarded = gate ? 1 : 0;
		r = r ? r : m->guarded;
	} else if (!m->guarded && required) {
		bp_info("bypass: ipc: the service is mapped unguarded in this process already: "
			"the gate cannot be had");
		r = -EOPNOTSUPP;
	} else {
		r = m->guarded;
	}
	pthread_mutex_unlock(&lock);
	return r;
}
