/* md5 — see md5.h; the digest is nettle's (Debian nettle-dev). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <nettle/md5.h>

#include "userspace/source/md5.h"

void md5_buffer(const void *data, size_t len, unsigned char out[MD5_DIGEST_BYTES])
{
	struct md5_ctx ctx;

	md5_init(&ctx);
	md5_update(&ctx, len, data);
	md5_digest(&ctx, MD5_DIGEST_BYTES, out);
}

int md5_parse_hex(const char *hex, unsigned char out[MD5_DIGEST_BYTES])
{
	int i;

	if (!hex)
		return -EINVAL;
	if (hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
		hex += 2;
	for (i = 0; i < MD5_DIGEST_BYTES; i++)
		if (!isxdigit((unsigned char)hex[2 * i]) ||
		    !isxdigit((unsigned char)hex[2 * i + 1]) ||
		    sscanf(hex + 2 * i, "%2hhx", &out[i]) != 1)
			return -EINVAL;
	return isxdigit((unsigned char)hex[2 * MD5_DIGEST_BYTES]) ? -EINVAL : 0;
}
