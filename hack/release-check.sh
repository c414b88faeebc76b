#!/usr/bin/env bash
# Checks a goreleaser snapshot (goreleaser release --snapshot --clean, see
# .goreleaser.yaml) in DIST (default dist/):
#   - checksums.txt verifies with sha256sum -c and lists every archive;
#   - an archive for each of linux, darwin, windows x amd64, arm64 (zip for
#     windows), holding both binaries (stowage, stowage-full), README.md,
#     the man pages and the four shell completions;
#   - a CycloneDX SBOM per binary;
#   - the linux binary of this machine's architecture runs `version` and
#     names the snapshot's version, and runs stowage-full for lock --help.
#   hack/release-check.sh [DIST]
set -euo pipefail
dist="${1:-dist}"
cd "$dist"
fail() { echo "release-check: $*" >&2; exit 1; }

[[ -f checksums.txt ]] || fail "no checksums.txt in $dist"
sha256sum --strict -c checksums.txt >/dev/null || fail "checksums.txt does not verify"

version=""
for os in linux darwin windows; do
  for arch in amd64 arm64; do
    ext=tar.gz bin=stowage
    [[ $os == windows ]] && ext=zip bin=stowage.exe
    shopt -s nullglob
    found=(stowage_*_"${os}_${arch}.${ext}")
    shopt -u nullglob
    ((${#found[@]} == 1)) || fail "want one archive for $os/$arch (*.$ext), found ${#found[@]}"
    a="${found[0]}"
    v="${a#stowage_}"; v="${v%_${os}_${arch}.${ext}}"
    [[ -z $version || $version == "$v" ]] || fail "$a: version $v, others $version"
    version="$v"
    grep -q "  $a\$" checksums.txt || fail "$a is not in checksums.txt"
    if [[ $ext == zip ]]; then
      list="$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$a")"
    else
      list="$(tar -tzf "$a")"
    fi
    full=stowage-full
    [[ $os == windows ]] && full=stowage-full.exe
    for f in "$bin" "$full" README.md man/stowage.1 man/stowage-render.1 man/stowage-push.1 \
      completions/stowage.bash completions/_stowage completions/stowage.fish completions/stowage.ps1; do
      grep -qx "$f" <<<"$list" || fail "$a lacks $f"
    done
    for b in "$bin" "$full"; do
      sbom="${b%.exe}_${version}_${os}_${arch}.cdx.json"
      [[ -s $sbom ]] || fail "no SBOM $sbom"
      python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["bomFormat"] == "CycloneDX", d.get("bomFormat")' "$sbom" \
        || fail "$sbom is not a CycloneDX document"
    done
  done
done

case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) arch="" ;;
esac
if [[ -n $arch ]]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  tar -xzf "stowage_${version}_linux_${arch}.tar.gz" -C "$tmp" stowage stowage-full
  out="$("$tmp/stowage" version)" || fail "the linux/$arch binary does not run version"
  grep -q "$version" <<<"$out" || fail "the linux/$arch binary's version says: $out (want $version)"
  # lock is stowage-full's: the front runs it from the archive's folder.
  out="$("$tmp/stowage" lock --help)" || fail "the linux/$arch front does not run stowage-full for lock --help"
  grep -q -- "--via-site" <<<"$out" || fail "the linux/$arch front's lock --help is not lock's: $out"
fi
echo "release-check: ok: $version, 6 archives of two binaries, checksums and SBOMs verified; linux/${arch:-?} runs version and lock --help"
