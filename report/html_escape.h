/* html_escape — THE escaper of the HTML report: every string that comes
 * from the pivot or the manifest (symbols, demangled C++ names, paths,
 * source lines, messages) reaches the page through one of these two.
 *
 *  - html_escape(s): text for an HTML element or a quoted attribute.
 *    & < > " ' become &amp; &lt; &gt; &quot; &#39;; a byte that is not
 *    part of valid UTF-8 becomes the four characters \xNN as json_text
 *    (userspace/log/json_text.h) writes it, so the page and the JSON say
 *    the same name; a control character but tab and newline (and DEL)
 *    becomes U+FFFD.
 *  - json_for_script(j): j as compact JSON that can sit inside
 *    <script type="application/json">: < > & and U+2028 U+2029 are written
 *    \u003c \u003e \u0026 \u2028 \u2029 (still the same JSON value), so no
 *    "</script>" nor "<!--" can appear and end or change the element.
 *
 * Both return a new string the caller frees; NULL + errno (EINVAL for a
 * NULL argument, ENOMEM; json_for_script: EINVAL when j cannot be
 * serialized).
 */
#ifndef NUNATAK_REPORT_HTML_ESCAPE_H
#define NUNATAK_REPORT_HTML_ESCAPE_H

#include <stddef.h>

#include <jansson.h>

char *html_escape(const char *s);

/* *len (may be NULL) gets the length of the result */
char *json_for_script(const json_t *j, size_t *len);

#endif
