# Names that are not UTF-8 (a program, a Run name) neither stop the
# application nor lose the manifest or the --json document: such bytes are
# written \xNN in JSON (userspace/log/json_text.h), valid UTF-8 unchanged.
. "$TESTS_LIB/common.sh"
need_root_bpf

cd "$T"
odd=$'sl\xffp'
cp "$WORKLOADS/hotspots" "./$odd"
# what Python's backslashreplace makes of a name: the expected JSON text
escaped() {
	python3 -c 'import os,sys; print(os.fsencode(sys.argv[1]).decode("utf-8","backslashreplace"))' "$1"
}
[ "$(escaped "$odd")" = 'sl\xffp' ] || fail "test setup: python3 escapes '$odd' as $(escaped "$odd")"

# doc_of OUT DOC: the --json document that follows the application's
# stdout lines in OUT, into DOC; fails when there is none or it does not parse
doc_of() {
	python3 -c '
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")
start = 0 if text.startswith("{") else text.index("\n{") + 1
json.dump(json.loads(text[start:]), open(sys.argv[2], "w"))' "$1" "$2" ||
		fail "--json gave no parseable document: $(tail -c 300 "$1" | od -c | tail -5)"
}

# the application runs, once, with its exit code; the manifest says its name
timeout 60 "$NUNATAK" run -- "./$odd" 0.5 3 >out.txt 2>err.txt
rc=$?
[ $rc = 3 ] || fail "'./$odd' exited $rc, expected 3: $(cat err.txt)"
[ "$(grep -c . out.txt)" = 1 ] || fail "the application ran $(grep -c . out.txt) times: $(cat out.txt)"
run=$(run_dir_of err.txt)
[ -n "$run" ] && [ -f "$run/manifest.json" ] || fail "no Run or no manifest: $(cat err.txt)"
[ "$(json "$run/manifest.json" 'd["run"]["command"]')" = "['./sl\\\\xffp', '0.5', '3']" ] ||
	fail "manifest command: $(json "$run/manifest.json" 'd["run"]["command"]')"
[ "$(json "$run/manifest.json" 'd["run"]["target"]')" = './sl\xffp' ] ||
	fail "manifest target: $(json "$run/manifest.json" 'd["run"]["target"]')"
[ "$(json "$run/manifest.json" 'd["run"]["exit_code"]')" = 3 ] || fail "manifest exit_code is not 3"

# --json: a parseable document whose hot module is the escaped name
timeout 60 "$NUNATAK" run --json -- "./$odd" 1 >out.json 2>err.txt
rc=$?
[ $rc = 0 ] || fail "--json run exited $rc: $(cat err.txt)"
doc_of out.json doc.json
modules=$(json doc.json '[h["module"] for h in d["hotspots"]][:2]')
case "$modules" in
*'sl\\xffp'*) ;;
*) fail "--json hotspot modules: $modules, expected the escaped '$odd'" ;;
esac
[ "$(json doc.json 'd["exit_code"]')" = 0 ] || fail "--json exit_code: $(json doc.json 'd["exit_code"]')"

# a Run name that is not UTF-8, also with --json
timeout 60 "$NUNATAK" run --name $'x\xff' --json -- "$WORKLOADS/hotspots" 0.2 5 >named.json 2>err.txt
rc=$?
[ $rc = 5 ] || fail "--name \$'x\\xff': exit $rc, expected 5: $(cat err.txt)"
run=$(run_dir_of err.txt)
[ -n "$run" ] && [ -f "$run/manifest.json" ] || fail "--name \$'x\\xff': no Run or manifest: $(cat err.txt)"
[ "$(json "$run/manifest.json" 'd["run"]["name"]')" = 'x\xff' ] ||
	fail "manifest name: $(json "$run/manifest.json" 'd["run"]["name"]')"
[ "$(json "$run/manifest.json" 'd["run"]["command"][0]')" = "$WORKLOADS/hotspots" ] ||
	fail "a UTF-8 argv[0] changed: $(json "$run/manifest.json" 'd["run"]["command"]')"
doc_of named.json named1.json
[ "$(json named1.json 'd["name"]')" = 'x\xff' ] || fail "--json name: $(tail -c 300 named.json)"

# a runs directory that is not UTF-8 cannot be recorded: refused before
# launch, said, nothing made
odd_runs="$T/$(printf 'runs\377dir')"
"$NUNATAK" run -o "$odd_runs" -- sh -c "touch $T/odd-ran" >/dev/null 2>oddruns.err
rc=$?
[ "$rc" = 125 ] || fail "non-UTF-8 runs directory: exit $rc, not 125: $(cat oddruns.err)"
grep -q 'not UTF-8' oddruns.err || fail "non-UTF-8 runs directory: the cause is not said: $(cat oddruns.err)"
[ ! -e "$T/odd-ran" ] || fail "non-UTF-8 runs directory: the application ran"
[ ! -e "$odd_runs" ] || fail "non-UTF-8 runs directory: it was created"
echo "non-UTF-8 runs directory: refused before launch"
echo "odd_names: ok"
