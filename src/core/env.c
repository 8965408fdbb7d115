/* SPDX-License-Identifier: MIT */
/*
 * Parsing helpers for the preloads and the bypass command, which turn
 * environment variables into options.  The library itself reads no
 * environment (BYPASS_LOG aside, log.c): tests/core/layout.sh fails when
 * src/ calls getenv or these outside this file and log.c.
 */
#include "core/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

uint64_t bp_env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	/* strtoull takes "-5" as 2^64-5 and clamps what is too large to
	 * ULLONG_MAX (ERANGE): both would pass as huge values. */
	const char *p = s;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '-') {
		bp_warn("bypass: ignoring %s=%s (negative)", name, s);
		return def;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (*end || end == s) {
		bp_warn("bypass: ignoring %s=%s (not a number)", name, s);
		return def;
	}
	if (errno == ERANGE) {
		bp_warn("bypass: ignoring %s=%s (out of range)", name, s);
		return def;
	}
	return v;
}

int bp_env_switch(const char *s)
{
	if (!s)
		return -1;
	if (!strcmp(s, "0") || !strcasecmp(s, "off") || !strcasecmp(s, "no") ||
	    !strcasecmp(s, "false"))
		return 0;
	if (!strcmp(s, "1") || !strcasecmp(s, "on") || !strcasecmp(s, "yes") ||
	    !strcasecmp(s, "true"))
		return 1;
	return -1;
}

bool bp_env_bool(const char *name, bool def)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	int v = bp_env_switch(s);
	if (v >= 0)
		return v;
	bp_warn("bypass: ignoring %s=%s (not 0/1)", name, s);
	return def;
}
