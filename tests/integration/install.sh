#!/bin/bash
# install.sh — `make install DESTDIR=... PREFIX=/usr` of the already built
# tree (the build directory of $NUNATAK; nothing is rebuilt), then:
#  - every file where it belongs, with its mode (binaries 0755, the rest
#    0644), the binaries those of the build, nothing writable by others;
#  - the units' paths follow PREFIX (ExecStart in /usr/bin, no /usr/local);
#  - `systemd-analyze verify --root` of the installed units says nothing
#    (a unit with a misspelt key, checked the same way, does say something:
#    the check can fail), their commands exist and are executable;
#  - systemd-tmpfiles makes the spool directory root 0700 in that root;
#  - the capability sets are what deploy/README.md promises, and
#    `systemd-analyze security --offline` rates both units 5.0 or better.
# Nothing needs systemd running. SKIPPED without systemd-analyze or when
# the daemons are not built yet.
. "$TESTS_LIB/common.sh"

command -v systemd-analyze >/dev/null || skip "systemd-analyze is absent (Debian package systemd)"
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "$(dirname "$NUNATAK")" && pwd)
for d in nunatak nunatakd nunatak-aggregator; do
	[ -x "$BUILD/$d" ] || skip "$BUILD/$d is not built yet (make build)"
done

DEST=$T/dest
# -o build: install what is built, never rebuild it
make -s -C "$SRC" -o build BUILD="$BUILD" DESTDIR="$DEST" PREFIX=/usr install >"$T/install.log" 2>&1 ||
	fail "make install failed: $(cat "$T/install.log")"

# mode FILE WANT: FILE is a regular file of mode WANT
mode() {
	[ -f "$1" ] && [ ! -L "$1" ] || fail "'$1' is not installed as a regular file"
	[ "$(stat -c %a "$1")" = "$2" ] || fail "'$1' has mode $(stat -c %a "$1"), not $2"
}
for b in nunatak nunatakd nunatak-aggregator; do
	mode "$DEST/usr/bin/$b" 755
	cmp -s "$DEST/usr/bin/$b" "$BUILD/$b" || fail "'/usr/bin/$b' is not the binary of $BUILD"
done
UNITS=$DEST/usr/lib/systemd/system
mode "$UNITS/nunatakd.service" 644
mode "$UNITS/nunatak-aggregator.service" 644
mode "$DEST/usr/lib/tmpfiles.d/nunatak.conf" 644
mode "$DEST/usr/share/doc/nunatak/nunatak.toml.example" 644
mode "$DEST/usr/share/doc/nunatak/README.deploy.md" 644
writable=$(find "$DEST" -perm /022 ! -type l)
[ -z "$writable" ] || fail "writable by group or others: $writable"
foreign=$(find "$DEST" ! -user "$(id -u)")
[ -z "$foreign" ] || fail "not owned by the installing user: $foreign"

for u in nunatakd nunatak-aggregator; do
	exec_start=$(sed -n 's/^ExecStart=//p' "$UNITS/$u.service")
	case "$exec_start" in
	"/usr/bin/$u "* | "/usr/bin/$u") ;;
	*) fail "$u.service: ExecStart=$exec_start, not /usr/bin/$u" ;;
	esac
	! grep -n /usr/local "$UNITS/$u.service" || fail "$u.service still names /usr/local"
	grep -q '^Documentation=file:///usr/share/doc/nunatak/README.deploy.md$' "$UNITS/$u.service" ||
		fail "$u.service: Documentation= does not name the installed notes"
done

# what the deployment notes promise: nunatakd no CAP_SYS_ADMIN, the
# aggregator nothing but CAP_SETUID CAP_SETGID
caps_of() { sed -n 's/^CapabilityBoundingSet=//p' "$UNITS/$1.service"; }
case " $(caps_of nunatakd) " in
*CAP_SYS_ADMIN*) fail "nunatakd.service keeps CAP_SYS_ADMIN" ;;
esac
for c in CAP_BPF CAP_PERFMON CAP_SYS_RESOURCE CAP_SYS_PTRACE; do
	case " $(caps_of nunatakd) " in *" $c "*) ;; *) fail "nunatakd.service lacks $c" ;; esac
done
[ "$(caps_of nunatak-aggregator)" = "CAP_SETUID CAP_SETGID" ] ||
	fail "nunatak-aggregator.service capabilities: $(caps_of nunatak-aggregator)"

# A root for systemd-analyze: the installed tree plus the host's targets
# the units' default dependencies name (sysinit.target...).
ROOT=$T/root
cp -a "$DEST" "$ROOT"
for dir in /usr/lib/systemd/system /lib/systemd/system; do
	[ -d "$dir" ] && cp -a "$dir"/*.target "$ROOT/usr/lib/systemd/system/" 2>/dev/null
done
[ -f "$ROOT/usr/lib/systemd/system/sysinit.target" ] || skip "the host has no sysinit.target to verify against"

verify() { # UNIT...: systemd-analyze's whole output (empty when all is well)
	systemd-analyze verify --root="$ROOT" "$@" 2>&1
	echo "rc=$?"
}
out=$(verify nunatakd.service nunatak-aggregator.service)
[ "$out" = "rc=0" ] || fail "systemd-analyze verify: $out"

# the same check on a broken copy must complain, or it proves nothing
sed 's/^ProtectSystem=/ProtectSystm=/' "$UNITS/nunatakd.service" >"$ROOT/usr/lib/systemd/system/broken.service"
out=$(verify broken.service)
case "$out" in
*"Unknown key"*ProtectSystm*) ;;
*) fail "systemd-analyze verify accepted a misspelt key: $out" ;;
esac
rm "$ROOT/usr/lib/systemd/system/broken.service"
# and a command that is not executable
chmod 0644 "$ROOT/usr/bin/nunatakd"
out=$(verify nunatakd.service)
case "$out" in *"not executable"*) ;; *) fail "verify missed a non-executable ExecStart: $out" ;; esac
chmod 0755 "$ROOT/usr/bin/nunatakd"

# the spool directory, as tmpfiles.d makes it at boot
if command -v systemd-tmpfiles >/dev/null; then
	systemd-tmpfiles --root="$ROOT" --create nunatak.conf >"$T/tmpfiles.log" 2>&1 ||
		fail "systemd-tmpfiles: $(cat "$T/tmpfiles.log")"
	[ -d "$ROOT/var/spool/nunatak" ] || fail "tmpfiles.d made no /var/spool/nunatak"
	[ "$(stat -c %a "$ROOT/var/spool/nunatak")" = 700 ] ||
		fail "/var/spool/nunatak has mode $(stat -c %a "$ROOT/var/spool/nunatak"), not 700"
fi

# the hardening, as systemd rates it (lower is better, 10 is none)
for u in nunatakd nunatak-aggregator; do
	line=$(cd "$ROOT/usr/lib/systemd/system" &&
		systemd-analyze security --offline=yes --root="$ROOT" "$u.service" 2>&1 | grep 'Overall exposure')
	if [ -z "$line" ]; then
		echo "note: systemd-analyze security --offline is not available, not rated"
		continue
	fi
	score=$(sed -n 's/.*: \([0-9.]*\) .*/\1/p' <<<"$line")
	echo "$u.service: exposure $score"
	python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 5.0 else 1)' "$score" ||
		fail "$u.service is rated $score by systemd-analyze security (more than 5.0)"
done
echo "PASS: install"
