#!/usr/bin/env bash
# The packages and the install, as `make deb`, `make install` and `make uninstall` make them
# (docs/install.md). Usage: package.sh BUILD_DIR
#  - cpack makes three .debs from BUILD_DIR: zerodp (the planner), zerodp-engine and
#    python3-zerodp, each of which lintian passes with no error and no warning;
#  - their Depends: the planner's names no MPI, BLAS, oneDNN or Python; the engine's the planner
#    of its own version and the libraries it loads; the module's the python3 it is built for;
#  - dpkg installs them into an empty root and removes them, leaving nothing; installed, the
#    planner plans what the build's plans, runs the engine's commands through zerodp-engine and,
#    without it, says to install it; the module imports and answers; the man page and the
#    completion work;
#  - in a fresh bookworm root (debootstrap), apt installs the planner alone without MPI or
#    Python, then the other two, runs them, and purges all three; skipped, saying why, where
#    debootstrap cannot run (not root, no debootstrap, no Debian mirror reachable). Its base
#    system is made once and kept in ~/.cache/zerodp/ (XDG_CACHE_HOME), whatever the build;
#    a first run needs about 6 minutes, so ZERODP_PACKAGE_TEST_SECONDS says the test's TIMEOUT
#    and the base is not begun when it cannot end in time;
#  - `cmake --install` under a prefix and under DESTDIR lays out the same files, and
#    `make uninstall` removes exactly them and the folders named after zerodp.
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d)
mounted=""
# The build's record of a `make install`: this test's own installs must not replace it.
manifest=$build/install_manifest.txt
[ -f "$manifest" ] && cp "$manifest" "$scratch/manifest.saved"
cleanup() {
  [ -z "$mounted" ] || umount "$mounted" || true
  rm -f "$manifest"
  [ ! -f "$scratch/manifest.saved" ] || cp "$scratch/manifest.saved" "$manifest"
  rm -rf "$scratch"
}
trap cleanup EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
# What the build's programs answer, for the installed ones to answer the same.
plan=$("$build/zerodp" plan --params 1e9 --gpus 8)
dry_run=(train --model mlp --params 1M --ranks 2 --stage 3 --dry-run --json)
dry_run_output=$("$build/zerodp" "${dry_run[@]}")
python_plan='import zerodp
print(zerodp.plan(params=1e9, gpus=8, gpu="a100-40gb")["cheapest_fitting_stage"])'

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$scratch/deb" > "$scratch/cpack.log" 2>&1 ||
  { cat "$scratch/cpack.log"; exit 1; }
upstream=$(cat "$source/VERSION")
version=$(sed -n '1s/^zerodp (\([^)]*\)).*/\1/p' "$source/packaging/changelog")
[[ $version == "$upstream"-* ]] ||
  fail "packaging/changelog's latest entry is $version, VERSION is $upstream: add an entry"
declare -A deb
for package in zerodp zerodp-engine python3-zerodp; do
  deb[$package]=$scratch/deb/${package}_${version}_amd64.deb
  [ -f "${deb[$package]}" ] ||
    { echo "FAIL: cpack made no ${deb[$package]##*/}: $(ls "$scratch/deb")"; exit 1; }
done
[ "$(ls "$scratch"/deb/*.deb | wc -l)" -eq 3 ] ||
  fail "cpack made other packages: $(ls "$scratch/deb")"

# lintian, as Debian runs it on what it ships: no error and no warning. Its informational tags
# and the overridden ones are shown; each override (packaging/lintian-overrides) says why.
if command -v lintian > /dev/null; then
  for package in zerodp zerodp-engine python3-zerodp; do
    report=$(lintian --display-info --show-overrides --tag-display-limit 0 "${deb[$package]}" \
      2>&1 | grep -v '^running with root privileges' || true)
    [ -z "$report" ] || { echo "lintian $package:"; sed 's/^/  /' <<<"$report"; }
    ! grep -Eq '^[EW]: ' <<<"$report" || fail "lintian reports errors or warnings on $package"
  done
  uncommented=$(awk '/^#/ {said = 1; next} NF && !said {print} {said = said && !NF ? 0 : said}' \
    "$source/packaging/lintian-overrides")
  [ -z "$uncommented" ] || fail "packaging/lintian-overrides: no comment says why: $uncommented"
else
  fail "no lintian (scripts/setup.sh test installs it)"
fi

