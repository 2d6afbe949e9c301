/* md5 — the MD5 digest (RFC 1321, computed by nettle) of a buffer, to compare a source file
 * with the checksum a DWARF 5 line table records for it (the compilers'
 * choice, not a security measure: a file that matches is the one the
 * debug information describes, nothing more).
 */
#ifndef NUNATAK_SOURCE_MD5_H
#define NUNATAK_SOURCE_MD5_H

#include <stddef.h>

#define MD5_DIGEST_BYTES 16

/* The digest of data[0..len) in out. Never fails. */
void md5_buffer(const void *data, size_t len, unsigned char out[MD5_DIGEST_BYTES]);

/* Parses 32 hexadecimal digits (either case, optional "0x") into out:
 * 0, or -EINVAL. */
int md5_parse_hex(const char *hex, unsigned char out[MD5_DIGEST_BYTES]);

#endif
