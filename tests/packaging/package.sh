#!/usr/bin/env bash
# The installed zerodp, as `make install` and `make deb` lay it out (docs/install.md).
# Usage: package.sh BUILD_DIR
#  - cpack makes the .deb from BUILD_DIR into a scratch folder: its Depends are the runtime
#    packages (no -dev package, the libraries the program loads, Debian's python3 of the
#    module's version), and it holds the program, the module, the man page, the completion,
#    the docs and the examples under /usr;
#  - unpacked, its program plans what the build's program plans, its module imports in Debian's
#    python3 and answers the same, its man page lists every flag of `plan --help`, and its
#    completion completes commands, flags and GPU names;
#  - `cmake --install BUILD_DIR --prefix DIR` lays out the same files under DIR, the module in
#    lib/python3.X/dist-packages.
set -euo pipefail
build=$(cd "$1" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$scratch/deb" > "$scratch/cpack.log" ||
  { cat "$scratch/cpack.log"; exit 1; }
debs=("$scratch"/deb/zerodp_*_amd64.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || { echo "FAIL: no single .deb: ${debs[*]}"; exit 1; }
deb=${debs[0]}

# Dependencies: what the program and the module load, as packages a user's apt can fetch.
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for wanted in 'libc6 (>=' 'libstdc++6 (>=' 'libopenblas0' 'libopenmpi3' 'libssl3' 'python3 (>= 3.'; do
  [[ $depends == *"$wanted"* ]] || fail "Depends lacks $wanted"
done
[[ $depends != *-dev* ]] || fail "Depends names a -dev package: $depends"
[ "$(dpkg-deb -f "$deb" Package)" = zerodp ] || fail "Package is not zerodp"
[ "$(dpkg-deb -f "$deb" Architecture)" = amd64 ] || fail "Architecture is not amd64"

contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for path in ./usr/bin/zerodp ./usr/share/man/man1/zerodp.1.gz \
            ./usr/share/bash-completion/completions/zerodp ./usr/share/doc/zerodp/README.md \
            ./usr/share/doc/zerodp/docs/planner.md ./usr/share/doc/zerodp/examples/ds_zero2_offload.json; do
  grep -qxF "$path" <<<"$contents" || fail "the .deb lacks $path"
done
grep -Eq '^\./usr/lib/python3/dist-packages/zerodp\.cpython-[0-9]+-x86_64-linux-gnu\.so$' <<<"$contents" ||
  fail "the .deb lacks the module in /usr/lib/python3/dist-packages"
[ -z "$(grep -v '^\./usr/' <<<"$contents" | grep -v '^\./$')" ] || fail "the .deb puts files outside /usr"

# Unpacked: the program, the module, the man page and the completion work from where they are.
root=$scratch/root
dpkg-deb -x "$deb" "$root"
expected=$("$build/zerodp" plan --params 1e9 --gpus 8 --gpu a100-40gb --json)
[ "$("$root/usr/bin/zerodp" plan --params 1e9 --gpus 8 --gpu a100-40gb --json)" = "$expected" ] ||
  fail "the packaged program plans otherwise than the build's"
cheapest=$(cd "$scratch" && PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 -c '
import zerodp
assert zerodp.__file__.startswith("'"$root"'"), zerodp.__file__
print(zerodp.plan(params=1e9, gpus=8, gpu="a100-40gb")["cheapest_fitting_stage"])')
[ "$cheapest" = 0 ] || fail "the packaged module: cheapest_fitting_stage $cheapest, wanted 0 (DP)"

man=$(zcat "$root/usr/share/man/man1/zerodp.1.gz")
grep -q '^\.TH ZERODP 1' <<<"$man" || fail "the man page has no .TH ZERODP 1"
for flag in $("$build/zerodp" plan --help | grep -Eo -- '--[a-z][a-z0-9-]*' | sort -u); do
  grep -qF -- "${flag//-/\\-}" <<<"$man" || grep -qF -- "$flag" <<<"$man" || fail "the man page lacks plan's $flag"
done

completion=$(
  # shellcheck disable=SC1091
  source /usr/share/bash-completion/bash_completion
  source "$root/usr/share/bash-completion/completions/zerodp"
  t() { COMP_WORDS=("$root/usr/bin/zerodp" "$@"); COMP_CWORD=$#; _zerodp; echo "${COMPREPLY[*]}"; }
  t pl; t plan --gpus-p; t plan --gpu a100-
)
[ "$completion" = $'plan plot\n--gpus-per-node\na100-40gb a100-80gb' ] ||
  fail "completion gave: $completion"

# make install's layout, under a prefix other than /usr.
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" > /dev/null
for path in bin/zerodp share/man/man1/zerodp.1.gz share/bash-completion/completions/zerodp \
            share/doc/zerodp/README.md share/doc/zerodp/examples/ds_zero2_offload.json; do
  [ -f "$prefix/$path" ] || fail "cmake --install lacks $path"
done
version=$(/usr/bin/python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
ls "$prefix"/lib/python"$version"/dist-packages/zerodp.*.so > /dev/null 2>&1 ||
  fail "cmake --install lacks lib/python$version/dist-packages/zerodp.*.so"

[ $failed -eq 0 ] && echo "the package and the install hold what they should"
exit $failed
