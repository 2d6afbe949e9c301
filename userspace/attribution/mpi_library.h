/* mpi_library — which code is the MPI library's and what the MPI standard
 * calls its functions: the rules every reader of a call path shares (the
 * classification of sampled Stacks, analysis/stack_class.h; the call site
 * of an MPI call).
 *
 * The rule, by the file a frame is in (its display name, the basename):
 *  - an MPI API library holds the MPI functions an application calls:
 *    a name starting with "libmpi" or "libpmpi" (Open MPI's libmpi,
 *    libmpi_mpifh, libmpi_usempi*, libmpi_cxx; MPICH's and Intel MPI's
 *    libmpi, libmpich*, libmpifort, libmpicxx; any PMPI layer packaged as
 *    libpmpi*);
 *  - an MPI internal library is one the implementation runs beneath them:
 *    Open MPI's libopen-pal, libopen-rte, libpmix, libprrte and its
 *    plugins mca_*.so; UCX's libucp, libuct*, libucs, libucm; libfabric;
 *    PSM's libpsm*, libinfinipath; Mellanox' libhcoll, libmxm; libxpmem,
 *    libknem.
 * A frame is also an MPI API frame, whatever its file, when its function
 * is named as the MPI standard names one in C ("MPI_X..." or "PMPI_X...",
 * X an upper-case letter): an MPI linked statically, or a library named
 * otherwise, is still recognised by its functions.
 *
 * Names: one rule reads every binding's symbol of an MPI function
 * (mpi_library_function_spelled): the standard name and which binding was
 * entered. The C binding: MPI_X... or PMPI_X... with some lower-case
 * letter after "MPI_" (MPI_Send, MPI_T_init_thread), its name as spelled
 * without the P. A Fortran binding: the name in lower case (mpi_send,
 * mpi_send_, mpi_send__, Open MPI's mpi_f08 mpi_send_f08_, MPICH's
 * mpi_send_f08ts_) or all upper case (MPI_SEND), and Open MPI's aliases
 * MPI_Send_f, MPI_Send_f08; each also with the PMPI prefix in the same
 * case (pmpi_send_, PMPI_SEND). Its name is "MPI_" then an upper-case
 * first letter and the rest lower case, as the standard spells every
 * function but the MPI_T_ tool interface (kept as "MPI_T_" + rest). So
 * PMPI_Send, mpi_send_, pmpi_send__, mpi_send_f08_, MPI_SEND all become
 * MPI_Send. Other suffixes stay in the name (MPI_Send_c, MPICH's
 * mpi_send_f08ts_large_ becomes MPI_Send_f08ts_large): no table function.
 * Pure functions of their arguments; thread-safe.
 */
#ifndef NUNATAK_ATTRIBUTION_MPI_LIBRARY_H
#define NUNATAK_ATTRIBUTION_MPI_LIBRARY_H

#include <stddef.h>

/* 1 when the file named display_name (a basename) is an MPI API library */
int mpi_library_is_api(const char *display_name);
/* 1 when it is an MPI API library or one of the implementation's own */
int mpi_library_is_mpi(const char *display_name);
/* 1 when function is spelled as an MPI function of the C binding
 * (MPI_X..., PMPI_X..., X upper case) */
int mpi_library_is_api_function(const char *function);
/* the binding a symbol of an MPI function is the entry of */
enum mpi_binding {
	MPI_BINDING_C = 1,
	MPI_BINDING_FORTRAN = 2,
};
/* The standard name of the MPI function function spells (a C, PMPI or
 * Fortran binding's symbol) into buf, and its binding into *binding (may
 * be NULL); 0, -EINVAL (NULL, or no MPI function's name: it must start
 * with MPI_/PMPI_ or mpi_/pmpi_ and a letter), -ENOSPC (buf too short). */
int mpi_library_function_spelled(const char *function, char *buf, size_t len,
				 enum mpi_binding *binding);
/* the same, without the binding */
int mpi_library_function_name(const char *function, char *buf, size_t len);

#endif
