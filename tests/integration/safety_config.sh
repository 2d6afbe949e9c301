# Nothing another user can write is obeyed by a root nunatak: a project
# nunatak.toml planted in a shared parent directory (owned by nobody,
# group-writable, a link, a FIFO, a directory) is refused before anything
# runs, exit 125, with the file and its owner named, no tool executed and no
# Run directory made; a FIFO or directory as site configuration likewise and
# at once. A tool named in a trusted file is run with execve, never by a
# shell, and a symbolizer that never answers --version does not hold nunatak.
. "$TESTS_LIB/common.sh"
need_root_bpf
id nobody >/dev/null 2>&1 || skip "no user nobody to plant files as"

MARKER=$T/MARKER
export NUNATAK_SITE_CONFIG=$T/no-site.toml
# a shared parent directory, sticky and world-writable as /tmp is
mkdir -m 1777 "$T/shared"
mkdir "$T/shared/proj"
printf '#!/bin/sh\ntouch %s\n' "$MARKER" >"$T/evil.sh"
chmod 0755 "$T/evil.sh"
chown nobody "$T/evil.sh"
cd "$T/shared/proj"

planted() {
	rm -rf "$T/shared/nunatak.toml"
	printf 'runs_dir = "%s/evil-runs"\n[tools]\nllvm-symbolizer = "%s"\n' "$T" "$T/evil.sh" \
		>"$T/shared/nunatak.toml"
}

# refused WHAT WORDS: `nunatak run -- true` and `nunatak summary` exit 125
# within 10 s, say WORDS about the file, run nothing, make no Run
refused() {
	timeout 10 "$NUNATAK" run -- true >out.txt 2>err.txt
	rc=$?
	[ $rc = 125 ] || fail "$1: exit $rc, not 125: $(cat err.txt)"
	grep -q "refusing '$2'" err.txt || fail "$1: the file is not named: $(cat err.txt)"
	grep -q "$3" err.txt || fail "$1: no '$3' in: $(cat err.txt)"
	[ ! -e "$MARKER" ] || fail "$1: the planted tool was executed"
	[ ! -e .nunatak ] && [ ! -e "$T/evil-runs" ] || fail "$1: a Run directory was made"
	[ ! -s out.txt ] || fail "$1: output on stdout: $(cat out.txt)"
	timeout 10 "$NUNATAK" summary >/dev/null 2>err.txt
	rc=$?
	[ $rc = 125 ] || fail "$1: summary exit $rc, not 125: $(cat err.txt)"
}

planted
chown nobody "$T/shared/nunatak.toml"
refused "owned by nobody" "$T/shared/nunatak.toml" "owned by nobody (uid 65534), not by root"
grep -q "remove it or chown it" err.txt || fail "no remedy in: $(cat err.txt)"

planted
chmod 0664 "$T/shared/nunatak.toml"
refused "group-writable" "$T/shared/nunatak.toml" "writable by its group"

planted
mv "$T/shared/nunatak.toml" "$T/good.toml"
ln -s "$T/good.toml" "$T/shared/nunatak.toml"
refused "symlinked" "$T/shared/nunatak.toml" "symbolic link"

rm -f "$T/shared/nunatak.toml"
mkfifo "$T/shared/nunatak.toml"
refused "FIFO as project file" "$T/shared/nunatak.toml" "not a regular file but a FIFO"

rm -f "$T/shared/nunatak.toml"
mkdir "$T/shared/nunatak.toml"
refused "directory as project file" "$T/shared/nunatak.toml" "not a regular file but a directory"
rm -rf "$T/shared/nunatak.toml"

# the project file is fine (there is none); the site file is not
mkfifo "$T/site.fifo"
NUNATAK_SITE_CONFIG=$T/site.fifo refused "FIFO as site file" "$T/site.fifo" "FIFO"
mkdir "$T/site.dir"
NUNATAK_SITE_CONFIG=$T/site.dir refused "directory as site file" "$T/site.dir" \
	"not a regular file"

# a root-owned file with shell metacharacters in a tool: passed to execve
# as one path, never to a shell; the application still runs, once
printf '[tools]\nllvm-symbolizer = "x'"'"'; touch %s; '"'"'"\n' "$MARKER" >"$T/shared/nunatak.toml"
grep -q "touch" "$T/shared/nunatak.toml" || fail "test setup: no metacharacters in the file"
timeout 60 "$NUNATAK" run -- sh -c 'exit 3' >/dev/null 2>err.txt
rc=$?
[ $rc = 3 ] || fail "metacharacters: exit $rc, not the application's 3: $(cat err.txt)"
[ ! -e "$MARKER" ] || fail "the tools.llvm-symbolizer value was run by a shell"
grep -q "symbolizer-missing" err.txt || fail "a tool that is not there is not announced: $(cat err.txt)"

# a trusted file naming a tool another user owns: never executed, the
# application runs with its exit code, the refusal names the tool
printf '[tools]\nllvm-symbolizer = "%s"\n' "$T/evil.sh" >"$T/shared/nunatak.toml"
timeout 60 "$NUNATAK" run -- "$WORKLOADS/hotspots" 0.2 5 >/dev/null 2>err.txt
rc=$?
[ $rc = 5 ] || fail "untrusted tool: exit $rc, not the application's 5: $(cat err.txt)"
[ ! -e "$MARKER" ] || fail "a symbolizer owned by nobody was executed by root"
grep -q "refusing '$T/evil.sh': it is owned by nobody" err.txt ||
	fail "the refused tool is not named with its owner: $(cat err.txt)"

# a trusted symbolizer that never answers --version (and works otherwise):
# the probe is bounded, the Run finishes with the application's code
cat >"$T/slow-symbolizer" <<EOF
#!/bin/sh
case "\$1" in --version) exec sleep 987654 ;; esac
exec llvm-symbolizer "\$@"
EOF
chmod 0755 "$T/slow-symbolizer"
printf '[tools]\nllvm-symbolizer = "%s"\n' "$T/slow-symbolizer" >"$T/shared/nunatak.toml"
start=$(date +%s)
timeout 60 "$NUNATAK" run -- sh -c 'exit 4' >/dev/null 2>err.txt
rc=$?
[ $rc = 4 ] || fail "silent symbolizer: exit $rc, not the application's 4: $(cat err.txt)"
[ $(($(date +%s) - start)) -lt 30 ] || fail "silent symbolizer: the run took more than 30 s"
grep -q "did not answer within" err.txt || fail "the silent --version is not reported: $(cat err.txt)"
run=$(run_dir_of err.txt)
[ "$(json "$run/manifest.json" 'd["provenance"]["dependencies"]["llvm-symbolizer"]')" = None ] ||
	fail "a version was recorded for a symbolizer that never answered"
json "$run/manifest.json" 'd["provenance"]["dependencies"]["llvm-symbolizer-unavailable"]' |
	grep -q "did not answer" || fail "the manifest does not say why the version is null"
! pgrep -f "sleep 987654" >/dev/null || fail "the silent --version probe was left running"
exit 0
