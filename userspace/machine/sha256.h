/* sha256 — the SHA-256 digest (FIPS 180-4) of a byte string, as lowercase
 * hex. Used for the Machine profile cache's identity: a name that cannot
 * collide by accident between two Machines. Not for secrets.
 */
#ifndef NUNATAK_MACHINE_SHA256_H
#define NUNATAK_MACHINE_SHA256_H

#include <stddef.h>

#define SHA256_HEX_LEN 64

/* hex = the 64 hex digits + NUL of SHA-256(data, len); hex holds 65 bytes */
void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);

#endif
