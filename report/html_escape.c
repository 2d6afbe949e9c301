/* html_escape — see html_escape.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/html_escape.h"
#include "userspace/log/json_text.h"

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

/* what one byte of UTF-8 text becomes in HTML; NULL: itself */
static const char *html_entity(unsigned char c)
{
	switch (c) {
	case '&':
		return "&amp;";
	case '<':
		return "&lt;";
	case '>':
		return "&gt;";
	case '"':
		return "&quot;";
	case '\'':
		return "&#39;";
	case '\t':
	case '\n':
		return NULL;
	default:
		return c < 0x20 || c == 0x7f ? REPLACEMENT : NULL;
	}
}

char *html_escape(const char *s)
{
	const char *entity;
	char *text, *out, *o;
	size_t len, i, need = 1;

	if (!s) {
		errno = EINVAL;
		return NULL;
	}
	/* bytes that are not UTF-8: \xNN, as the JSON says them */
	text = json_text_escape(s, strlen(s), &len);
	if (!text)
		return NULL;
	for (i = 0; i < len; i++) {
		entity = html_entity((unsigned char)text[i]);
		need += entity ? strlen(entity) : 1;
	}
	out = malloc(need);
	if (!out) {
		free(text);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0, o = out; i < len; i++) {
		entity = html_entity((unsigned char)text[i]);
		if (entity) {
			memcpy(o, entity, strlen(entity));
			o += strlen(entity);
		} else {
			*o++ = text[i];
		}
	}
	*o = '\0';
	free(text);
	return out;
}

/* the escape of the character at s (n bytes left), its length in *skip;
 * NULL: copied as it is */
static const char *script_escape(const unsigned char *s, size_t n, size_t *skip)
{
	*skip = 1;
	if (*s == '<')
		return "\\u003c";
	if (*s == '>')
		return "\\u003e";
	if (*s == '&')
		return "\\u0026";
	if (*s == 0xe2 && n >= 3 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9)) {
		*skip = 3;
		return s[2] == 0xa8 ? "\\u2028" : "\\u2029";
	}
	return NULL;
}

char *json_for_script(const json_t *j, size_t *len)
{
	const unsigned char *u;
	const char *esc;
	size_t n, i, skip, need = 1;
	char *text, *out, *o;

	if (!j) {
		errno = EINVAL;
		return NULL;
	}
	text = json_dumps(j, JSON_COMPACT);
	if (!text) {
		errno = EINVAL;
		return NULL;
	}
	n = strlen(text);
	u = (const unsigned char *)text;
	for (i = 0; i < n; i += skip) {
		esc = script_escape(u + i, n - i, &skip);
		need += esc ? strlen(esc) : skip;
	}
	out = malloc(need);
	if (!out) {
		free(text);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0, o = out; i < n; i += skip) {
		esc = script_escape(u + i, n - i, &skip);
		if (esc) {
			memcpy(o, esc, 6);
			o += 6;
		} else {
			memcpy(o, text + i, skip);
			o += skip;
		}
	}
	*o = '\0';
	free(text);
	if (len)
		*len = (size_t)(o - out);
	return out;
}
