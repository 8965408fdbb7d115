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
# The key-value service (library mode): the server loads the object, one
# client runs the handlers in its own process, another through the server's
# thread; both see the same store; SAVE reaches the server's loop as an event.
for p in ipc-kv-server ipc-kv-client ipc-kv.so; do
	[ -e "$ex/$p" ] || { echo "SKIP: $ex/$p not built"; exit 77; }
done
tmp=$(mktemp -d)
trap 'cleanup; rm -rf "$tmp"' EXIT
install -m 0755 "$ex/ipc-kv.so" "$tmp/ipc-kv.so" # library mode refuses a group-writable object
name="examples-kv-$$"
# --foreground: the kill below reaches the server alone, with no SIGCONT
# after it.  timeout's SIGCONT, sent just after the SIGTERM it forwards, can
# cancel the SIGSTOP of LeakSanitizer's exit-time attach in an ASan build,
# which then waits for the server forever (seen on a loaded machine).
timeout --foreground 60 "$ex/ipc-kv-server" "$name" "$tmp/ipc-kv.so" 30 >"$tmp/log" &
srv=$!
pids+=("$srv")
for i in $(seq 100); do grep -q serving "$tmp/log" 2>/dev/null && break; sleep 0.05; done
kv() { timeout 20 "$ex/ipc-kv-client" "$name" "$@"; }
kv lib set greeting hello || fail=1
[ "$(kv msg get greeting)" = hello ] || { echo "FAIL: message mode does not see library mode's SET"; fail=1; }
kv msg set greeting again || fail=1
[ "$(kv lib get greeting)" = again ] || { echo "FAIL: library mode does not see message mode's SET"; fail=1; }
kv lib check 2000 | grep -q "library mode" || { echo "FAIL: kv lib check"; fail=1; }
kv msg check 500 | grep -q "message mode" || { echo "FAIL: kv msg check"; fail=1; }
kv lib save || fail=1
for i in $(seq 100); do grep -q "save asked" "$tmp/log" && break; sleep 0.05; done
grep -q "save asked" "$tmp/log" || { echo "FAIL: the SAVE event did not reach the server's loop"; fail=1; }
kill "$srv"
wait "$srv" 2>/dev/null

if [ -n "${BYPASS_SOURCE:-}" ]; then
	echo "the conversion: $(diff "$BYPASS_SOURCE/examples/ipc-echo-unix.c" \
		"$BYPASS_SOURCE/examples/ipc-echo-bypass.c" | grep -c '^[<>]') changed lines"
fi
[ $fail = 0 ] && echo "PASS ipc/examples"
exit $fail
