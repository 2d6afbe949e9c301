# The help tells the truth: what `nunatak --help` and each command's
# --help say, checked against what the commands do. Every command listed
# answers --help (exit 0); every format `nunatak export` accepts (the list
# its own refusal of an unknown format gives) is named by `nunatak --help`
# and by `nunatak export --help`; `nunatak status` looks for the socket
# where its --help says (NUNATAK_AGENT_SOCKET, else the site file's
# [service].agent_socket).
. "${TESTS_LIB:?run through tests/run.sh or make test}/common.sh"

cd "$T"
"$NUNATAK" --help >top.txt 2>&1 || fail "nunatak --help: exit $?"
commands=$(sed -n '/^commands:/,/^$/s/^  \([a-z-]*\) .*/\1/p' top.txt)
[ "$(echo "$commands" | wc -w)" -ge 10 ] || fail "nunatak --help lists too few commands: $commands"
for c in $commands; do
	"$NUNATAK" "$c" --help >"help-$c.txt" 2>&1 || fail "nunatak $c --help: exit $?"
	grep -q "^Usage: nunatak $c" "help-$c.txt" || fail "nunatak $c --help has no usage line: $(head -2 "help-$c.txt")"
done

"$NUNATAK" export --format no-such-format >/dev/null 2>refused.txt && fail "export accepted an unknown format"
formats=$(sed -n 's/.*the formats are: //p' refused.txt | tr -d ',')
[ -n "$formats" ] || fail "export's refusal does not list the formats: $(cat refused.txt)"
for f in $formats; do
	grep "^  export " top.txt | grep -qw -- "$f" || fail "nunatak --help does not name export's format $f: $(grep '^  export' top.txt)"
	grep -q -- "--format $f" help-export.txt || fail "nunatak export --help does not say what --format $f writes"
done

printf '[service]\nagent_socket = "%s/site.sock"\n' "$T" >site.toml
chmod 0644 site.toml
grep -q "\[service\].agent_socket" help-status.txt || fail "nunatak status --help does not name the site file's socket"
NUNATAK_SITE_CONFIG="$T/site.toml" "$NUNATAK" status >/dev/null 2>status.err
grep -q "$T/site.sock" status.err || fail "status did not look at the site file's socket: $(cat status.err)"
NUNATAK_AGENT_SOCKET="$T/env.sock" NUNATAK_SITE_CONFIG="$T/site.toml" "$NUNATAK" status >/dev/null 2>status.err
grep -q "$T/env.sock" status.err || fail "status did not look at NUNATAK_AGENT_SOCKET first: $(cat status.err)"
echo "help: $(echo $commands | wc -w) commands answer --help; export formats $formats named; status socket as said"
