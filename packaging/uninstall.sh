#!/usr/bin/env bash
# `make uninstall`: removes what `make install` installed, as the build's install manifest
# lists it, and the folders named after zerodp that are left empty (share/doc/zerodp/docs,
# lib/zerodp), never a shared folder such as share/man/man1, which was there before.
# Usage: uninstall.sh BUILD_DIR PREFIX [DESTDIR]. The manifest lists the files under PREFIX
# without DESTDIR, so the same DESTDIR must be given again; a manifest of an install under
# another prefix is refused, its files not being the ones asked for.
set -euo pipefail
manifest=$1/install_manifest.txt
prefix=${2%/}/ # the start of every path under the prefix, / itself included
destdir=${3:-}
destdir=${destdir%/}
[ -f "$manifest" ] || { echo "uninstall: no $manifest: nothing was installed from $1" >&2; exit 1; }

mapfile -t files < "$manifest"
for file in "${files[@]}"; do
  case $file in
    "$prefix"*) ;;
    *)
      echo "uninstall: $manifest lists $file, not under $prefix: uninstall with the PREFIX of" \
           "the install" >&2
      exit 1
      ;;
  esac
done

found=0
for file in "${files[@]}"; do
  if [ -e "$destdir$file" ] || [ -L "$destdir$file" ]; then found=1; fi
done
[ $found -eq 1 ] || [ ${#files[@]} -eq 0 ] ||
  { echo "uninstall: none of the files of $manifest is under $destdir$prefix: was DESTDIR another?" >&2; exit 1; }

removed=0
for file in "${files[@]}"; do
  if [ -e "$destdir$file" ] || [ -L "$destdir$file" ]; then
    rm -f -- "$destdir$file"
    removed=$((removed + 1))
  fi
  dir=$(dirname -- "$file")
  while [ "$dir/" != "$prefix" ] && [[ ${dir#"$prefix"} == *zerodp* ]] && [ -d "$destdir$dir" ] &&
        [ -z "$(ls -A -- "$destdir$dir")" ]; do
    rmdir -- "$destdir$dir"
    dir=$(dirname -- "$dir")
  done
done
rm -f -- "$manifest"
echo "uninstall: removed $removed files under $destdir$prefix"
