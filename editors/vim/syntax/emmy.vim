" Vim syntax for the Emmy language (.emmy).
" The keyword lists are checked against the grammar's keywords, the dtypes, the
" built-in functions and reductions, the knob names, knob value words and TILE atoms by
" tests/unit/test_editors.cpp.
if exists("b:current_syntax")
  finish
endif

syn keyword emmyDecl      op monoid schedule import
syn keyword emmyKeyword   let identity lift combine yield assume for as where
syn keyword emmyConstant  inf true false
syn keyword emmyType      bool i32 i64 f16 bf16 f32 f64
syn keyword emmyReduction sum prod max min any all argmax argmin
syn keyword emmyFunction  exp exp2 log log2 sqrt rsqrt tanh erf sigmoid abs select
syn keyword emmyKnob      PLACE TILE STAGE REDUCE WSPEC RASTER FAST_EXP COOP OVERLAP PINGPONG PERSIST CLUSTER contained
syn keyword emmyTarget    sm_80 sm_90 sm_90a sm_120
syn keyword emmyKnobWord  fuse cut cp tma reg ring contained
syn match   emmyAtom      "\<a:\zs\(mma_m16n8k16_f16\|mma_m16n8k16_bf16\|wgmma_m64n\d\+k16_f16\|wgmma_m64n\d\+k16_bf16\|scalar\|none\)\>" contained

syn match   emmyNumber    "\<\d\+\(\.\d*\)\=\([eE][+-]\=\d\+\)\=\>"
syn match   emmyNumber    "\.\d\+\([eE][+-]\=\d\+\)\=\>"
syn region  emmyString    start=+"+ skip=+\\"+ end=+"+ oneline
syn match   emmyDoc       "///.*$" contains=@Spell
syn match   emmyComment   "//\([^/].*\)\=$" contains=@Spell
syn region  emmyComment   start="/\*" end="\*/" contains=@Spell
syn match   emmyKnobValue "=\s*\zs[^;{}]*\ze;" contained contains=emmyAtom,emmyKnobWord
syn match   emmySite      "@\w\+" contained
" `op NAME = grad(OP, ...)`: a derived op (`grad` is a word of that place only).
syn match   emmyGrad      "\(\<op\s\+\w\+\s*=\s*\)\@<=grad\>"
syn match   emmyGrad      "\()\s*\)\@<=saving\>"
" `auto;` for a block's knobs: the auto-scheduler's choice (a word of schedule headers only).
syn match   emmyAuto      "\<auto\ze\s*;"
" The block's body, from its '{' (a keyword would win over a region starting on `schedule`).
syn region  emmySchedule  start="\(\<schedule\>[^{]*\)\@<={" end="}" contains=emmyDecl,emmyKeyword,emmyTarget,emmyString,emmyKnob,emmySite,emmyKnobValue,emmyComment,emmyDoc

hi def link emmyDecl      Structure
hi def link emmyKeyword   Keyword
hi def link emmyGrad      Keyword
hi def link emmyConstant  Constant
hi def link emmyType      Type
hi def link emmyReduction Function
hi def link emmyFunction  Function
hi def link emmyKnob      PreProc
hi def link emmyTarget    Constant
hi def link emmyNumber    Number
hi def link emmyString    String
hi def link emmyDoc       SpecialComment
hi def link emmyComment   Comment
hi def link emmyKnobValue Special
hi def link emmyAtom      Type
hi def link emmyKnobWord  Keyword
hi def link emmySite      Identifier
hi def link emmyAuto      Keyword

let b:current_syntax = "emmy"
