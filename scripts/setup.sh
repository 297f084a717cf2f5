#!/usr/bin/env bash
# Finds or installs what sfz builds against, then writes .cargo/config.toml so that every later
# `cargo` call (yours, an editor's, CI's) sees the same libtorch and z3 and never rebuilds libtch.
#
#   libtorch: $LIBTORCH if set, else the torch==2.13.0 wheel in $SFZ_VENV (default ~/.cache/sfz/venv,
#             outside the checkout so fresh clones and CI reuse it), installed there if missing.
#   z3:       libz3.so from the z3-solver wheel in the same venv (Debian's 4.8.12 is older than the
#             z3 crate's bindings expect; see ARCHITECTURE.md).
#   python:   the venv's interpreter runs reproducers (`sfz report --verify`, the tests).
set -euo pipefail

TORCH_VERSION=2.13.0
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${SFZ_VENV:-$HOME/.cache/sfz/venv}
quiet=${1:-}

say() { [ "$quiet" = "--quiet" ] || printf 'sfz setup: %s\n' "$*" >&2; }
die() { printf 'sfz setup: error: %s\n' "$*" >&2; exit 1; }

command -v cargo >/dev/null || die "cargo not found; install Rust from https://rustup.rs"
command -v python3 >/dev/null || die "python3 not found; install Python 3.9+ (apt install python3 python3-venv)"
command -v g++ >/dev/null || die "g++ not found; the libtorch shim is C++ (apt install g++)"

if [ ! -x "$venv/bin/python" ]; then
  say "creating venv $venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv" || die "python3 -m venv failed (apt install python3-venv)"
fi
py="$venv/bin/python"

have_torch=$("$py" -c "import torch; print(torch.__version__.split('+')[0])" 2>/dev/null || true)
if [ "$have_torch" != "$TORCH_VERSION" ]; then
  say "installing torch==$TORCH_VERSION into $venv (4.7 GB, a few minutes, once)"
  "$py" -m pip install -q --disable-pip-version-check "torch==$TORCH_VERSION" \
    || die "pip install torch==$TORCH_VERSION failed; set LIBTORCH=<dir with lib/libtorch_cpu.so> to use your own"
fi
"$py" -c "import z3" 2>/dev/null || {
  say "installing z3-solver into $venv"
  "$py" -m pip install -q --disable-pip-version-check z3-solver || die "pip install z3-solver failed"
}
"$py" -c "import numpy" 2>/dev/null || "$py" -m pip install -q --disable-pip-version-check numpy || true

site=$("$py" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
libtorch=${LIBTORCH:-$site/torch}
[ -f "$libtorch/lib/libtorch_cpu.so" ] || die "no libtorch at $libtorch (lib/libtorch_cpu.so missing); unset LIBTORCH or point it at an unpacked libtorch $TORCH_VERSION"
z3lib="$site/z3/lib"
[ -f "$z3lib/libz3.so" ] || die "no libz3.so in $z3lib; reinstall z3-solver into $venv"
z3ver=$("$py" -c "import z3; print(z3.get_version_string())")

mkdir -p "$root/.cargo"
cfg="$root/.cargo/config.toml"
new=$(cat <<TOML
# Written by scripts/setup.sh; not tracked. Pins the libraries every cargo call builds against.
[env]
LIBTORCH = "$libtorch"
LIBTORCH_CXX11_ABI = "1"
Z3_NO_PKG_CONFIG = "1"
Z3_LIBRARY_PATH_OVERRIDE = "$z3lib"
Z3_SYS_Z3_VERSION = "$z3ver"
SFZ_PYTHON = "$py"
TOML
)
if [ ! -f "$cfg" ] || [ "$(cat "$cfg")" != "$new" ]; then
  printf '%s\n' "$new" > "$cfg"
  say "wrote $cfg"
fi
say "libtorch: $libtorch"
say "z3 $z3ver: $z3lib"
