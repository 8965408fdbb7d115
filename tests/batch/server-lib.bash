# SPDX-License-Identifier: MIT
# Shared by tests/batch/nginx.sh and lighttpd.sh (sourced, not a test itself):
# a temporary directory with the test files, the preload environment, the
# client, and cleanup that stops what was started, by pid.

set -u
B=${BYPASS_BUILD:?BYPASS_BUILD not set}
SO=$B/libbypass-batch.so
CLIENT=$B/tests/batch/helper-client
[ -r "$SO" ] || { echo "SKIP: no $SO"; exit 77; }
[ -x "$CLIENT" ] || { echo "SKIP: no $CLIENT"; exit 77; }

T=$(mktemp -d /tmp/bypass-batch-srv-XXXXXX)
SERVER_PID=
cleanup() {
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$SERVER_PID" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT

# The preload, after the sanitizer runtime if the library was built with one.
PRELOAD=$SO
if ldd "$SO" 2>/dev/null | grep -q libtsan; then
	echo "SKIP: LD_PRELOAD of a ThreadSanitizer build does not work"
	exit 77
fi
rt=$(ldd "$SO" 2>/dev/null | awk '/libasan\.so/ {print $3; exit}')
if [ -n "$rt" ]; then
	PRELOAD="$rt:$SO"
	export ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
fi

# Files of 0 B to 3 MB (and ESCA's 20 KB html), random bytes.
mkdir -p "$T/www"
FILES=
for s in 0 1 100 1000 4096 20480 65535 65536 65537 200000 1048576 3000000; do
	head -c "$s" /dev/urandom > "$T/www/f$s"
	FILES="${FILES:+$FILES,}f$s"
done
cp "$T/www/f20480" "$T/www/a20.html"
FILES="$FILES,a20.html"

# A port below the ephemeral range (client sockets cannot hold it) that
# nothing listens on.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo 0
}

# wait_port <port> <pid>: our server (still alive) accepts connections.
wait_port() {
	for _ in $(seq 100); do
		kill -0 "$2" 2>/dev/null || return 1
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
			kill -0 "$2" 2>/dev/null && return 0
			return 1
		fi
		sleep 0.05
	done
	return 1
}

# start_server <write-config-function> <command...>: a free port in $PORT,
# the configuration written for it, the command started in its own session
# (lighttpd signals its process group) under the preload; retried on a port
# taken meanwhile.
start_server() {
	local conf=$1 try; shift
	rm -f "$T/stats" "$T"/error.log*
	for try in 1 2 3 4 5; do
		PORT=$(free_port)
		"$conf"
		setsid env LD_PRELOAD="$PRELOAD" BYPASS_BATCH_STATS="$T/stats" "$@" \
			2>>"$T/error.log" &
		SERVER_PID=$!
		wait_port "$PORT" "$SERVER_PID" && return 0
		kill -TERM "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null
		SERVER_PID=
		mv "$T/error.log" "$T/error.log.try$try" 2>/dev/null
	done
	echo "FAIL: $* did not start"
	cat "$T"/error.log* 2>/dev/null
	exit 1
}

# stop_server <signal>: the server started last stops (by its pid), and
# its process group ends: workers may outlive their parent by a moment (a
# loaded machine, ASan), and their counters are appended as they exit.
stop_server() {
	kill "-$1" "$SERVER_PID"
	wait "$SERVER_PID"
	for _ in $(seq 100); do
		pgrep -g "$SERVER_PID" > /dev/null || break
		sleep 0.1
	done
	SERVER_PID=
}

# client <label> <args...>: every byte checked; fail the test on a mismatch.
client() {
	local label=$1; shift
	if ! "$CLIENT" --port "$PORT" --root "$T/www" --files "$FILES" "$@"; then
		echo "FAIL: $label: $*"
		cat "$T/error.log"
		exit 1
	fi
}

# The counters of the processes that ran under the preload.
stat_sum() {
	[ -f "$T/stats" ] || { echo 0; return; }
	sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$T/stats" | awk '{s+=$1} END {print s+0}'
}

# Whether the preload defers sendfile as splices here when asked
# (BYPASS_BATCH_SPLICE=1): IORING_OP_SPLICE and POLL_ADD, and, for the
# servers' non-blocking sockets, the merged wait (IORING_OP_EPOLL_WAIT), as
# bypass doctor reports them (the library's own probes).
splice_expected() {
	local d f
	d=$("$B/bypass" doctor 2>/dev/null) || return 1
	for f in io_uring.SPLICE io_uring.POLL_ADD io_uring.EPOLL_WAIT; do
		grep -qE "^$f +yes" <<<"$d" || return 1
	done
}

# check_counters <label> <env...>: something was deferred (unless
# BYPASS_BATCH=0), and where the run asked for splices and the kernel has
# them, something was spliced.
check_counters() {
	local label=$1 d s; shift
	d=$(stat_sum deferred)
	s=$(stat_sum spliced)
	if [ "${BYPASS_BATCH:-1}" != 0 ] && [ "$d" -le 0 ]; then
		echo "FAIL: $label: nothing was deferred"; exit 1
	fi
	case " $* " in *" BYPASS_BATCH_SPLICE=1 "*) ;; *) return 0 ;; esac
	[ "${BYPASS_BATCH:-1}" != 0 ] || return 0
	if ! splice_expected; then
		echo "note: $label: no splices expected here (bypass doctor: IORING_OP_SPLICE, POLL_ADD or EPOLL_WAIT missing)"
	elif [ "$s" -le 0 ]; then
		echo "FAIL: $label: BYPASS_BATCH_SPLICE=1 but no sendfile was spliced"; exit 1
	fi
}

# The servers' configurations, for the port in $PORT and the files in
# $T/www (start_server's first argument calls one).  Their idle limits
# (lighttpd closes a keep-alive connection idle for 5 s by default) are
# raised to minutes: on a loaded machine a client thread can wait that long
# for a CPU, and a connection closed for it would fail a test on timing.
# nginx_conf <sendfile on|off> <tcp_nopush on|off>: $T/nginx.conf, two workers
nginx_conf() {
	mkdir -p "$T/tmp"
	cat > "$T/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 2;
user root;
pid $T/nginx.pid;
error_log $T/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile $1;
  tcp_nopush $2;
  keepalive_requests 100000;
  keepalive_timeout 600s; send_timeout 600s; client_header_timeout 600s;
  client_body_temp_path $T/tmp; proxy_temp_path $T/tmp; fastcgi_temp_path $T/tmp;
  uwsgi_temp_path $T/tmp; scgi_temp_path $T/tmp;
  server { listen 127.0.0.1:$PORT; root $T/www; }
}
CONF
}

# lighttpd_conf <workers>: $T/lighttpd.conf (0 workers: one process)
lighttpd_conf() {
	cat > "$T/lighttpd.conf" <<CONF
server.document-root = "$T/www"
server.bind = "127.0.0.1"
server.port = $PORT
server.pid-file = "$T/lighttpd.pid"
server.errorlog = "$T/error.log"
server.max-keep-alive-requests = 100000
server.max-keep-alive-idle = 600
server.max-read-idle = 600
server.max-write-idle = 600
server.max-worker = $1
server.event-handler = "linux-sysepoll"
CONF
}

clients_all() {
	client keep-alive --conns 24 --requests 40
	client close --conns 16 --requests 20 --close
	client pipelined --conns 8 --requests 40 --pipeline 4
	client slow --conns 4 --requests 13 --slow --rcvbuf 4096
	client resets --conns 4 --requests 20 --reset-every 2 --rcvbuf 8192
	client after-resets --conns 8 --requests 26
}
