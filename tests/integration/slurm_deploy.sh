# deploy/slurm as `make install` puts it (no cluster needed): the plugin,
# the Prolog and the Epilog in $PREFIX/lib/nunatak/slurm (0755), naming
# $PREFIX/bin/nunatak; the notes and the slurm.conf lines in the doc
# directory (0644) with the installed paths; the plugin exports what
# Slurm's loader needs (plugin_name "nunatak", plugin_type "spank",
# plugin_version = this machine's Slurm, the two hooks) and needs no
# libslurm; both scripts are POSIX sh and, run the way slurmd runs them
# (no PATH at all), exit 0 at once when the job asked for nothing, and exit
# 0 when nunatak is missing or fails.
. "$TESTS_LIB/common.sh"
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "$(dirname "$NUNATAK")" && pwd)
[ -f "$BUILD/spank_nunatak.so" ] || skip "$BUILD/spank_nunatak.so is not built (make build)"
command -v nm >/dev/null || skip "nm (binutils) missing"
DEST=$T/dest
make -s -C "$SRC" -o build BUILD="$BUILD" DESTDIR="$DEST" PREFIX=/usr install-slurm >"$T/install.log" 2>&1 ||
	fail "make install-slurm failed: $(cat "$T/install.log")"
L=$DEST/usr/lib/nunatak/slurm
D=$DEST/usr/share/doc/nunatak
mode() {
	[ -f "$1" ] && [ ! -L "$1" ] || fail "'$1' is not installed as a regular file"
	[ "$(stat -c %a "$1")" = "$2" ] || fail "'$1' has mode $(stat -c %a "$1"), not $2"
}
mode "$L/spank_nunatak.so" 755
mode "$L/prolog" 755
mode "$L/epilog" 755
mode "$D/README.slurm.md" 644
mode "$D/slurm.conf.example" 644
cmp -s "$L/spank_nunatak.so" "$BUILD/spank_nunatak.so" || fail "the installed plugin is not the built one"
for s in prolog epilog; do
	grep -qx 'NUNATAK=/usr/bin/nunatak' "$L/$s" || fail "$s does not name /usr/bin/nunatak: $(grep '^NUNATAK=' "$L/$s")"
done
grep -qx 'Prolog=/usr/lib/nunatak/slurm/prolog' "$D/slurm.conf.example" &&
	grep -qx 'Epilog=/usr/lib/nunatak/slurm/epilog' "$D/slurm.conf.example" &&
	grep -q 'optional /usr/lib/nunatak/slurm/spank_nunatak.so' "$D/slurm.conf.example" ||
	fail "slurm.conf.example does not name the installed files: $(grep -E 'Prolog=|Epilog=|optional' "$D/slurm.conf.example")"
! grep -n /usr/local "$D/slurm.conf.example" || fail "slurm.conf.example still names /usr/local"

# what Slurm's loader looks for
syms=$(nm -D --defined-only "$L/spank_nunatak.so")
for s in plugin_name plugin_type plugin_version slurm_spank_init slurm_spank_init_post_opt; do
	grep -qw "$s" <<<"$syms" || fail "the plugin does not export $s"
done
for s in slurm_spank_job_prolog slurm_spank_job_epilog; do
	! grep -qw "$s" <<<"$syms" || fail "the plugin exports $s (a crash there drains the node: none wanted)"
done
! nm -D -u "$L/spank_nunatak.so" | grep -q 'GLIBC_PRIVATE' || fail "odd undefined symbols"
readelf -d "$L/spank_nunatak.so" 2>/dev/null | grep NEEDED | grep -q libslurm && fail "the plugin links libslurm"
python3 - "$L/spank_nunatak.so" <<'PY' || fail "plugin_name/plugin_type/plugin_version (see above)"
import ctypes, os, re, sys
lib = ctypes.CDLL(sys.argv[1], mode=os.RTLD_LAZY)   # spank_* stay unresolved: never called
n = (ctypes.c_char * 16).in_dll(lib, "plugin_name").value.decode()
t = (ctypes.c_char * 16).in_dll(lib, "plugin_type").value.decode()
v = ctypes.c_uint.in_dll(lib, "plugin_version").value
hdr = open("/usr/include/slurm/slurm_version.h").read()
want = int(re.search(r"#define SLURM_VERSION_NUMBER\s+(0x[0-9a-fA-F]+)", hdr).group(1), 16)
print(f"plugin_name {n!r} plugin_type {t!r} plugin_version {v:#x} (this Slurm: {want:#x})")
sys.exit(0 if (n, t, v) == ("nunatak", "spank", want) else 1)
PY

# the scripts as slurmd runs them: root, no PATH, Slurm's variables only
for s in prolog epilog; do
	sh -n "$L/$s" || fail "$s is not valid sh"
	command -v dash >/dev/null && { dash -n "$L/$s" || fail "$s is not valid for dash"; }
	t0=$EPOCHREALTIME
	env -i SLURM_JOB_ID=7 SLURM_JOB_UID=0 /bin/sh "$L/$s"
	rc=$?
	[ "$rc" = 0 ] || fail "$s exited $rc for a job that asked for nothing"
	python3 -c "import sys; sys.exit(0 if $EPOCHREALTIME - $t0 < 1 else 1)" || fail "$s is slow for a job that asked for nothing"
	# no nunatak installed (a path that does not exist): still 0
	sed -e "s|^NUNATAK=.*|NUNATAK=$T/no/nunatak|" "$L/$s" >"$T/$s"
	env -i SLURM_JOB_ID=7 SLURM_JOB_UID=0 SPANK_NUNATAK=default /bin/sh "$T/$s" || fail "$s: exit $? with no nunatak installed"
	# a nunatak that fails: still 0
	sed -e "s|^NUNATAK=.*|NUNATAK=/bin/false|" "$L/$s" >"$T/$s"
	env -i SLURM_JOB_ID=7 SLURM_JOB_UID=0 SPANK_NUNATAK_PROFILE=1 /bin/sh "$T/$s" || fail "$s: exit $? when nunatak fails"
done
echo "installed: $(cd "$DEST" && find . -path '*slurm*' -type f | sort | tr '\n' ' ')"
exit 0
