/* curve_internal — what curve.c and curve_zap.c share: reading a key file
 * under the trust rules and splitting it into key lines. Not for other
 * modules: they use curve.h. */
#ifndef NUNATAK_WIRE_CURVE_INTERNAL_H
#define NUNATAK_WIRE_CURVE_INTERNAL_H

#include <stddef.h>

/* the biggest single-key file read */
#define CURVE_KEY_FILE_MAX_BYTES 4096

/* @path passed through trust_open(), and when @secret also not readable by
 * group or others, read whole (at most @max bytes, else -EFBIG) into a
 * NUL-terminated buffer *@text (to free; a secret one to wipe with
 * curve_text_free()). 0 or -errno with the message in @err. */
int curve_read_trusted(const char *path, int secret, size_t max, char **text, char *err,
		       size_t errlen);
void curve_text_free(char *text);

/* Calls @fn for each key line of @text (@path names it in messages): a key
 * line's first blank-separated word is a 40-character Z85 key, the rest of
 * the line is a comment; lines whose first character is '#' followed by a
 * blank or the end of the line, and blank lines, are skipped. Another line
 * is -EINVAL with "path:line: ..." in @err. @fn returns 0 or -errno (which
 * stops the walk and is returned). Returns 0 or -errno. */
int curve_parse_keys(char *text, const char *path, int (*fn)(const char *z85, unsigned line,
							     void *ctx),
		     void *ctx, char *err, size_t errlen);

/* -ENOTSUP with a message when libzmq was built without CURVE, else 0 */
int curve_check_support(char *err, size_t errlen);

#endif
