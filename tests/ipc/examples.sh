#!/bin/bash
# examples: the epoll echo server over Unix sockets and the same server
# converted to bypass both serve three clients each: one that never reads
# its echoes (the server must drop it rather than stall) and two whose
# every echo comes back intact (the client checks them and exits non-zero
# otherwise).
set -u
ex="$BYPASS_BUILD/examples"
for p in ipc-echo-unix ipc-echo-bypass ipc-echo-client; do
	[ -x "$ex/$p" ] || { echo "SKIP: $ex/$p not built"; exit 77; }
done
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; }
trap cleanup EXIT
fail=0
for kind in unix bypass; do
	name="examples-$kind-$$"
	timeout 60 "$ex/ipc-echo-$kind" "$name" 3 &
	srv=$!
	pids+=("$srv")
	timeout 60 "$ex/ipc-echo-client" "$kind" "$name" 1 stall &
	stall=$!
	pids+=("$stall")
	timeout 60 "$ex/ipc-echo-client" "$kind" "$name" 2000 || fail=1
	timeout 60 "$ex/ipc-echo-client" "$kind" "$name" 500 || fail=1
	wait "$stall" || { echo "FAIL: $kind: the client that never reads was not dropped"; fail=1; }
	wait "$srv" || { echo "FAIL: $kind server exited with $?"; fail=1; }
done
if [ -n "${BYPASS_SOURCE:-}" ]; then
	echo "the conversion: $(diff "$BYPASS_SOURCE/examples/ipc-echo-unix.c" \
		"$BYPASS_SOURCE/examples/ipc-echo-bypass.c" | grep -c '^[<>]') changed lines"
fi
[ $fail = 0 ] && echo "PASS ipc/examples"
exit $fail