# The control fields.
field() { dpkg-deb -f "${deb[$1]}" "$2"; }
for package in zerodp zerodp-engine python3-zerodp; do
  depends=$(field "$package" Depends)
  echo "$package Depends: $depends"
  [ "$(field "$package" Version)" = "$version" ] || fail "$package: Version is not $version"
  [ "$(field "$package" Architecture)" = amd64 ] || fail "$package: Architecture is not amd64"
  [[ $depends != *-dev* ]] || fail "$package: Depends names a -dev package"
  [[ $depends == *'libc6 (>='* ]] || fail "$package: Depends lacks libc6"
  [[ $depends == *'libstdc++6 (>='* ]] || fail "$package: Depends lacks libstdc++6"
done
depends=$(field zerodp Depends)
for unwanted in mpi blas dnnl python zerodp; do
  [[ ${depends,,} != *$unwanted* ]] || fail "zerodp (the planner) depends on $unwanted: $depends"
done
depends=$(field zerodp-engine Depends)
[[ $depends == *"zerodp (= $version)"* ]] || fail "zerodp-engine: Depends lacks zerodp (= $version)"
for wanted in libopenblas0 libopenmpi3; do
  [[ $depends == *"$wanted"* ]] || fail "zerodp-engine: Depends lacks $wanted"
done
# Every library the engine loads is a package of its Depends: oneDNN's where the build has it.
if objdump -p "$build/zerodp-engine" | grep -q 'NEEDED *libdnnl'; then
  [[ $depends == *libdnnl2* ]] || fail "zerodp-engine loads libdnnl but Depends lacks libdnnl2"
fi
read -r major minor < <(/usr/bin/python3 -c 'import sys; print(*sys.version_info[:2])')
python_version=$major.$minor
python_next=$major.$((minor + 1))
depends=$(field python3-zerodp Depends)
for wanted in "python3 (>= $python_version)" "python3 (<< $python_next)"; do
  [[ $depends == *"$wanted"* ]] || fail "python3-zerodp: Depends lacks $wanted"
done
[ "$(field python3-zerodp Section)" = python ] || fail "python3-zerodp: Section is not python"

# The contents: each file in its package, nothing outside /usr.
contents() { dpkg-deb -c "${deb[$1]}" | awk '{print $6}'; }
expect() {
  local package=$1
  shift
  for path in "$@"; do
    grep -qxF "./$path" <<<"$(contents "$package")" || fail "$package lacks /$path"
  done
}
expect zerodp usr/bin/zerodp usr/share/man/man1/zerodp.1.gz \
  usr/share/bash-completion/completions/zerodp usr/share/doc/zerodp/README.md \
  usr/share/doc/zerodp/docs/planner.md usr/share/doc/zerodp/examples/ds_zero2_offload.json
expect zerodp-engine usr/lib/zerodp/zerodp-engine
for package in zerodp zerodp-engine python3-zerodp; do
  expect "$package" "usr/share/doc/$package/copyright" "usr/share/doc/$package/changelog.Debian.gz"
  [ -z "$(contents "$package" | grep -v -e '^\./usr/' -e '^\./$')" ] ||
    fail "$package puts files outside /usr"
done
grep -Eq '^\./usr/lib/python3/dist-packages/zerodp\.cpython-[0-9]+-x86_64-linux-gnu\.so$' \
  <<<"$(contents python3-zerodp)" || fail "python3-zerodp lacks /usr/lib/python3/dist-packages/zerodp*.so"
[ -z "$(contents zerodp | grep -e '/usr/lib/')" ] || fail "the planner's package holds files in /usr/lib"

# dpkg into an empty root: the three install, work from there and are removed to the last file.
# Both roots are thrown away after the test, so dpkg and apt there skip the fsync of every file
# they unpack (--force-unsafe-io).
root=$scratch/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
installed_empty=$(cd "$root" && find . | sort)
dpkg_root() {
  dpkg --root="$root" --force-not-root --force-depends --force-unsafe-io --log=/dev/null "$@" \
    > "$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log"; fail "dpkg $*"; }
}
dpkg_root -i "${deb[zerodp]}" "${deb[zerodp-engine]}" "${deb[python3-zerodp]}"
zerodp=$root/usr/bin/zerodp
[ "$("$zerodp" plan --params 1e9 --gpus 8)" = "$plan" ] ||
  fail "the installed planner plans otherwise than the build's"
# An engine command goes through the planner to the installed engine.
[ "$("$zerodp" "${dry_run[@]}")" = "$dry_run_output" ] ||
  fail "the installed zerodp train --dry-run differs from the build's"
