/* log — see log.h. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "userspace/log/log.h"

enum log_level log_current_level = LOG_WARN;

void log_set_level(enum log_level level)
{
	log_current_level = level;
}

static void log_vprint(enum log_level level, const char *fmt, va_list ap)
{
	static const char *const prefix[] = {
		[LOG_WARN] = "nunatak: warning: ",
		[LOG_INFO] = "nunatak: ",
		[LOG_DEBUG] = "nunatak: debug: ",
	};

	fputs(prefix[level], stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void log_print(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vprint(level, fmt, ap);
	va_end(ap);
}

const char *errno_text(int err, char *buf, size_t len)
{
	if (!len)
		return buf;
	snprintf(buf, len, "%s", strerror(err < 0 ? -err : err));
	buf[0] = (char)tolower((unsigned char)buf[0]);
	return buf;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf's warnings are details of a Degradation we report ourselves */
	if (log_current_level < LOG_DEBUG)
		return 0;
	(void)level;
	fputs("nunatak: libbpf: ", stderr);
	return vfprintf(stderr, fmt, ap);
}

void log_route_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
