#!/bin/sh
# Install the agentcore binary for this machine from a release (docs/install.md).
#
#   curl -fsSL https://github.com/agentcore/agentcore/releases/latest/download/install.sh | sh
#   sh install.sh [--base-url URL|DIR] [--prefix DIR] [--version VERSION]
#
# It picks agentcore-<os>-<arch> for `uname -s` / `uname -m`, downloads it and
# SHA256SUMS from the base URL (curl or wget; a local folder or file:// URL is
# read in place), checks the sha256, checks that the binary runs here, then
# moves it into place in one rename: nothing is installed when a check fails.
# POSIX sh (dash, bash, busybox ash, zsh in sh mode).
set -eu

# A release carries this line set by `npm run release -- --download-url URL`
# (the release workflow: this repository's own release page).
DEFAULT_BASE_URL="https://github.com/agentcore/agentcore/releases/latest/download"
TARGETS="linux-x64, linux-arm64, darwin-x64, darwin-arm64, windows-x64"

say() { printf '%s\n' "$*"; }
die() {
  printf 'install.sh: %s\n' "$*" >&2
  exit 1
}

usage() {
  cat <<EOF
Usage: sh install.sh [--base-url URL|DIR] [--prefix DIR] [--version VERSION]

Installs agentcore for this machine ($TARGETS):
downloads agentcore-<os>-<arch> and SHA256SUMS, refuses a file whose sha256
does not match, and installs it as BIN/agentcore in one rename.

  --base-url URL|DIR  where the release files are: an https:// release page
                      (default: $DEFAULT_BASE_URL),
                      a local folder, or a file:// URL
                      (also: AGENTCORE_BASE_URL)
  --prefix DIR        install into DIR/bin (default: ~/.local, so ~/.local/bin)
  --version VERSION   install that version: with the default base URL, its
                      release (download/vVERSION); in every case the binary
                      must report it, or nothing is installed
  -h, --help          show this help

Exit status: 0 installed; 1 refused (unknown platform, download failed,
checksum mismatch, the binary does not run here); 2 usage error.
EOF
}

base_url="${AGENTCORE_BASE_URL:-}"
prefix=""
want_version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --base-url) [ $# -ge 2 ] || { usage >&2; exit 2; }; base_url="$2"; shift 2 ;;
    --base-url=*) base_url="${1#*=}"; shift ;;
    --prefix) [ $# -ge 2 ] || { usage >&2; exit 2; }; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#*=}"; shift ;;
    --version) [ $# -ge 2 ] || { usage >&2; exit 2; }; want_version="${2#v}"; shift 2 ;;
    --version=*) want_version="${1#*=}"; want_version="${want_version#v}"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) printf 'install.sh: unknown option %s\n\n' "$1" >&2; usage >&2; exit 2 ;;
  esac
done

if [ -z "$base_url" ]; then
  base_url="$DEFAULT_BASE_URL"
  if [ -n "$want_version" ]; then
    case "$base_url" in
      */releases/latest/download) base_url="${base_url%/latest/download}/download/v$want_version" ;;
    esac
  fi
fi
base_url="${base_url%/}"

# ---- the platform
os=$(uname -s)
arch=$(uname -m)
case "$os" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  MINGW* | MSYS* | CYGWIN* | Windows_NT) os=windows ;;
  *) die "no agentcore build for this platform: $os $arch (builds: $TARGETS)" ;;
esac
case "$arch" in
  x86_64 | amd64 | x64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no agentcore build for this platform: $(uname -s) $arch (builds: $TARGETS)" ;;
esac
exe=""
[ "$os" = windows ] && exe=".exe"
artifact="agentcore-$os-$arch$exe"
case "$os-$arch" in
  linux-x64 | linux-arm64 | darwin-x64 | darwin-arm64 | windows-x64) ;;
  *) die "no agentcore build for this platform: $os-$arch (builds: $TARGETS)" ;;
esac

if [ -n "$prefix" ]; then bin_dir="${prefix%/}/bin"; else
  [ -n "${HOME:-}" ] || die "HOME is not set: give --prefix DIR"
  bin_dir="$HOME/.local/bin"
fi
dest="$bin_dir/agentcore$exe"

# ---- tools
sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then shasum -a 256 "$1" | cut -d' ' -f1
  elif command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 -r "$1" | cut -d' ' -f1
  else die "no sha256 tool found (sha256sum, shasum or openssl)"
  fi
}

# fetch NAME FILE: the release file NAME into FILE.
fetch() {
  case "$base_url" in
    https://* | http://*)
      if command -v curl >/dev/null 2>&1; then curl -fsSL --retry 2 -o "$2" "$base_url/$1" || die "could not download $base_url/$1"
      elif command -v wget >/dev/null 2>&1; then wget -q -O "$2" "$base_url/$1" || die "could not download $base_url/$1"
      else die "neither curl nor wget is installed"
      fi ;;
    *)
      src="${base_url#file://}"
      [ -f "$src/$1" ] || die "no $1 in $src"
      cp "$src/$1" "$2" ;;
  esac
}

tmp=$(mktemp -d 2>/dev/null || mktemp -d -t agentcore-install)
staged=""
cleanup() {
  rm -rf "$tmp"
  [ -z "$staged" ] || rm -f "$staged"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

say "agentcore: installing $artifact from $base_url"
fetch SHA256SUMS "$tmp/SHA256SUMS"
expected=$(awk -v f="$artifact" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/SHA256SUMS")
[ -n "$expected" ] || die "SHA256SUMS has no line for $artifact: nothing installed"
fetch "$artifact" "$tmp/$artifact"
actual=$(sha256_of "$tmp/$artifact")
if [ "$actual" != "$expected" ]; then
  die "sha256 mismatch for $artifact: expected $expected, got $actual; nothing installed"
fi
say "agentcore: sha256 $actual ok"
chmod 755 "$tmp/$artifact"

got=$("$tmp/$artifact" --version 2>/dev/null) || die "$artifact does not run on this machine: nothing installed"
case "$got" in
  "agentcore "*) ;;
  *) die "$artifact printed '$got' for --version, not 'agentcore VERSION': nothing installed" ;;
esac
if [ -n "$want_version" ] && [ "$got" != "agentcore $want_version" ]; then
  die "asked for agentcore $want_version, but $artifact is ${got#agentcore }: nothing installed"
fi

previous=""
[ -x "$dest" ] && previous=$("$dest" --version 2>/dev/null || true)
mkdir -p "$bin_dir" || die "cannot create $bin_dir"
# Copy next to the destination (the same file system), then rename over it: atomic.
staged="$bin_dir/.agentcore-install.$$"
cp "$tmp/$artifact" "$staged" || die "cannot write into $bin_dir"
chmod 755 "$staged"
mv -f "$staged" "$dest" || die "cannot install $dest"
staged=""

if [ -n "$previous" ] && [ "$previous" != "$got" ]; then say "agentcore: replaced ${previous#agentcore } with ${got#agentcore } at $dest"
else say "agentcore: installed ${got#agentcore } at $dest"
fi
case ":${PATH:-}:" in
  *":$bin_dir:"* | *":$bin_dir/:"*) ;;
  *)
    say "agentcore: $bin_dir is not on your PATH; add it, e.g. in ~/.profile:"
    say "  export PATH=\"$bin_dir:\$PATH\""
    ;;
esac
