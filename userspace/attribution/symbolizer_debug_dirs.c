/* symbolizer_debug_dirs — where llvm-symbolizer looks for split debug
 * information (symbolizer_set_debug_dirs() in symbolizer.h): the
 * process-wide list, checked when set, copied into each invocation's
 * argv. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/attribution/symbolizer.h"
#include "userspace/attribution/symbolizer_exec.h"
#include "userspace/config/trust.h"

static pthread_mutex_t dirs_lock = PTHREAD_MUTEX_INITIALIZER;
static char **dirs_set; /* the trusted directories of the last set */
static size_t n_dirs_set;

static void free_list(char **list, size_t n)
{
	size_t i;

	for (i = 0; list && i < n; i++)
		free(list[i]);
	free(list);
}

/* 0 when dir may be read by this process' symbolizer, else -errno with
 * why in err (when err is still empty) */
static int check_dir(const char *dir, char *err, size_t errlen)
{
	char why[512] = "", reached[4096];
	int fd, ret;

	/* what the tool reads there: said in the refusal */
	snprintf(reached, sizeof(reached), "%s/.build-id", dir);
	if (dir[0] != '/' || strchr(dir, '\n')) {
		ret = -EINVAL;
		snprintf(why, sizeof(why), "'%s' is not an absolute path", dir);
	} else {
		ret = trust_open_dir_chain(reached, dir, &fd, why, sizeof(why));
		if (!ret)
			close(fd);
	}
	if (ret && err && errlen && !err[0])
		snprintf(err, errlen, "debug directory '%s' left out: %s", dir, why);
	return ret;
}

int symbolizer_set_debug_dirs(const char *const *dirs, size_t n, char *err, size_t errlen)
{
	char **list = calloc(n + 1, sizeof(*list));
	size_t i, kept = 0;
	int ret = 0, e;

	if (err && errlen)
		err[0] = '\0';
	if (!list || (n && !dirs)) {
		free(list);
		return list ? -EINVAL : -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		e = dirs[i] ? check_dir(dirs[i], err, errlen) : -EINVAL;
		if (e) {
			ret = ret ?: e;
			continue;
		}
		list[kept] = strdup(dirs[i]);
		if (!list[kept]) {
			free_list(list, kept);
			return -ENOMEM;
		}
		kept++;
	}
	pthread_mutex_lock(&dirs_lock);
	free_list(dirs_set, n_dirs_set);
	dirs_set = list;
	n_dirs_set = kept;
	pthread_mutex_unlock(&dirs_lock);
	return ret;
}

/* "--debug-file-directory=dir" into *arg: 0 or -ENOMEM (*arg NULL) */
static int dir_arg(char **arg, const char *dir)
{
	if (asprintf(arg, "--debug-file-directory=%s", dir) < 0) {
		*arg = NULL;
		return -ENOMEM;
	}
	return 0;
}

int symbolizer_debug_dir_args(char ***args, size_t *n)
{
	char **a;
	size_t i, total;
	int err;

	pthread_mutex_lock(&dirs_lock);
	total = n_dirs_set + 1;
	a = calloc(total + 1, sizeof(*a));
	/* always the system's, first: giving any directory replaces
	 * llvm-symbolizer's own default, which is this one */
	err = a ? dir_arg(&a[0], SYMBOLIZER_SYSTEM_DEBUG_DIR) : -ENOMEM;
	for (i = 0; !err && i < n_dirs_set; i++)
		err = dir_arg(&a[i + 1], dirs_set[i]);
	pthread_mutex_unlock(&dirs_lock);
	if (err) {
		free_list(a, total); /* NULL entries past the failure */
		return err;
	}
	*args = a;
	*n = total;
	return 0;
}
