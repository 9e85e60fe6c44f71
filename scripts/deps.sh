#!/usr/bin/env bash
# Installs the Debian packages Emmy builds and tests with (shared/notes/toolchain.md),
# only those that are missing. Sourced by bootstrap.sh and test.sh.
set -euo pipefail

EMMY_APT_PACKAGES=(
  cmake ninja-build g++ clang libclang-rt-14-dev python3 default-jre-headless
  antlr4 libantlr4-runtime-dev libfmt-dev doctest-dev libedit-dev libcli11-dev
  nlohmann-json3-dev libsqlite3-dev llvm-14-tools clang-format-14 tmux vim
)

emmy_install_deps() {
  local missing=()
  for p in "${EMMY_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "emmy: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  emmy_install_editor_deps
}

# The npm packages of the editor tests (tests/editors/package-lock.json: the grammar's and the
# language server's), once, where node and npm are installed; without them ctest skips those tests.
emmy_install_editor_deps() {
  local dir; dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/editors"
  command -v node >/dev/null && command -v npm >/dev/null || return 0
  if [ ! -d "$dir/node_modules/vscode-textmate" ] || [ ! -d "$dir/node_modules/vscode-oniguruma" ] ||
    [ ! -d "$dir/node_modules/vscode-jsonrpc" ]; then
    echo "emmy: npm ci in tests/editors"
    npm ci --prefix "$dir" --no-audit --no-fund >/dev/null ||
      echo "emmy: npm ci failed: the editors_textmate and editors_lsp tests will be skipped" >&2
  fi
  local ext; ext="$(cd "$dir/../../editors/vscode" && pwd)"
  [ -d "$ext/node_modules/@vscode/vsce" ] && [ -d "$ext/node_modules/vscode-languageclient" ] && return 0
  echo "emmy: npm ci in editors/vscode"
  npm ci --prefix "$ext" --no-audit --no-fund >/dev/null ||
    echo "emmy: npm ci failed: the editors_vsix test will be skipped" >&2
}

# Configures (once) and builds the tree into build/.
emmy_build() {
  local root; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  [ -f "$root/build/build.ninja" ] || cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build"
}
