/* run_token — see run_token.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "userspace/cli/run_token.h"
#include "userspace/launch/launch.h"

#define OMPI_ENV_LIST "OMPI_MCA_mca_base_env_list"

int run_token_new(char token[33])
{
	unsigned char b[16];
	size_t i;

	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		return errno ? -errno : -EIO;
	for (i = 0; i < sizeof(b); i++)
		sprintf(token + 2 * i, "%02x", b[i]);
	return 0;
}

struct saved_env {
	char *run, *ompi;
};

static int env_for_child(const char *token, struct saved_env *s)
{
	const char *run = getenv("NUNATAK_RUN"), *ompi = getenv(OMPI_ENV_LIST);
	char *list = NULL;
	int e = 0;

	s->run = run ? strdup(run) : NULL;
	s->ompi = ompi ? strdup(ompi) : NULL;
	if ((run && !s->run) || (ompi && !s->ompi))
		return -ENOMEM;
	if (ompi && ompi[0] ? asprintf(&list, "%s;NUNATAK_RUN", ompi) < 0
			    : !(list = strdup("NUNATAK_RUN")))
		return -ENOMEM;
	if (setenv("NUNATAK_RUN", token, 1) || setenv(OMPI_ENV_LIST, list, 1))
		e = -errno;
	free(list);
	return e;
}

static void env_restore(struct saved_env *s)
{
	if (s->run)
		setenv("NUNATAK_RUN", s->run, 1);
	else
		unsetenv("NUNATAK_RUN");
	if (s->ompi)
		setenv(OMPI_ENV_LIST, s->ompi, 1);
	else
		unsetenv(OMPI_ENV_LIST);
	free(s->run);
	free(s->ompi);
}

int run_token_launch(const char *token, struct launch *l, const char *exe, char *const argv[])
{
	struct saved_env s = { 0 };
	int e;

	e = env_for_child(token, &s);
	if (!e)
		e = launch_prepare(l, exe, argv);
	env_restore(&s);
	return e;
}
