#!/usr/bin/env bash
# ctest editors_vim: vim, headless, checks the highlight groups of editors/vim on stdlib/nn.emmy
# (vim_syntax.vim); prints its verdict and exits 1 when a group is wrong.
set -uo pipefail
cd "$(dirname "$0")/../.."
export VIM_SYNTAX_OUT; VIM_SYNTAX_OUT=$(mktemp)
timeout 60 vim -N -u NONE -i NONE --not-a-term -S tests/editors/vim_syntax.vim </dev/null >/dev/null 2>&1
rc=$?
cat "$VIM_SYNTAX_OUT"
rm -f "$VIM_SYNTAX_OUT"
exit $rc
