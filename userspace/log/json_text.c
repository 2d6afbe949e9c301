/* json_text — see json_text.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/log/json_text.h"

/* The length of the valid UTF-8 sequence at s (Unicode table 3-7, "well
 * formed UTF-8 byte sequences"), 0 when s starts none; NUL counts as
 * none. left > 0 bytes are readable. */
static size_t utf8_sequence_len(const unsigned char *s, size_t left)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] && s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0; /* NUL, continuation byte, C0, C1, F5..FF */
	if (s[0] == 0xe0)
		lo = 0xa0; /* overlong below U+0800 */
	else if (s[0] == 0xed)
		hi = 0x9f; /* surrogates U+D800..U+DFFF */
	else if (s[0] == 0xf0)
		lo = 0x90; /* overlong below U+10000 */
	else if (s[0] == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	if (left < n || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

bool json_text_is_clean(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		n = utf8_sequence_len(u + i, len - i);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

char *json_text_escape(const char *s, size_t len, size_t *out_len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0, n;
	char *out;

	/* at worst every byte becomes 4 */
	if (len > (SIZE_MAX - 1) / 4 || !(out = malloc(4 * len + 1))) {
		errno = ENOMEM;
		return NULL;
	}
	while (i < len) {
		n = utf8_sequence_len(u + i, len - i);
		if (n) {
			while (n--)
				out[o++] = (char)u[i++];
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[u[i] >> 4];
		out[o++] = hex[u[i] & 0xf];
		i++;
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}

json_t *json_textn(const char *s, size_t len)
{
	json_t *j;
	char *escaped;
	size_t n;

	if (json_text_is_clean(s, len))
		j = json_stringn_nocheck(s, len);
	else {
		escaped = json_text_escape(s, len, &n);
		if (!escaped)
			return NULL;
		j = json_stringn_nocheck(escaped, n);
		free(escaped);
	}
	if (!j)
		errno = ENOMEM;
	return j;
}

json_t *json_text(const char *s)
{
	return s ? json_textn(s, strlen(s)) : json_null();
}
