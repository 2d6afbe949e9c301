# The Run directory of a root nunatak: swapped for a symbolic link to
# another directory while the application runs, nothing lands there (a
# root-only 0600 file keeps its content) and the real Run is complete; a
# runs directory owned by another user, or writable by all without the
# sticky bit, is refused before launch (125, a message naming it and its
# owner, nothing created, the application not run); Runs are 0700 and
# their files 0600 (-wal and -shm while running, the sealed result after)
# whatever the umask and whoever runs nunatak; `--name .` makes a Run that
# `summary` finds (or is refused up front); a 3850-character runs path
# works, one leaving no room for the Run is refused before launch.
. "$TESTS_LIB/common.sh"
need_root_bpf

cd "$T"
modes() { stat -c '%a' "$@" | tr '\n' ' ' | sed 's/ $//'; }

# --- 1. the Run directory swapped for a link while the application runs
mkdir -m 0700 victim
printf 'root-only secret\n' >victim/manifest.json
printf 'root-only wal\n' >victim/pivot.sqlite-wal
chmod 0600 victim/*
listing() { find "$1" -mindepth 1 -printf '%f %s %T@ %m %u\n' | sort; }
victim_before=$(listing victim)
timeout 60 "$NUNATAK" run -o runs -- sleep 2 >out.txt 2>err.txt &
pid=$!
run=
for _ in $(seq 400); do
	run=$(ls -d runs/sleep-* 2>/dev/null | head -1)
	[ -n "$run" ] && [ -f "$run/manifest.json" ] && break
	sleep 0.025
done
[ -f "$run/manifest.json" ] || fail "no Run directory with a manifest while the application runs: $(cat err.txt)"
# modes while the Run is written: the pivot's -wal and -shm included
[ "$(modes "$run")" = 700 ] || fail "Run directory mode $(modes "$run"), expected 700"
[ "$(modes "$run"/manifest.json "$run"/pivot.sqlite "$run"/pivot.sqlite-wal "$run"/pivot.sqlite-shm)" = "600 600 600 600" ] ||
	fail "files while running: $(ls -la "$run")"
mv "$run" "$run.real"
ln -s "$T/victim" "$run"
wait "$pid"
rc=$?
[ $rc = 0 ] || fail "exit $rc, expected the application's 0: $(cat err.txt)"
[ "$(cat victim/manifest.json)" = "root-only secret" ] || fail "the root-only file was overwritten: $(head -c 200 victim/manifest.json)"
[ "$(cat victim/pivot.sqlite-wal)" = "root-only wal" ] || fail "the root-only -wal was overwritten"
[ "$(listing victim)" = "$victim_before" ] ||
	fail "the other directory changed: $(ls -la victim)"
real=$run.real
[ "$(json "$real/manifest.json" 'd["run"]["exit_code"]')" = 0 ] || fail "the real Run's manifest has no exit code: $(cat "$real/manifest.json")"
[ "$(json "$real/manifest.json" 'type(d["degradations"]).__name__, d["format"]["name"], len(d["nodes"])')" = "('list', 'nunatak-run', 1)" ] ||
	fail "the real Run's manifest is not the final one"
[ "$(sql "$real" 'pragma integrity_check')" = ok ] || fail "the real Run's pivot is damaged"
[ "$(sql "$real" 'pragma journal_mode')" = delete ] || fail "the real Run's pivot was not sealed"
# (no report.html: the summary and the report read the Run by its path,
# now the link, and refuse it)
[ "$(ls "$real")" = "$(printf 'manifest.json\npivot.sqlite')" ] || fail "files left in the real Run: $(ls -a "$real")"
[ "$(modes "$real" "$real"/manifest.json "$real"/pivot.sqlite)" = "700 600 600" ] || fail "sealed Run modes: $(ls -la "$real")"
echo "swap: victim intact, real Run complete and sealed"

# --- 2. runs directories that another user could change: refused, nothing made
check_refused() { # DIR WHAT...
	local dir=$1
	shift
	rm -f ran
	"$NUNATAK" run -o "$T/$dir" -- touch "$T/ran" >out.txt 2>err.txt
	rc=$?
	[ $rc = 125 ] || fail "runs directory $dir: exit $rc, expected 125: $(cat err.txt)"
	[ ! -e ran ] || fail "the application ran although nunatak refused its runs directory"
	[ -z "$(ls -A "$dir")" ] || fail "something was created in $dir: $(ls -A "$dir")"
	for w in "$@"; do
		grep -qF -- "$w" err.txt || fail "the message does not say '$w': $(cat err.txt)"
	done
}
if id nobody >/dev/null 2>&1; then
	mkdir theirs && chown nobody theirs
	check_refused theirs "$T/theirs" "owned by nobody" "-o DIR"
fi
mkdir open && chmod 0777 open
check_refused open "$T/open" "writable by every user" "chmod o-w"
chmod 1777 open # sticky, as /tmp: a Run may go there
"$NUNATAK" run -o open -- true >out.txt 2>err.txt || fail "sticky runs directory refused: $(cat err.txt)"
mkdir empty && ln -s empty link
check_refused link "$T/link" "symbolic link"
echo "refusals: other owner, world-writable, symbolic link"

# --- 3. modes whatever the umask; a name starting with '.' is found by
# summary (`--name .` itself may be refused up front, with a message)
"$NUNATAK" run --name . -o dot -- true >out.txt 2>err.txt
rc=$?
if [ $rc = 125 ]; then
	grep -q -- "--name '.'" err.txt || fail "--name . refused without saying why: $(cat err.txt)"
	[ ! -e dot ] || [ -z "$(ls -A dot)" ] || fail "--name . refused, but a Run was made: $(ls -A dot)"
else
	[ $rc = 0 ] || fail "--name .: exit $rc: $(cat err.txt)"
	"$NUNATAK" summary -o dot >s.out 2>s.err || fail "summary does not find the --name . Run: $(cat s.err)"
	[ "$(sed -n 's/^Run: //p' s.err)" = "$(run_dir_of err.txt)" ] || fail "summary found another Run: $(cat s.err)"
fi
rm -rf dot
(umask 000 && exec "$NUNATAK" run --name .hidden -o dot -- true) >out.txt 2>err.txt || fail "--name .hidden: $(cat err.txt)"
run=$(run_dir_of err.txt)
case "$(basename "$run")" in
.*) fail "the Run of --name .hidden is hidden: $run" ;;
esac
[ "$(modes dot "$run" "$run"/manifest.json "$run"/pivot.sqlite "$run"/report.html)" = "700 700 600 600 600" ] ||
	fail "modes with umask 000: $(ls -la dot "$run")"
[ "$(ls -A "$run" | tr '\n' ' ')" = "manifest.json pivot.sqlite report.html " ] || fail "files left: $(ls -A "$run")"
"$NUNATAK" summary -o dot >s.out 2>s.err || fail "summary does not find the --name .hidden Run: $(cat s.err)"
[ "$(sed -n 's/^Run: //p' s.err)" = "$run" ] || fail "summary found another Run: $(cat s.err)"
echo "--name . -> exit $rc; --name .hidden -> $(basename "$run"), found; modes 700/600 under umask 000"

# --- 4. an unprivileged nunatak's Runs are private too
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
	cp "$NUNATAK" "$T/nunatak"
	mkdir mine && chown nobody mine
	(umask 022 && exec setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- \
		"$T/nunatak" run -o "$T/mine" -- true) >out.txt 2>err.txt ||
		fail "nunatak as nobody: $(cat err.txt)"
	run=$(run_dir_of err.txt)
	[ "$(modes "$run" "$run"/manifest.json "$run"/pivot.sqlite)" = "700 600 600" ] ||
		fail "modes of nobody's Run: $(ls -la "$run")"
	[ "$(stat -c %U "$run" "$run"/pivot.sqlite | tr '\n' ' ')" = "nobody nobody " ] ||
		fail "owner of nobody's Run: $(ls -la "$run")"
	echo "unprivileged: 700/600, owned by nobody"
fi

# --- 5. long runs paths: 3850 characters work (SQLite alone opens no path
# over 512), one that leaves no room for the Run's name is refused up front
long=$T/long
while [ ${#long} -lt 3640 ]; do long=$long/$(printf '%0200d' 0); done
long=$long/$(printf '%0*d' $((3850 - ${#long} - 1)) 0)
timeout 60 "$NUNATAK" run -o "$long" -- true >out.txt 2>err.txt || fail "a 3850-character runs path: $(tail -c 300 err.txt)"
run=$(run_dir_of err.txt)
[ "$(modes "$run"/manifest.json "$run"/pivot.sqlite)" = "600 600" ] || fail "the long-path Run is incomplete"
# (a Degradation's message may say "cannot": only nunatak's own errors count)
grep -v -e '^nunatak: degradation ' -e '^ *remedy: ' -e '^ *- degradation ' err.txt | grep -q "cannot" &&
	fail "the long-path Run was not read back: $(grep cannot err.txt | cut -c1-300)"
timeout 60 "$NUNATAK" summary -o "$long" >s.out 2>s.err || fail "summary of the long-path Run: $(tail -c 300 s.err)"
# 4040: the Run's path fits PATH_MAX, but not with its files' names and
# what /proc/PID/maps adds to them (the Run would lose its samples)
toolong=$long/$(printf '%0*d' $((4040 - ${#long} - 1)) 0)
rm -f ran
timeout 60 "$NUNATAK" run -o "$toolong" -- touch "$T/ran" >out.txt 2>err.txt
rc=$?
[ $rc = 125 ] || fail "a runs path with no room for the Run: exit $rc"
grep -q "shorter runs directory" err.txt || fail "no way out given: $(tail -c 300 err.txt)"
[ ! -e ran ] || fail "the application ran although nunatak could not make its Run"
[ -z "$(ls -A "$toolong")" ] || fail "something was left in the too-long runs directory"
echo "runs path of 3850 characters: Run written and read; 4040: refused before launch"