module=$(cd "$scratch" && PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 -c \
  "$python_plan"$'\nprint(zerodp.__file__)')
[ "$module" = $'0\n'"$(ls "$root"/usr/lib/python3/dist-packages/zerodp.*.so)" ] ||
  fail "the installed module (cheapest_fitting_stage, wanted 0 (DP), and its file): $module"

man=$(zcat "$root/usr/share/man/man1/zerodp.1.gz")
grep -q '^\.TH ZERODP 1' <<<"$man" || fail "the man page has no .TH ZERODP 1"
missing=""
for flag in $("$build/zerodp" plan --help | grep -Eo -- '--[a-z][a-z0-9-]*' | sort -u); do
  grep -qF -- "${flag//-/\\-}" <<<"$man" || grep -qF -- "$flag" <<<"$man" || missing+=" $flag"
done
[ -z "$missing" ] || fail "the man page lacks plan's$missing"
completion=$(
  # shellcheck disable=SC1091
  source /usr/share/bash-completion/bash_completion
  source "$root/usr/share/bash-completion/completions/zerodp"
  t() { COMP_WORDS=("$zerodp" "$@"); COMP_CWORD=$#; _zerodp; echo "${COMPREPLY[*]}"; }
  t pl; t plan --gpus-p; t plan --gpu a100-
)
[ "$completion" = $'plan plot\n--gpus-per-node\na100-40gb a100-80gb' ] ||
  fail "completion gave: $completion"

# Without the engine, the planner plans and says what to install for the engine's commands.
dpkg_root -r zerodp-engine
[ "$("$zerodp" plan --params 1e9 --gpus 8)" = "$plan" ] || fail "the planner alone does not plan"
set +e
message=$("$zerodp" "${dry_run[@]}" 2>&1)
status=$?
set -e
[ $status -eq 1 ] && [[ $message == *"install the package zerodp-engine"* ]] ||
  fail "the planner without its engine: exit $status, $message"
dpkg_root --purge zerodp-engine python3-zerodp zerodp
left=$(cd "$root" && find . | sort | comm -13 <(echo "$installed_empty") - |
  grep -v '^\./var/lib/dpkg' || true)
[ -z "$left" ] || fail "dpkg --purge left: $left"

# A fresh bookworm root: what a user's apt does with the packages, their dependencies included.
# Its base system (debootstrap, about 4 minutes) is made once and kept; the part is skipped,
# saying why, where it cannot run or when making the base would not end within the test's time.
mirror=${ZERODP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
base=${XDG_CACHE_HOME:-$HOME/.cache}/zerodp/bookworm-minbase.tar
seconds=${ZERODP_PACKAGE_TEST_SECONDS:-300} # the test's TIMEOUT (tests/CMakeLists.txt)
reachable() {
  /usr/bin/python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)' \
    "$mirror/dists/bookworm/Release" 2> /dev/null
}
fresh_root() {
  if [ "$(id -u)" -ne 0 ]; then echo "skipped: not root (debootstrap and chroot need it)"; return; fi
  command -v debootstrap > /dev/null ||
    { echo "skipped: no debootstrap (apt-get install debootstrap)"; return; }
  reachable || { echo "skipped: no Debian mirror reachable at $mirror (no network?)"; return; }
  if [ ! -f "$base" ]; then
    # debootstrap takes about 4 minutes, the rest of the test after it up to 2.
    local left=$((seconds - SECONDS - 120))
    if [ $left -lt 300 ]; then
      echo "skipped: no base system in $base, and making it (about 4 minutes) does not fit the" \
        "$((seconds - SECONDS)) s left of the test's $seconds; make it once with" \
        "ZERODP_PACKAGE_TEST_SECONDS=900 tests/packaging/package.sh BUILD_DIR"
      return
    fi
    echo "making the base system once (debootstrap, about 4 minutes): $base"
    mkdir -p "$(dirname "$base")"
    timeout "$left" debootstrap --variant=minbase bookworm "$scratch/base" "$mirror" \
      > "$scratch/debootstrap.log" 2>&1 || {
      [ $? -eq 124 ] && { echo "skipped: debootstrap not done in the $left s the test has left" \
        "(ZERODP_PACKAGE_TEST_SECONDS, the test's TIMEOUT: $seconds)"; return; }
      tail -20 "$scratch/debootstrap.log"
      fail "debootstrap"
      return
    }
    tar -C "$scratch/base" -cf "$base.part" . && mv "$base.part" "$base"
    rm -rf "$scratch/base"
  fi
  local fresh=$scratch/bookworm
  mkdir "$fresh"
  tar -C "$fresh" -xf "$base"
  cp "${deb[@]}" "$fresh/tmp/"
  in_root() {
    chroot "$fresh" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"
  }
  apt_root() {
    in_root apt-get -y -q -o Dpkg::Use-Pty=0 -o Dpkg::Options::=--force-unsafe-io \
      --no-install-recommends "$@" > "$scratch/apt.log" 2>&1 ||
      { tail -30 "$scratch/apt.log"; fail "apt-get $* in the fresh root"; return 1; }
  }
  apt_root update || return
  # The planner alone brings no MPI, BLAS, oneDNN or Python with it.
  apt_root install "/tmp/${deb[zerodp]##*/}" || return
  local pulled
  pulled=$(in_root dpkg-query -W -f '${Package}\n' | grep -E 'mpi|blas|dnnl|python' || true)
  [ -z "$pulled" ] || fail "installing zerodp alone installed: $pulled"
  [ "$(in_root zerodp plan --params 1e9 --gpus 8)" = "$plan" ] ||
    fail "zerodp in the fresh root plans otherwise than the build's"
  apt_root install "/tmp/${deb[zerodp-engine]##*/}" "/tmp/${deb[python3-zerodp]##*/}" || return
  # The planner finds its engine through /proc/self/exe: proc is mounted where it can be.
  if mount -t proc proc "$fresh/proc" 2> /dev/null; then
    mounted=$fresh/proc
    [ "$(in_root zerodp "${dry_run[@]}")" = "$dry_run_output" ] ||
      fail "zerodp train --dry-run in the fresh root differs from the build's"
    umount "$mounted" && mounted=""
  else
    echo "the engine's run skipped: proc cannot be mounted here"
  fi
  [ "$(in_root python3 -c "$python_plan")" = 0 ] || fail "import zerodp in the fresh root"
  apt_root purge zerodp-engine python3-zerodp zerodp || return
  local left
  left=$(in_root find / -xdev \( -path /tmp -o -path /proc \) -prune -o -name '*zerodp*' -print)
  [ -z "$left" ] || fail "apt-get purge left in the fresh root: $left"
  echo "zerodp, zerodp-engine and python3-zerodp installed, ran and were purged"
}
fresh_root > "$scratch/fresh.log" 2>&1 || true
sed 's/^/fresh bookworm root: /' "$scratch/fresh.log"

# make install's layout under a prefix, and make uninstall of it: every file and the folders
# named after zerodp go, a folder that other programs share stays with their files.
prefix=$scratch/prefix
mkdir -p "$prefix/share/man/man1" && echo other > "$prefix/share/man/man1/other.1"
cmake --install "$build" --prefix "$prefix" > /dev/null
for path in bin/zerodp lib/zerodp/zerodp-engine share/man/man1/zerodp.1.gz \
            share/bash-completion/completions/zerodp share/doc/zerodp/README.md \
            share/doc/zerodp/examples/ds_zero2_offload.json share/doc/zerodp/copyright; do
  [ -f "$prefix/$path" ] || fail "cmake --install lacks $path"
done
ls "$prefix"/lib/python"$python_version"/dist-packages/zerodp.*.so > /dev/null 2>&1 ||
  fail "cmake --install lacks lib/python$python_version/dist-packages/zerodp.*.so"
[ "$("$prefix/bin/zerodp" "${dry_run[@]}")" = "$dry_run_output" ] ||
  fail "the installed zerodp does not run its engine from lib/zerodp"
make -s -C "$source" uninstall BUILD="$build" PREFIX="$prefix" > /dev/null
left=$(cd "$prefix" && find . -type f -o -name '*zerodp*')
[ "$left" = ./share/man/man1/other.1 ] || fail "make uninstall left (or removed) in the prefix: $left"

# Under DESTDIR: the files go below it, and uninstall with the same DESTDIR removes them.
dest=$scratch/dest
DESTDIR=$dest cmake --install "$build" --prefix /usr/local > /dev/null
[ -f "$dest/usr/local/bin/zerodp" ] || fail "cmake --install with DESTDIR lacks /usr/local/bin/zerodp"
make -s -C "$source" uninstall BUILD="$build" PREFIX=/usr/local DESTDIR="$dest" > /dev/null
left=$(cd "$dest" && find . -type f)
[ -z "$left" ] || fail "make uninstall with DESTDIR left: $left"

[ $failed -eq 0 ] && echo "the packages and the install hold what they should"
exit $failed
