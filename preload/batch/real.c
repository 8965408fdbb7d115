/* SPDX-License-Identifier: MIT */
/* The real functions behind the wrappers, found with dlsym(RTLD_NEXT). */
#include "preload.h"

#define DEFINE(ret, name, args) ret(*real_##name) args;
REAL_FUNCS(DEFINE)

#define RESOLVE(ret, name, args) \
	if (!real_##name)        \
		real_##name = (ret(*) args)dlsym(RTLD_NEXT, #name);
void pl_resolve_all(void)
{
	REAL_FUNCS(RESOLVE)
}
