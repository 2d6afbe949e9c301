/* log — the one logging layer of nunatak.
 *
 * Messages go to stderr (stdout belongs to the application and to --json
 * documents). Style: lowercase, no final period, the error first, the
 * subject quoted: pr_warn("cannot open '%s': %s", path, strerror(-err)).
 * The level is checked before formatting. libbpf's own messages are routed
 * in through log_route_libbpf().
 */
#ifndef NUNATAK_LOG_H
#define NUNATAK_LOG_H

#include <stddef.h>

enum log_level {
	LOG_QUIET = 0,
	LOG_WARN = 1,
	LOG_INFO = 2,
	LOG_DEBUG = 3,
};

extern enum log_level log_current_level;

void log_set_level(enum log_level level);
void log_route_libbpf(void);
void log_print(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* strerror(err) as messages write it, lowercased: "no space left on
 * device". err may be negative (-errno) or positive; the text is written
 * into buf (len bytes) and buf is returned. */
const char *errno_text(int err, char *buf, size_t len);

#define pr_warn(fmt, ...)                                                                         \
	do {                                                                                      \
		if (log_current_level >= LOG_WARN)                                                \
			log_print(LOG_WARN, fmt, ##__VA_ARGS__);                                  \
	} while (0)
#define pr_info(fmt, ...)                                                                         \
	do {                                                                                      \
		if (log_current_level >= LOG_INFO)                                                \
			log_print(LOG_INFO, fmt, ##__VA_ARGS__);                                  \
	} while (0)
#define pr_debug(fmt, ...)                                                                        \
	do {                                                                                      \
		if (log_current_level >= LOG_DEBUG)                                               \
			log_print(LOG_DEBUG, fmt, ##__VA_ARGS__);                                 \
	} while (0)

#endif
