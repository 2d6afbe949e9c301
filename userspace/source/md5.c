/* md5 — see md5.h; the digest is nettle's (Debian nettle-dev). */
#include <errno.h>
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

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int md5_parse_hex(const char *hex, unsigned char out[MD5_DIGEST_BYTES])
{
	int i, hi, lo;

	if (!hex)
		return -EINVAL;
	if (hex[0] == '0' && (hex[1] == 'x' || hex[1] == 'X'))
		hex += 2;
	for (i = 0; i < MD5_DIGEST_BYTES; i++) {
		hi = hex_value(hex[2 * i]);
		lo = hi < 0 ? -1 : hex_value(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return hex_value(hex[32]) >= 0 ? -EINVAL : 0;
}
