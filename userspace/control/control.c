/* control — see control.h. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "userspace/control/control.h"
#include "userspace/log/clock.h"

void control_socket_room(int fd)
{
	int size = (int)CONTROL_MSG_MAX + 65536;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

/* room to send: 0, -ETIMEDOUT, -errno */
static int wait_writable(int fd, long long deadline_ms)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		long long left = deadline_ms - clock_monotonic_ms();
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0 && (p.revents & (POLLERR | POLLHUP)))
			return -EPIPE;
		if (n > 0)
			return 0;
	}
}

int control_send_msg(int fd, const json_t *msg, int timeout_ms)
{
	long long deadline = clock_monotonic_ms() + timeout_ms;
	size_t len;
	char *text;
	int e = 0;

	text = json_dumps(msg, JSON_COMPACT);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	if (len > CONTROL_MSG_MAX) {
		free(text);
		return -EMSGSIZE;
	}
	for (;;) {
		ssize_t n = send(fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n == (ssize_t)len)
			break;
		if (n >= 0) { /* a seqpacket send is whole or nothing */
			e = -EIO;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != ENOBUFS) {
			e = -errno;
			break;
		}
		e = wait_writable(fd, deadline);
		if (e)
			break;
	}
	free(text);
	return e;
}

static void say(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int control_recv_msg(int fd, json_t **msg, char *err, size_t errlen)
{
	json_error_t jerr;
	ssize_t len, got;
	char one, *buf;

	*msg = NULL;
	do
		len = recv(fd, &one, 1, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	while (len < 0 && errno == EINTR);
	if (len < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (len < 0) {
		say(err, errlen, "cannot read a control message: %s", strerror(errno));
		return errno == ECONNRESET ? -ECONNRESET : -errno;
	}
	if (len == 0) {
		/* EOF, or an empty message: either way nothing to answer */
		got = recv(fd, &one, 1, MSG_DONTWAIT);
		if (got == 0 || (got < 0 && errno != EAGAIN)) {
			say(err, errlen, "the peer closed the control connection");
			return -ECONNRESET;
		}
		say(err, errlen, "an empty control message");
		return -EBADMSG;
	}
	if ((size_t)len > CONTROL_MSG_MAX) {
		recv(fd, &one, 1, MSG_DONTWAIT); /* drops it */
		say(err, errlen, "a control message of %zd bytes, over the limit of %u", len,
		    CONTROL_MSG_MAX);
		return -EMSGSIZE;
	}
	buf = malloc(len);
	if (!buf) {
		recv(fd, &one, 1, MSG_DONTWAIT);
		say(err, errlen, "no memory for a control message of %zd bytes", len);
		return -ENOMEM;
	}
	do
		got = recv(fd, buf, len, MSG_DONTWAIT);
	while (got < 0 && errno == EINTR);
	if (got != len) {
		free(buf);
		say(err, errlen, "a control message changed while read");
		return -EIO;
	}
	*msg = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	free(buf);
	if (!*msg || !json_is_object(*msg)) {
		say(err, errlen, "a control message is not a JSON object%s%s", *msg ? "" : ": ",
		    *msg ? "" : jerr.text);
		json_decref(*msg);
		*msg = NULL;
		return -EBADMSG;
	}
	return 1;
}

json_t *control_error_reply(int e, const char *fmt, ...)
{
	char text[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s, s:i}", "ok", 0, "error", text, "code", e < 0 ? -e : e);
}

json_t *control_ok_reply(json_t *extra)
{
	json_t *reply = json_pack("{s:b}", "ok", 1);

	if (reply && extra && json_object_update(reply, extra)) {
		json_decref(reply);
		reply = NULL;
	}
	json_decref(extra);
	return reply;
}

int control_reply_status(const json_t *reply, char *err, size_t errlen)
{
	json_t *code = json_object_get(reply, "code");
	const char *text = json_string_value(json_object_get(reply, "error"));

	if (json_is_true(json_object_get(reply, "ok")))
		return 0;
	say(err, errlen, "%s", text ? text : "the node service refused the request");
	if (json_is_integer(code) && json_integer_value(code) > 0 &&
	    json_integer_value(code) < 4096)
		return -(int)json_integer_value(code);
	return -EPROTO;
}
