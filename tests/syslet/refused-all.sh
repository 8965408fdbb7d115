#!/usr/bin/env bash
# Every syslet test again with io_uring refused (helper-noring: a seccomp
# filter makes io_uring_setup fail): the worker engine must run everything.
# The io_uring parts of each test say they are not tested.  A test missing
# from the build fails this one; so does a run in which no test ran.
set -u
b=${BYPASS_BUILD:?BYPASS_BUILD is set by CTest}/tests/syslet
[ -x "$b/helper-noring" ] || { echo "FAIL: $b/helper-noring not built"; exit 1; }
# Can this machine filter at all?  (If not, every test below would skip.)
out=$("$b/helper-noring" /bin/true 2>&1)
rc=$?
if [ $rc -eq 77 ]; then
	echo "SKIP: $out"; exit 77
elif [ $rc -ne 0 ]; then
	echo "FAIL: helper-noring /bin/true exited $rc: $out"; exit 1
fi
fail=0 ran=0 skipped=0
for t in basic control validate async threads fork fuzz destroy hostile; do
	if [ ! -x "$b/$t" ]; then
		echo "FAIL: $b/$t not built"; fail=1; continue
	fi
	out=$("$b/helper-noring" "$b/$t" 2>&1)
	rc=$?
	if [ $rc -eq 77 ]; then
		skipped=$((skipped + 1)); echo "skipped: $t: $(echo "$out" | tail -1)"
	elif [ $rc -ne 0 ]; then
		echo "FAIL: $t with io_uring refused (exit $rc):"; echo "$out" | tail -5; fail=1
	else
		ran=$((ran + 1))
	fi
done
if [ $ran -eq 0 ]; then
	echo "FAIL: no syslet test ran with io_uring refused ($skipped skipped)"; exit 1
fi
[ $fail -eq 0 ] && echo "PASS: $ran syslet tests with io_uring refused ($skipped skipped)"
exit $fail
