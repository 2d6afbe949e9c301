/* mpi_library — see mpi_library.h. */
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "userspace/attribution/mpi_library.h"

static const char *const api_prefixes[] = {"libmpi", "libpmpi"};

static const char *const internal_prefixes[] = {
    "libopen-pal", "libopen-rte", "libpmix", "libprrte", "mca_",    "libucp",  "libuct",
    "libucs",	   "libucm",	  "libfabric", "libpsm",   "libinfinipath", "libhcoll",
    "libmxm",	   "libxpmem",	  "libknem",
};

static int has_prefix(const char *s, const char *const *prefixes, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strncmp(s, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

int mpi_library_is_api(const char *display_name)
{
	return display_name &&
	       has_prefix(display_name, api_prefixes, sizeof(api_prefixes) / sizeof(*api_prefixes));
}

int mpi_library_is_mpi(const char *display_name)
{
	return mpi_library_is_api(display_name) ||
	       (display_name && has_prefix(display_name, internal_prefixes,
					   sizeof(internal_prefixes) / sizeof(*internal_prefixes)));
}

int mpi_library_is_api_function(const char *function)
{
	if (!function)
		return 0;
	if (function[0] == 'P')
		function++;
	return !strncmp(function, "MPI_", 4) && isupper((unsigned char)function[4]);
}

int mpi_library_function_name(const char *function, char *buf, size_t len)
{
	const char *rest;
	size_t n, i, k;

	if (!function || !buf)
		return -EINVAL;
	rest = function;
	if (rest[0] == 'P' || rest[0] == 'p')
		rest++;
	if (strncasecmp(rest, "MPI_", 4) || !isalpha((unsigned char)rest[4]))
		return -EINVAL;
	rest += 4;
	n = strlen(rest);
	while (n && rest[n - 1] == '_') /* Fortran: mpi_send_, mpi_send__ */
		n--;
	if (n > 4 && !strncasecmp(rest + n - 4, "_f08", 4)) /* mpi_f08: mpi_send_f08 */
		n -= 4;
	if (!n)
		return -EINVAL;
	if (4 + n + 1 > len)
		return -ENOSPC;
	memcpy(buf, "MPI_", 4);
	k = 4;
	i = 0;
	if (n > 2 && (rest[0] == 'T' || rest[0] == 't') && rest[1] == '_') { /* MPI_T_ */
		buf[k++] = 'T';
		buf[k++] = '_';
		i = 2;
	}
	for (; i < n; i++)
		buf[k++] = (char)(i == 0 ? toupper((unsigned char)rest[i])
					 : tolower((unsigned char)rest[i]));
	buf[k] = '\0';
	return 0;
}
