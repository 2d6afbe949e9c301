/* mpi_datatypes — the size in bytes of a predefined MPI datatype, from what a
 * uprobe sees of it, so that an MPI call's bytes = count * size(datatype).
 *
 * MPICH: MPI_Datatype is an int whose builtin values encode their size in
 * bits 8-15 (kind bits 30-31 == builtin, object bits 26-29 == datatype); the
 * five C pair types (MPI_FLOAT_INT .. MPI_LONG_DOUBLE_INT) are fixed
 * "direct" handles 0x8c000000 .. 0x8c000004 in mpi.h, known here too.
 * Fortran handles are the same integers.
 *
 * Open MPI: MPI_Datatype is a pointer to a predefined object exported by
 * libmpi (ompi_mpi_double, ...). The caller turns the handle into a symbol
 * name (process address -> module vaddr -> elf_file__find_object(), whose
 * start must equal the vaddr) and asks here. Sizes are those of x86_64 LP64
 * with gfortran defaults (long double 16, INTEGER 4, pair types as
 * MPI_Type_size counts them: data only, MPI_DOUBLE_INT 12).
 *
 * A derived (user-built) datatype is never guessed: -ENOENT, the bytes are
 * unavailable. Neither is a predefined type whose size depends on how the
 * library was configured (Open MPI's MPI_INTEGER16 and MPI_REAL2 are
 * size-0 placeholders when the Fortran compiler lacks the kind).
 * Pure functions, no state: safe from any thread.
 */
#ifndef NUNATAK_MPI_DATATYPES_H
#define NUNATAK_MPI_DATATYPES_H

#include <stdint.h>

/* Size in bytes (0 for MPI_LB/MPI_UB) of the MPICH predefined datatype
 * handle. Only the low 32 bits are read: the handle is an int, and the x86_64
 * ABI leaves the upper half of its argument register undefined.
 * Returns -ENOENT when the handle is not predefined (derived: size unknown)
 * or is MPI_DATATYPE_NULL. */
int mpi_datatype_size_mpich(uint64_t handle);

/* Size in bytes (0 for MPI_LB/MPI_UB) of the Open MPI predefined datatype
 * object named symbol ("ompi_mpi_double" -> 8). Covers every C, C++ and
 * Fortran predefined datatype object libmpi.so.40 (Open MPI 4.1) exports.
 * Returns -ENOENT when symbol is not such an object, or is
 * ompi_mpi_datatype_null, ompi_mpi_unavailable, or a build-dependent one
 * (see above). */
int mpi_datatype_size_openmpi(const char *symbol);

#endif
