/* cmd_keygen — `nunatak keygen DIR NAME`: a CURVE key pair for the
 * service's transport (curve.h): DIR/NAME.key (0600, the secret) and
 * DIR/NAME.pub (0644), never overwriting either. */
#include <argp.h>
#include <stdio.h>

#include "userspace/cli/cli.h"
#include "userspace/launch/launch.h"
#include "userspace/wire/curve.h"

static const char doc[] =
	"Make a CURVE key pair for nunatakd or nunatak-aggregator: DIR/NAME.key (the\n"
	"secret key, mode 0600) and DIR/NAME.pub (its public key, 0644). DIR must be\n"
	"writable only by you or root; an existing file is never overwritten. NAME is\n"
	"letters, digits, '.', '_' or '-', not starting with '.'.\n"
	"\v"
	"EXAMPLES:\n"
	"  nunatak keygen /etc/nunatak aggregator   the aggregator's pair\n"
	"  nunatak keygen /etc/nunatak n001         a node's pair; copy n001.pub into\n"
	"                                           the aggregator's allowed_agents dir";

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	char **args = state->input;

	switch (key) {
	case ARGP_KEY_ARG:
		if (state->arg_num >= 2)
			argp_error(state, "unexpected argument '%s': nunatak keygen DIR NAME", arg);
		args[state->arg_num] = arg;
		break;
	case ARGP_KEY_END:
		if (state->arg_num < 2)
			argp_error(state, "nunatak keygen DIR NAME: %s missing",
				   state->arg_num ? "NAME" : "DIR and NAME");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

int cmd_keygen(int argc, char **argv)
{
	static const struct argp_option options[] = { {} };
	static const struct argp argp = { options, parse_arg, "DIR NAME", doc, NULL, NULL, NULL };
	char *args[2] = { NULL, NULL }, err[1024];

	if (argp_parse(&argp, argc, argv, 0, NULL, args))
		return EXIT_NUNATAK_FAILED;
	if (curve_keygen(args[0], args[1], err, sizeof(err))) {
		fprintf(stderr, "nunatak: %s\n", err);
		return 1;
	}
	printf("%s/%s.key (secret, 0600)\n%s/%s.pub (public)\n", args[0], args[1], args[0],
	       args[1]);
	return 0;
}
