/* json_text — text that comes from outside nunatak (a Run name, a command
 * line, a file or module path, a comm, a symbol, a message quoting them)
 * made into a JSON string.
 *
 * JSON strings are Unicode, such text is bytes: jansson refuses a string
 * that is not UTF-8 (json_string() returns NULL, json_pack() "s" fails),
 * which used to lose a manifest or a --json document. Here valid UTF-8 is
 * kept byte for byte; each byte that is not part of a valid UTF-8 sequence
 * (a lone continuation byte, an overlong form, a UTF-16 surrogate, a code
 * point above U+10FFFF, a sequence cut short, 0xC0, 0xC1, 0xF5..0xFF)
 * becomes the four characters \xNN, lowercase hex: b"sl\xffp" is the
 * string `sl\xffp` (in the JSON text "sl\\xffp"), what Python's
 * bytes.decode("utf-8", "backslashreplace") gives. A NUL byte inside a
 * length-counted text is written \x00 too, so the result is also a C
 * string. A backslash is kept as it is: `\xff` in a result may also be a
 * name that had those four characters; visible was chosen over lossless.
 *
 * The only failure is running out of memory.
 */
#ifndef NUNATAK_LOG_JSON_TEXT_H
#define NUNATAK_LOG_JSON_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* A new reference: the JSON string of the C string s, or JSON null when s
 * is NULL (an absent text). NULL + errno ENOMEM. */
json_t *json_text(const char *s);

/* The same for len bytes at s, which may hold NUL bytes. */
json_t *json_textn(const char *s, size_t len);

/* The escaped text as a new NUL-terminated string the caller frees, its
 * length in *out_len when out_len is not NULL. NULL + errno ENOMEM. */
char *json_text_escape(const char *s, size_t len, size_t *out_len);

/* true when len bytes at s are valid UTF-8 without a NUL: json_text keeps
 * them as they are */
bool json_text_is_clean(const char *s, size_t len);

#endif
