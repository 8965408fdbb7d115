/* SPDX-License-Identifier: MIT */
/* The real functions behind the wrappers (preload/common/scaffold.h). */
#include "preload.h"

PL_REAL_DEFINE(PL_REAL_FUNCS)
