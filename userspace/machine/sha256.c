/* sha256 — see sha256.h; the digest is nettle's (Debian nettle-dev). */
#include <stdint.h>
#include <stdio.h>

#include <nettle/sha2.h>

#include "userspace/machine/sha256.h"

void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1])
{
	uint8_t digest[SHA256_DIGEST_SIZE];
	struct sha256_ctx ctx;
	size_t i;

	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	sha256_digest(&ctx, sizeof(digest), digest);
	for (i = 0; i < sizeof(digest); i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}
