" Run by ctest (editors_vim) through vim_syntax.sh, which reads the verdict from $VIM_SYNTAX_OUT.
" From the source root: checks the highlight group of words on the
" lines of a schedule block and an op of stdlib/nn.emmy; exits 1 (cquit) naming what is wrong.
set runtimepath^=editors/vim
filetype on
syntax enable
edit stdlib/nn.emmy
syntax sync fromstart
let s:failures = []
" The group at the first match of `pattern` (\zs marks the word) on the first line matching `line`.
function! s:expect(line, pattern, group) abort
  let l:lnum = search(a:line, 'w')
  if l:lnum == 0
    call add(s:failures, 'no line matches ' . a:line)
    return
  endif
  let l:col = match(getline(l:lnum), a:pattern)
  let l:got = l:col < 0 ? '(no match)' : synIDattr(synID(l:lnum, l:col + 1, 0), 'name')
  if l:got !=# a:group
    call add(s:failures, printf('line %d, %s: %s, expected %s', l:lnum, a:pattern, l:got, a:group))
  endif
endfunction
call s:expect('^op softmax(', '\<op\>', 'emmyDecl')
call s:expect('^op softmax(', '\<f16\>', 'emmyType')
call s:expect('^schedule sdpa for sm_90 {', '\<schedule\>', 'emmyDecl')
call s:expect('^schedule sdpa for sm_90 {', '\<sm_90\>', 'emmyTarget')
call s:expect('^  TILE = a:mma_m16n8k16_f16/w4x1/f2x8/k4;', '\<TILE\>', 'emmyKnob')
call s:expect('^  TILE = a:mma_m16n8k16_f16/w4x1/f2x8/k4;', 'a:\zsmma', 'emmyAtom')
call s:expect('^  TILE = a:mma_m16n8k16_f16/w4x1/f2x8/k4;', 'w4x1', 'emmyKnobValue')
call s:expect('^  STAGE = d3/cp/ring;', '\<ring\>', 'emmyKnobWord')
call s:expect('^  PLACE = fuse;', '\<fuse\>', 'emmyKnobWord')
call s:expect('wgmma_m64n128k16_f16', 'a:\zswgmma', 'emmyAtom')
call s:expect('^/// Tensor cores', '///', 'emmyDoc')
if empty(s:failures)
  call writefile(['editors_vim: 11 highlight groups as expected'], $VIM_SYNTAX_OUT)
  qa!
endif
call writefile(['editors_vim: ' . len(s:failures) . ' wrong'] + s:failures, $VIM_SYNTAX_OUT)
cquit!
