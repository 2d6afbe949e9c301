/* mpi_datatypes — see mpi_datatypes.h. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "userspace/agent/mpi_datatypes.h"

/* MPICH handle layout (src/include/mpir_objects.h) */
#define MPICH_HANDLE_KIND_MASK 0xc0000000u
#define MPICH_HANDLE_KIND_BUILTIN 0x40000000u
#define MPICH_HANDLE_OBJ_MASK 0x3c000000u
#define MPICH_HANDLE_OBJ_DATATYPE 0x0c000000u
#define MPICH_BUILTIN_SIZE_SHIFT 8
#define MPICH_BUILTIN_SIZE_MASK 0xffu

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The pair types are direct handles, not builtin: their size is not in the
 * handle, but mpi.h fixes the handles and MPICH preallocates these slots
 * before any user type. */
static const struct {
	uint32_t handle;
	int size;
} mpich_pair_types[] = {
    {0x8c000000u, 8},  /* MPI_FLOAT_INT */
    {0x8c000001u, 12}, /* MPI_DOUBLE_INT */
    {0x8c000002u, 12}, /* MPI_LONG_INT */
    {0x8c000003u, 6},  /* MPI_SHORT_INT */
    {0x8c000004u, 20}, /* MPI_LONG_DOUBLE_INT */
};

int mpi_datatype_size_mpich(uint64_t handle)
{
	uint32_t h = (uint32_t)handle;

	if ((h & MPICH_HANDLE_KIND_MASK) == MPICH_HANDLE_KIND_BUILTIN &&
	    (h & MPICH_HANDLE_OBJ_MASK) == MPICH_HANDLE_OBJ_DATATYPE)
		return (int)((h >> MPICH_BUILTIN_SIZE_SHIFT) & MPICH_BUILTIN_SIZE_MASK);
	for (size_t i = 0; i < ARRAY_SIZE(mpich_pair_types); i++)
		if (mpich_pair_types[i].handle == h)
			return mpich_pair_types[i].size;
	return -ENOENT;
}

/* Open MPI 4.1 predefined datatype objects (ompi/datatype/ompi_datatype_module.c),
 * x86_64 LP64 sizes. Deliberately absent: ompi_mpi_datatype_null,
 * ompi_mpi_unavailable, ompi_mpi_integer16 and ompi_mpi_real2 (size depends
 * on the build). */
static const struct {
	const char *symbol;
	int size;
} openmpi_types[] = {
    /* C */
    {"ompi_mpi_char", 1},
    {"ompi_mpi_signed_char", 1},
    {"ompi_mpi_unsigned_char", 1},
    {"ompi_mpi_byte", 1},
    {"ompi_mpi_packed", 1},
    {"ompi_mpi_wchar", 4},
    {"ompi_mpi_short", 2},
    {"ompi_mpi_unsigned_short", 2},
    {"ompi_mpi_int", 4},
    {"ompi_mpi_unsigned", 4},
    {"ompi_mpi_long", 8},
    {"ompi_mpi_unsigned_long", 8},
    {"ompi_mpi_long_long_int", 8},
    {"ompi_mpi_unsigned_long_long", 8},
    {"ompi_mpi_float", 4},
    {"ompi_mpi_double", 8},
    {"ompi_mpi_long_double", 16},
    {"ompi_mpi_int8_t", 1},
    {"ompi_mpi_uint8_t", 1},
    {"ompi_mpi_int16_t", 2},
    {"ompi_mpi_uint16_t", 2},
    {"ompi_mpi_int32_t", 4},
    {"ompi_mpi_uint32_t", 4},
    {"ompi_mpi_int64_t", 8},
    {"ompi_mpi_uint64_t", 8},
    {"ompi_mpi_c_bool", 1},
    {"ompi_mpi_c_complex", 8},
    {"ompi_mpi_c_float_complex", 8},
    {"ompi_mpi_c_double_complex", 16},
    {"ompi_mpi_c_long_double_complex", 32},
    {"ompi_mpi_aint", 8},
    {"ompi_mpi_offset", 8},
    {"ompi_mpi_count", 8},
    /* C pair types: data bytes, padding excluded */
    {"ompi_mpi_float_int", 8},
    {"ompi_mpi_double_int", 12},
    {"ompi_mpi_long_int", 12},
    {"ompi_mpi_2int", 8},
    {"ompi_mpi_short_int", 6},
    {"ompi_mpi_longdbl_int", 20},
    /* C++ */
    {"ompi_mpi_cxx_bool", 1},
    {"ompi_mpi_cxx_cplex", 8},
    {"ompi_mpi_cxx_dblcplex", 16},
    {"ompi_mpi_cxx_ldblcplex", 32},
    /* Fortran */
    {"ompi_mpi_character", 1},
    {"ompi_mpi_logical", 4},
    {"ompi_mpi_integer", 4},
    {"ompi_mpi_real", 4},
    {"ompi_mpi_dblprec", 8},
    {"ompi_mpi_cplex", 8},
    {"ompi_mpi_dblcplex", 16},
    {"ompi_mpi_ldblcplex", 32},
    {"ompi_mpi_2integer", 8},
    {"ompi_mpi_2real", 8},
    {"ompi_mpi_2dblprec", 16},
    {"ompi_mpi_2cplex", 16},
    {"ompi_mpi_2dblcplex", 32},
    {"ompi_mpi_logical1", 1},
    {"ompi_mpi_logical2", 2},
    {"ompi_mpi_logical4", 4},
    {"ompi_mpi_logical8", 8},
    {"ompi_mpi_integer1", 1},
    {"ompi_mpi_integer2", 2},
    {"ompi_mpi_integer4", 4},
    {"ompi_mpi_integer8", 8},
    {"ompi_mpi_real4", 4},
    {"ompi_mpi_real8", 8},
    {"ompi_mpi_real16", 16},
    {"ompi_mpi_complex8", 8},
    {"ompi_mpi_complex16", 16},
    {"ompi_mpi_complex32", 32},
    /* MPI-1 bounds markers: no data */
    {"ompi_mpi_lb", 0},
    {"ompi_mpi_ub", 0},
};

int mpi_datatype_size_openmpi(const char *symbol)
{
	if (!symbol)
		return -ENOENT;
	for (size_t i = 0; i < ARRAY_SIZE(openmpi_types); i++)
		if (!strcmp(openmpi_types[i].symbol, symbol))
			return openmpi_types[i].size;
	return -ENOENT;
}
