/* SPDX-License-Identifier: MIT */
/* bypass/bypass.h - every public bypass header. */
#ifndef BYPASS_BYPASS_H
#define BYPASS_BYPASS_H

#include <bypass/core.h>
#include <bypass/notify.h>
#include <bypass/batch.h>
#include <bypass/syslet.h>
#include <bypass/ipc.h>
#include <bypass/pager.h>

#endif
