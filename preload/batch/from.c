/* SPDX-License-Identifier: MIT */
/*
 * from_bypass: the wrappers count the calls whose caller is the code of
 * another libbypass object (libbypass.so, libbypass-pager.so, any
 * libbypass*.so but this one).  The library makes its system calls through
 * core/syscall.h, never through a name a preload defines (issue 34): under
 * `bypass run --batch --pager` such a call would land here, in another
 * copy's "inside bypass" state, from the pager's fault path too.  The stats
 * line reports the count (tests/pager/preload-stacked-*).
 *
 * How a caller is told: its return address against the executable PT_LOAD
 * segments of those objects, found once by dl_iterate_phdr and kept in a
 * table that is read-only afterwards.  A range check costs a few compares
 * and is safe in a signal handler (the pager's fault path runs in one);
 * dladdr() on every call would take the loader's lock there.  The table is
 * made by the constructor, or by the first wrapper call before it (another
 * preload's constructor may run first: the objects of the program's start
 * are all loaded by then).  A libbypass object dlopen'ed later is not in
 * the table (a process loads the library at its start: its link or a
 * preload).  A call the compiler made as a tail call reports its caller's
 * caller: such a call from a libbypass object may be missed, never invented.
 */
#include "preload.h"

#include <link.h>
#include <stdint.h>

struct bt_span bp_bt_from_text[BT_FROM_SPANS];
int bp_bt_from_nspans;
int bp_bt_from_state; /* 0 not made, 1 being made, 2 made */

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	const char *name = info->dlpi_name, *base = name ? strrchr(name, '/') : NULL;
	base = base ? base + 1 : name;
	if (!base || strncmp(base, "libbypass", 9))
		return 0;
	struct bt_span spans[BT_FROM_SPANS];
	int n = 0;
	bool self = false;
	uintptr_t me = (uintptr_t)&bp_bt_from_init;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		uintptr_t hi = lo + ph->p_memsz;
		if (me >= lo && me < hi)
			self = true;
		if (n < BT_FROM_SPANS)
			spans[n++] = (struct bt_span){ lo, hi };
	}
	for (int i = 0; !self && i < n && bp_bt_from_nspans < BT_FROM_SPANS; i++)
		bp_bt_from_text[bp_bt_from_nspans++] = spans[i];
	return 0;
}

void bp_bt_from_init(void)
{
	int want = 0;
	if (!__atomic_compare_exchange_n(&bp_bt_from_state, &want, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return; /* made, or being made (this thread, under a signal, or another) */
	dl_iterate_phdr(add_object, NULL);
	__atomic_store_n(&bp_bt_from_state, 2, __ATOMIC_RELEASE);
}
