/* SPDX-License-Identifier: MIT */
/*
 * The preloads' settings where a bad value is refused rather than replaced
 * by the default (scaffold.h): the caller then gives up what the setting
 * was for (the pager preload: the program runs unpaged).
 */
#include "common/scaffold.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

const char *bp_pl_env(const char *name)
{
	const char *s = getenv(name);
	return s && *s ? s : NULL;
}

bool bp_pl_env_size(const char *name, size_t def, size_t min, size_t *out)
{
	const char *s = bp_pl_env(name);
	*out = def;
	if (!s)
		return true;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	if (*end) {
		switch (toupper((unsigned char)*end)) {
		case 'K': shift = 10; break;
		case 'M': shift = 20; break;
		case 'G': shift = 30; break;
		case 'T': shift = 40; break;
		default: shift = 99;
		}
		if (shift != 99 && (end[1] == 'i' || end[1] == 'I') && (end[2] == 'B' || end[2] == 'b'))
			end += 2;
		else if (shift != 99 && (end[1] == 'B' || end[1] == 'b'))
			end++;
		if (shift != 99 && end[1])
			shift = 99;
	}
	if (errno || end == s || !isdigit((unsigned char)*s) || shift == 99 ||
	    (shift && v > (~0ull >> shift))) {
		bp_pl_complain("bypass: %s preload: %s=%s is not a size (digits with an "
			       "optional K, M, G or T suffix); %s", bp_pl_name, name, s,
			       bp_pl_refused);
		return false;
	}
	v <<= shift;
	if (v < min) {
		bp_pl_complain("bypass: %s preload: %s=%s is below the minimum of %zu bytes; "
			       "%s", bp_pl_name, name, s, min, bp_pl_refused);
		return false;
	}
	*out = (size_t)v;
	return true;
}

bool bp_pl_env_onoff(const char *name, bool *out)
{
	const char *s = bp_pl_env(name);
	*out = true;
	if (!s)
		return true;
	int v = bp_env_switch(s);
	if (v >= 0) {
		*out = v;
		return true;
	}
	bp_pl_complain("bypass: %s preload: %s=%s is neither 0/off nor 1/on; %s", bp_pl_name,
		       name, s, bp_pl_refused);
	return false;
}
