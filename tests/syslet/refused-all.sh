#!/usr/bin/env bash
# Every syslet test again with io_uring refused (helper-noring: a seccomp
# filter makes io_uring_setup fail): the worker engine must run everything.
# The io_uring parts of each test say they are not tested and skip.
set -u
b=${BYPASS_BUILD:?BYPASS_BUILD is set by CTest}/tests/syslet
[ -x "$b/helper-noring" ] || { echo "SKIP: $b/helper-noring not built"; exit 77; }
fail=0 n=0
for t in basic control validate async threads fork fuzz destroy; do
	[ -x "$b/$t" ] || continue
	n=$((n + 1))
	out=$("$b/helper-noring" "$b/$t" 2>&1)
	rc=$?
	if [ $rc -eq 77 ]; then
		echo "SKIP: $out"; exit 77
	elif [ $rc -ne 0 ]; then
		echo "FAIL: $t with io_uring refused (exit $rc):"; echo "$out" | tail -5; fail=1
	fi
done
[ $fail -eq 0 ] && echo "PASS: $n syslet tests with io_uring refused"
exit $fail
