/* md5 — see md5.h. Written from RFC 1321: the 64 additive constants are
 * floor(|sin(i + 1)| * 2^32) (generated; the tests check known digests). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "userspace/source/md5.h"

static const uint32_t md5_k[64] = {
	0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee,
	0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
	0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
	0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
	0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa,
	0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
	0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
	0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
	0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
	0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
	0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05,
	0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
	0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039,
	0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
	0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
	0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static const uint8_t md5_shift[64] = {
	7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
	5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
	4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
	6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};

static uint32_t rotl(uint32_t x, unsigned n)
{
	return (x << n) | (x >> (32 - n));
}

static void md5_block(uint32_t h[4], const unsigned char *block)
{
	uint32_t m[16], a = h[0], b = h[1], c = h[2], d = h[3], f, t;
	unsigned i, g;

	for (i = 0; i < 16; i++)
		m[i] = (uint32_t)block[4 * i] | (uint32_t)block[4 * i + 1] << 8 |
		       (uint32_t)block[4 * i + 2] << 16 | (uint32_t)block[4 * i + 3] << 24;
	for (i = 0; i < 64; i++) {
		if (i < 16) {
			f = (b & c) | (~b & d);
			g = i;
		} else if (i < 32) {
			f = (d & b) | (~d & c);
			g = (5 * i + 1) % 16;
		} else if (i < 48) {
			f = b ^ c ^ d;
			g = (3 * i + 5) % 16;
		} else {
			f = c ^ (b | ~d);
			g = (7 * i) % 16;
		}
		t = d;
		d = c;
		c = b;
		b = b + rotl(f + a + md5_k[i] + m[g], md5_shift[i]);
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
}

void md5_digest(const void *data, size_t len, unsigned char out[MD5_DIGEST_BYTES])
{
	uint32_t h[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
	const unsigned char *p = data;
	unsigned char tail[128] = {0};
	uint64_t bits = (uint64_t)len * 8;
	size_t i, rest, tail_len;

	for (i = 0; i + 64 <= len; i += 64)
		md5_block(h, p + i);
	rest = len - i;
	memcpy(tail, p + i, rest);
	tail[rest] = 0x80;
	tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
	for (i = 0; i < 8; i++)
		tail[tail_len - 8 + i] = (unsigned char)(bits >> (8 * i));
	for (i = 0; i < tail_len; i += 64)
		md5_block(h, tail + i);
	for (i = 0; i < 16; i++)
		out[i] = (unsigned char)(h[i / 4] >> (8 * (i % 4)));
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
