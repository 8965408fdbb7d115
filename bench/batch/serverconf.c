/* SPDX-License-Identifier: MIT */
/*
 * The servers' configurations for bench/batch: Debian's nginx.conf and
 * lighttpd.conf as their packages ship them, with only what running them
 * here needs changed (paths, port, user), and part 1's nginx configuration.
 */
#include "bench.h"
#include "batch_bench.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

bool bsrv_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

/* ------------------------------------------------------------ configurations */

/* Append to a bounded buffer. */
static void cat(char *buf, size_t len, const char *s)
{
	size_t n = strlen(buf);
	if (n + 1 < len)
		snprintf(buf + n, len - n, "%s", s);
}

static bool starts(const char *line, const char *word)
{
	while (*line == ' ' || *line == '\t')
		line++;
	return !strncmp(line, word, strlen(word));
}

/*
 * Debian's nginx.conf (/etc/nginx/nginx.conf as the nginx-light package
 * ships it) with only what running it here needs changed: user root,
 * daemon off, pid and log files in the variant's directory, and our server
 * block instead of sites-enabled (and worker_processes where the variant
 * sets its workers).  Everything else (worker_processes auto,
 * sendfile on, tcp_nopush on, access_log on, gzip on, ...) stays.
 */
static bool nginx_debian_conf(struct bsrv *s, char *text, size_t len)
{
	FILE *f = fopen("/etc/nginx/nginx.conf", "r");
	if (!f)
		return false;
	char line[512], tmp[2048];
	snprintf(text, len, "daemon off;\n");
	while (fgets(line, sizeof(line), f)) {
		if (starts(line, "user ")) {
			cat(text, len, "user root;\n");
		} else if (s->workers > 0 && starts(line, "worker_processes ")) {
			snprintf(tmp, sizeof(tmp), "worker_processes %d;\n", s->workers);
			cat(text, len, tmp);
		} else if (starts(line, "pid ")) {
			snprintf(tmp, sizeof(tmp), "pid %s/nginx.pid;\n", s->dir);
			cat(text, len, tmp);
		} else if (starts(line, "error_log ")) {
			snprintf(tmp, sizeof(tmp), "error_log %s/error.log;\n", s->dir);
			cat(text, len, tmp);
		} else if (starts(line, "access_log ")) {
			snprintf(tmp, sizeof(tmp), "\taccess_log %s/access.log;\n", s->dir);
			cat(text, len, tmp);
		} else if (starts(line, "include /etc/nginx/conf.d/")) {
			continue;
		} else if (starts(line, "include /etc/nginx/sites-enabled/")) {
			snprintf(tmp, sizeof(tmp),
				 "\tclient_body_temp_path %s/tmp; proxy_temp_path %s/tmp;\n"
				 "\tfastcgi_temp_path %s/tmp; uwsgi_temp_path %s/tmp; "
				 "scgi_temp_path %s/tmp;\n"
				 "\tserver { listen 127.0.0.1:%d; root %s/www; }\n",
				 s->dir, s->dir, s->dir, s->dir, s->dir, s->port, bsrv_top);
			cat(text, len, tmp);
		} else {
			cat(text, len, line);
		}
	}
	fclose(f);
	return strstr(text, "server {") != NULL;
}

/* Part 1's configuration: one worker, sendfile on, tcp_nopush off (nginx's
 * compiled-in default), no access log, unlimited keep-alive. */
static void nginx_part1_conf(struct bsrv *s, char *text, size_t len)
{
	snprintf(text, len,
		 "daemon off;\nmaster_process on;\nworker_processes 1;\nuser root;\n"
		 "pid %s/nginx.pid;\nerror_log %s/error.log;\n"
		 "events { worker_connections 1024; }\n"
		 "http {\n  access_log off;\n  sendfile on;\n  tcp_nopush off;\n"
		 "  keepalive_requests 1000000;\n"
		 "  client_body_temp_path %s/tmp; proxy_temp_path %s/tmp;\n"
		 "  fastcgi_temp_path %s/tmp; uwsgi_temp_path %s/tmp; scgi_temp_path %s/tmp;\n"
		 "  server { listen 127.0.0.1:%d; root %s/www; }\n}\n",
		 s->dir, s->dir, s->dir, s->dir, s->dir, s->dir, s->dir, s->port, bsrv_top);
}

/*
 * Debian's lighttpd.conf with the paths, the port and the address changed,
 * no user switch (we run as root), and no IPv6 listener (use-ipv6.pl would
 * add [::]:port).  Modules, parse options, mime types and conf-enabled stay.
 */
static bool lighttpd_debian_conf(struct bsrv *s, char *text, size_t len)
{
	FILE *f = fopen("/etc/lighttpd/lighttpd.conf", "r");
	if (!f)
		return false;
	char line[512], tmp[2048];
	text[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (starts(line, "server.document-root")) {
			snprintf(tmp, sizeof(tmp), "server.document-root = \"%s/www\"\n", bsrv_top);
		} else if (starts(line, "server.upload-dirs")) {
			snprintf(tmp, sizeof(tmp), "server.upload-dirs = ( \"%s/tmp\" )\n", s->dir);
		} else if (starts(line, "server.errorlog")) {
			snprintf(tmp, sizeof(tmp), "server.errorlog = \"%s/error.log\"\n", s->dir);
		} else if (starts(line, "server.pid-file")) {
			snprintf(tmp, sizeof(tmp), "server.pid-file = \"%s/lighttpd.pid\"\n", s->dir);
		} else if (starts(line, "server.username") || starts(line, "server.groupname") ||
			   starts(line, "include_shell \"/usr/share/lighttpd/use-ipv6.pl")) {
			continue;
		} else if (starts(line, "server.port")) {
			snprintf(tmp, sizeof(tmp), "server.port = %d\nserver.bind = \"127.0.0.1\"\n",
				 s->port);
		} else {
			snprintf(tmp, sizeof(tmp), "%s", line);
		}
		cat(text, len, tmp);
	}
	fclose(f);
	return strstr(text, "server.bind") != NULL;
}

bool bsrv_make_conf(struct bsrv *s)
{
	char path[400], text[8192];
	snprintf(path, sizeof(path), "%s/tmp", s->dir);
	mkdir(path, 0755);
	bool ok = true;
	switch (s->kind) {
	case BSRV_NGINX_DEBIAN:
		ok = nginx_debian_conf(s, text, sizeof(text));
		break;
	case BSRV_NGINX_PART1:
		nginx_part1_conf(s, text, sizeof(text));
		break;
	case BSRV_LIGHTTPD_DEBIAN:
		ok = lighttpd_debian_conf(s, text, sizeof(text));
		break;
	default:
		return true; /* redis: command-line options */
	}
	snprintf(path, sizeof(path), "%s/server.conf", s->dir);
	return ok && bsrv_write_file(path, text);
}
