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

/* rest (after "MPI_", len n) has a lower-case letter */
static int has_lower(const char *rest, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (islower((unsigned char)rest[i]))
			return 1;
	return 0;
}

/* the length of rest (len n) without a Fortran binding's suffix: trailing
 * underscores (mpi_send_, mpi_send__), then _f08ts (MPICH's mpi_f08),
 * _f08 (Open MPI's) or _f (Open MPI's MPI_Send_f) */
static size_t strip_fortran_suffix(const char *rest, size_t n)
{
	static const char *const suffixes[] = {"_f08ts", "_f08", "_f"};
	size_t i, k;

	while (n && rest[n - 1] == '_')
		n--;
	for (i = 0; i < sizeof(suffixes) / sizeof(*suffixes); i++) {
		k = strlen(suffixes[i]);
		if (n > k && !strncasecmp(rest + n - k, suffixes[i], k))
			return n - k;
	}
	return n;
}

int mpi_library_function_spelled(const char *function, char *buf, size_t len,
				 enum mpi_binding *binding)
{
	const char *rest;
	size_t n, stem, i, k;
	int upper, c;

	if (!function || !buf)
		return -EINVAL;
	upper = function[0] == 'P' || function[0] == 'M';
	rest = function + (function[0] == (upper ? 'P' : 'p'));
	if (strncmp(rest, upper ? "MPI_" : "mpi_", 4) || !isalpha((unsigned char)rest[4]))
		return -EINVAL;
	rest += 4;
	n = strlen(rest);
	stem = strip_fortran_suffix(rest, n);
	if (!stem)
		return -EINVAL;
	c = upper && stem == n && has_lower(rest, n); /* the C binding: as spelled */
	if (binding)
		*binding = c ? MPI_BINDING_C : MPI_BINDING_FORTRAN;
	if (4 + stem + 1 > len)
		return -ENOSPC;
	memcpy(buf, "MPI_", 4);
	k = 4;
	i = 0;
	if (!c && stem > 2 && (rest[0] == 'T' || rest[0] == 't') && rest[1] == '_') { /* MPI_T_ */
		buf[k++] = 'T';
		buf[k++] = '_';
		i = 2;
	}
	for (; i < stem; i++)
		buf[k++] = c ? rest[i]
			     : (char)(i == 0 ? toupper((unsigned char)rest[i])
					     : tolower((unsigned char)rest[i]));
	buf[k] = '\0';
	return 0;
}

int mpi_library_function_name(const char *function, char *buf, size_t len)
{
	return mpi_library_function_spelled(function, buf, len, NULL);
}
