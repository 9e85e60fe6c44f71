// Tokenizes every stdlib/ and examples/ file (and a small fixture, and every snippet of the
// VS Code extension, expanded with its defaults) with editors/vscode's TextMate grammar, the
// way VS Code does (vscode-textmate + vscode-oniguruma), and checks each token's scope
// against an independent reading of the same text: a small lexer that follows
// grammar/Emmy.g4 and knows where schedule blocks, knob entries and values are.
//
//   node tests/editors/tokenize.test.mjs [path/to/emmyc]
//
// With emmyc, every expanded snippet must also pass `emmyc check` and `emmyc fmt --check`.
// Exit status: 0 when every check passes, 1 on a failure, 77 (skipped) when the npm packages
// are not installed (npm ci --prefix tests/editors).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const grammarPath = path.join(root, 'editors/vscode/syntaxes/emmy.tmLanguage.json');
const snippetsPath = path.join(root, 'editors/vscode/snippets/emmy.json');

const require = createRequire(import.meta.url);
let tm, onig;
try {
  tm = require('vscode-textmate');
  onig = require('vscode-oniguruma');
} catch {
  console.log('editors_textmate: skipped: vscode-textmate is not installed (npm ci --prefix tests/editors)');
  process.exit(77);
}
const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
await onig.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));

// ---- the grammar's word lists -------------------------------------------------------------

const raw = JSON.parse(fs.readFileSync(grammarPath, 'utf8'));

// Word lists are rules whose match is \b(?:w1|w2|...)\b; returns word -> scope name.
function wordScopes(rule) {
  const out = new Map();
  for (const r of [rule, ...(rule.patterns ?? [])]) {
    if (!r.match) continue;
    const m = /^\\b\(\?:(.*)\)\\b$/.exec(r.match);
    if (!m) throw new Error(`word-list rule ${r.match} is not \\b(?:...)\\b`);
    for (const w of m[1].split('|')) out.set(w, r.name ?? rule.name);
  }
  return out;
}
const lists = {};
for (const cls of ['keyword', 'dtype', 'reduction', 'function', 'target', 'knob', 'knob-value-word', 'atom'])
  lists[cls] = wordScopes(raw.repository[cls]);

// The reserved words as the compiler takes them: the word literals of grammar/Emmy.g4.
const g4 = fs.readFileSync(path.join(root, 'grammar/Emmy.g4'), 'utf8').replace(/^\s*\/\/.*$/gm, '');
const reserved = new Set([...g4.matchAll(/'([A-Za-z_]\w*)'/g)].map((m) => m[1]));

const failures = [];
function fail(msg) {
  failures.push(msg);
}
for (const w of reserved)
  if (!lists.keyword.has(w)) fail(`grammar/Emmy.g4 reserves '${w}', the TextMate keyword rule lacks it`);
for (const w of lists.keyword.keys())
  if (!reserved.has(w)) fail(`the TextMate keyword rule has '${w}', which grammar/Emmy.g4 does not reserve`);

// ---- an independent reading of the text ---------------------------------------------------

// Tokens as Emmy.g4 lexes them, each with its line and column; a block comment gives one
// token per line it covers.
function lex(text) {
  const toks = [];
  let line = 0;
  let lineStart = 0;
  let i = 0;
  const push = (kind, from, to) => toks.push({ kind, text: text.slice(from, to), line, col: from - lineStart, len: to - from });
  const eol = (from) => (text.indexOf('\n', from) < 0 ? text.length : text.indexOf('\n', from));
  while (i < text.length) {
    const c = text[i];
    const rest = text.slice(i, i + 3);
    if (c === '\n') {
      ++line;
      lineStart = ++i;
    } else if (/\s/.test(c)) {
      ++i;
    } else if (rest === '///' || rest.startsWith('//')) {
      const j = eol(i);
      push(rest === '///' ? 'doc' : 'comment', i, j);
      i = j;
    } else if (rest.startsWith('/*')) {
      const close = text.indexOf('*/', i + 2);
      const end = close < 0 ? text.length : close + 2;
      while (i < end) {
        const j = Math.min(eol(i), end);
        if (j > i) push('block', i, j);
        i = j;
        if (i < end) {
          ++line;
          lineStart = ++i;
        }
      }
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"' && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      if (text[j] === '"') ++j;
      push('string', i, j);
      i = j;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /[A-Za-z_]\w*/y;
      m.lastIndex = i;
      m.exec(text);
      push('id', i, m.lastIndex);
      i = m.lastIndex;
    } else if (/\d/.test(c) || (c === '.' && /\d/.test(text[i + 1] ?? ''))) {
      const m = /\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+/y;
      m.lastIndex = i;
      const s = m.exec(text)[0];
      push(/[.eE]/.test(s) ? 'float' : 'int', i, i + s.length);
      i += s.length;
    } else {
      const two = text.slice(i, i + 2);
      const n = ['->', '==', '!=', '<=', '>=', '&&', '||'].includes(two) ? 2 : 1;
      push('punct', i, i + n);
      i += n;
    }
  }
  return toks;
}

const keywordScope = (w) => lists.keyword.get(w) ?? 'keyword.* (the keyword rule lacks the word)';
const knobField = /^(?:gm|gn|[a-z])\d+(?:x\d+)?[a-z]?$/;

// What scope each token must carry: [{tok, cls, scope}]. cls names the check for the summary;
// scope null means "no scope beyond source.emmy and meta.*" (a plain name).
function expectations(text) {
  const toks = lex(text);
  const sig = toks.filter((t) => !['doc', 'comment', 'block'].includes(t.kind));
  const out = [];
  const want = (tok, cls, scope) => out.push({ tok, cls, scope });
  for (const t of toks) {
    if (t.kind === 'doc') want(t, 'doc comment', 'comment.line.documentation.emmy');
    if (t.kind === 'comment') want(t, 'line comment', 'comment.line.double-slash.emmy');
    if (t.kind === 'block') want(t, 'block comment', 'comment.block.emmy');
  }
  let state = 'top';
  let entry = 'name';
  let importing = false;
  for (let k = 0; k < sig.length; ++k) {
    const t = sig[k];
    const prev = sig[k - 1]?.text;
    const next = sig[k + 1]?.text;
    if (t.kind === 'string') {
      want(t, 'string', 'string.quoted.double.emmy');
      continue;
    }
    if (state === 'top') {
      if (t.text === ';') importing = false;
      if (t.kind === 'float') want(t, 'number', 'constant.numeric.float.emmy');
      if (t.kind === 'int') want(t, 'number', 'constant.numeric.integer.emmy');
      if (t.kind !== 'id') continue;
      if (t.text === 'schedule') {
        want(t, 'keyword', keywordScope('schedule'));
        state = 'header';
      } else if (prev === 'op') {
        want(t, 'op name', 'entity.name.function.emmy');
      } else if (t.text === 'grad' && prev === '=' && sig[k - 3]?.text === 'op' && next === '(') {
        want(t, 'keyword', 'keyword.control.grad.emmy');  // `op NAME = grad(...)`: a derived op
      } else if (t.text === 'saving' && prev === ')' && next !== '(') {
        want(t, 'keyword', 'keyword.control.saving.emmy');  // `grad(...) saving m, l;`
      } else if (prev === 'monoid') {
        want(t, 'monoid name', 'entity.name.type.monoid.emmy');
      } else if (prev === 'import' || (importing && prev === '.')) {
        want(t, 'module name', 'entity.name.namespace.emmy');
      } else if (reserved.has(t.text)) {
        want(t, 'keyword', keywordScope(t.text));
        if (t.text === 'import') importing = true;
      } else if (lists.dtype.has(t.text)) {
        want(t, 'dtype', 'storage.type.emmy');
      } else if (next === '(' && lists.reduction.has(t.text)) {
        want(t, 'reduction', 'support.function.reduction.emmy');
      } else if (next === '(' && lists.function.has(t.text)) {
        want(t, 'function', 'support.function.emmy');
      } else if (next === '(') {
        want(t, 'call', 'entity.name.function.call.emmy');
      } else {
        want(t, 'plain name', null);
      }
    } else if (state === 'header' || (state === 'guard' && t.text === 'auto' && next === ';')) {
      if (t.text === 'auto' && next === ';') {
        want(t, 'keyword', 'keyword.control.auto.emmy');
        state = 'top';
      } else if (t.text === '{') {
        state = 'body';
        entry = 'name';
      } else if (t.text === 'where') {
        want(t, 'keyword', keywordScope('where'));
        state = 'guard';
      } else if (t.kind === 'id' && prev === 'schedule') {
        want(t, 'op name', 'entity.name.function.emmy');
      } else if (t.kind === 'id' && prev === 'for') {
        want(t, 'target', 'support.constant.target.emmy');
      } else if (t.kind === 'id') {
        want(t, 'keyword', keywordScope(t.text));
      }
    } else if (state === 'guard') {  // an expression over the op's sizes, up to the block's '{'
      if (t.text === '{') {
        state = 'body';
        entry = 'name';
      } else if (t.kind === 'int') {
        want(t, 'number', 'constant.numeric.integer.emmy');
      } else if (t.kind === 'id') {
        want(t, reserved.has(t.text) ? 'keyword' : 'size', reserved.has(t.text) ? keywordScope(t.text) : null);
      }
    } else if (t.text === '}') {
      state = 'top';
    } else if (entry === 'name') {
      if (t.kind === 'id') want(t, 'knob', 'variable.parameter.knob.emmy');
      if (t.text === '@') entry = 'site';
      if (t.text === '=') entry = 'value';
    } else if (entry === 'site') {
      if (t.kind === 'id') want(t, 'knob site', 'variable.other.site.emmy');
      entry = 'name';
    } else if (t.text === ';') {
      entry = 'name';
    } else if (t.kind === 'int') {
      want(t, 'knob value', 'constant.numeric.integer.emmy');
    } else if (t.kind === 'id') {
      if (t.text === 'a' && next === ':') want(t, 'atom prefix', 'keyword.other.atom.emmy');
      else if (prev === ':' && sig[k - 2]?.text === 'a') want(t, 'atom', 'support.constant.atom.emmy');
      else if (knobField.test(t.text)) want(t, 'knob field', 'constant.numeric.knob-field.emmy');
      else want(t, 'knob value', 'support.constant.knob-value.emmy');
    }
  }
  return out;
}

// ---- the extension's manifest and language configuration -----------------------------------

const ext = path.join(root, 'editors/vscode');
const manifest = JSON.parse(fs.readFileSync(path.join(ext, 'package.json'), 'utf8'));
const language = manifest.contributes.languages.find((l) => l.id === 'emmy');
const grammarEntry = manifest.contributes.grammars.find((g) => g.language === 'emmy');
if (!language?.extensions?.includes('.emmy')) fail('package.json: no language emmy for .emmy files');
if (grammarEntry?.scopeName !== raw.scopeName || path.resolve(ext, grammarEntry.path) !== grammarPath)
  fail('package.json: the emmy grammar entry does not name syntaxes/emmy.tmLanguage.json and its scope');
if (!manifest.contributes.snippets.some((s) => path.resolve(ext, s.path) === snippetsPath))
  fail('package.json: snippets/emmy.json is not contributed');
const config = JSON.parse(fs.readFileSync(path.resolve(ext, language.configuration), 'utf8'));
const foldStart = new RegExp(config.folding.markers.start);
const foldEnd = new RegExp(config.folding.markers.end);

// Folding on braces: in a formatted file every line that opens a block has a line that closes it.
function checkFolding(name, text) {
  let depth = 0;
  text.split('\n').forEach((line, i) => {
    if (foldStart.test(line)) ++depth;
    if (foldEnd.test(line) && --depth < 0) fail(`${name}:${i + 1}: a folding end marker without a start`);
  });
  if (depth !== 0) fail(`${name}: ${depth} folding start markers without an end`);
}

// ---- tokenizing and checking ---------------------------------------------------------------

async function loadGrammar(rawGrammar) {
  const registry = new tm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new onig.OnigScanner(patterns),
      createOnigString: (s) => new onig.OnigString(s),
    }),
    loadGrammar: async (scope) =>
      scope === 'source.emmy' ? tm.parseRawGrammar(JSON.stringify(rawGrammar), grammarPath) : null,
  });
  return registry.loadGrammar('source.emmy');
}

function tokenize(grammar, text) {
  let stack = tm.INITIAL;
  return text.split('\n').map((line) => {
    const r = grammar.tokenizeLine(line, stack);
    stack = r.ruleStack;
    return r.tokens;
  });
}

const plain = (s) => s === 'source.emmy' || s.startsWith('meta.');

// Checks one text; returns the number of checks per class and the failure messages.
function check(grammar, name, text) {
  const lines = tokenize(grammar, text);
  const srcLines = text.split('\n');
  const counts = {};
  const errors = [];
  for (const { tok, cls, scope } of expectations(text)) {
    counts[cls] = (counts[cls] ?? 0) + 1;
    const covering = lines[tok.line].filter((x) => x.startIndex < tok.col + tok.len && x.endIndex > tok.col);
    const ok =
      covering.length > 0 &&
      covering.every((x) => (scope === null ? x.scopes.every(plain) : x.scopes.includes(scope)));
    if (!ok) {
      const got = covering.map((x) => `'${srcLines[tok.line].slice(x.startIndex, x.endIndex)}' ${x.scopes.join(' ')}`);
      errors.push(
        `${name}:${tok.line + 1}:${tok.col + 1}: ${cls} '${tok.text}' should carry ${scope ?? 'no scope'}; got ${got.join(' | ')}`,
      );
    }
  }
  return { counts, errors, lines: srcLines.length };
}

// A snippet body with every placeholder at its default (the first choice) and tabs as two spaces.
function expandSnippet(body) {
  let s = (Array.isArray(body) ? body.join('\n') : body).replaceAll('\t', '  ');
  const values = {};
  for (let changed = true; changed; ) {
    const before = s;
    s = s.replace(/\$\{(\d+):([^${}]*)\}/g, (_, n, d) => (values[n] = d));
    s = s.replace(/\$\{(\d+)\|([^|]*)\|\}/g, (_, n, c) => (values[n] = c.split(',')[0]));
    s = s.replace(/\$\{(\d+)\}|\$(\d+)/g, (m, a, b) => values[a ?? b] ?? ((a ?? b) === '0' ? '' : m));
    changed = s !== before;
  }
  if (/\$/.test(s)) throw new Error(`snippet left a placeholder: ${s}`);
  return s;
}

// Constructs that stdlib/ and examples/ do not use.
const fixture = `import std.monoids; /* a block comment
   over two lines */ import std.nn;
op fixture(x: f32[N, 4], eps: f32) -> (y: f32[N, 4]) {
  let c = .5 * 1e-5 + 2.5e+3 + 7 + 1.;  // numbers
  y[n, k] = select(x[n, k] > -inf && true, x[n, k] * c, 0.0) + eps;
}
schedule fixture for sm_80 as "esc\\"aped" { /* inline */
  REDUCE = ;
}
schedule fixture for sm_90 as "guarded" where (N + 127) / 128 * 4 >= 64 && !false {
  TILE = a:scalar;
}
schedule fixture for sm_80 as "auto" where N > 4 auto;
schedule fixture for sm_90 auto ;
schedule fixture for sm_120 {
  // a comment in a schedule block
  TILE@y = f4;
  FAST_EXP = 0;
}
schedule fixture for sm_90a {
  TILE = a:wgmma_m64n128k16_bf16/w4x1/f1x1/k4;
  STAGE = d2/tma/ring;
  COOP = t256/v8;
  REDUCE@y = g4a;
}
monoid fixture_m(x: f32) {
  identity = 0;
  combine(a, b) {
    yield a.x + b.x;
  }
  assume commutative;
}
`;

const grammar = await loadGrammar(raw);
const inputs = [];
for (const dir of ['stdlib', 'examples'])
  for (const f of fs.readdirSync(path.join(root, dir)).sort())
    if (f.endsWith('.emmy')) inputs.push([`${dir}/${f}`, fs.readFileSync(path.join(root, dir, f), 'utf8')]);
const repoFiles = inputs.length;
inputs.push(['(fixture)', fixture]);
const snippets = JSON.parse(fs.readFileSync(snippetsPath, 'utf8'));
const expanded = Object.entries(snippets).map(([name, s]) => [name, expandSnippet(s.body)]);
for (const [name, text] of expanded) inputs.push([`(snippet ${name})`, text]);

const totals = {};
let lineCount = 0;
for (const [name, text] of inputs) {
  const { counts, errors, lines } = check(grammar, name, text);
  if (name !== '(fixture)') checkFolding(name, text);  // the fixture is not formatted
  lineCount += lines;
  for (const [cls, n] of Object.entries(counts)) totals[cls] = (totals[cls] ?? 0) + n;
  failures.push(...errors);
}
for (const cls of [
  'keyword', 'dtype', 'reduction', 'function', 'call', 'number', 'string', 'line comment', 'doc comment',
  'block comment', 'op name', 'monoid name', 'module name', 'plain name', 'target', 'knob', 'knob site',
  'knob value', 'knob field', 'atom prefix', 'atom',
])
  if (!totals[cls]) fail(`no ${cls} was checked: the inputs or the expectations lost it`);

// Every reserved word was seen in the inputs with its scope.
const seen = new Set();
for (const [, text] of inputs)
  for (const e of expectations(text)) if (e.cls === 'keyword') seen.add(e.tok.text);
for (const w of reserved) if (!seen.has(w)) fail(`reserved word '${w}' occurs in no input`);

// The checks can fail: a grammar that forgets a keyword and the knob names must be caught.
const broken = structuredClone(raw);
for (const p of broken.repository.keyword.patterns) p.match = p.match.replace('|yield|', '|');
broken.repository.knob.match = '\\b(?:NO_KNOB)\\b';
const brokenGrammar = await loadGrammar(broken);
const brokenErrors = ['stdlib/nn.emmy', 'stdlib/monoids.emmy'].flatMap(
  (f) => check(brokenGrammar, f, inputs.find(([n]) => n === f)[1]).errors,
);
if (!brokenErrors.some((e) => e.includes(" knob '")) || !brokenErrors.some((e) => e.includes("'yield'")))
  fail('a grammar without yield and without knob names passed the checks');

// With emmyc: every snippet, at its defaults, is a valid, formatted program (a schedule after
// the op snippet).
const emmyc = process.argv[2];
let snippetsChecked = 0;
if (emmyc) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'emmy-snippets-'));
  const op = expanded.find(([n]) => n === 'op')[1];
  const env = { ...process.env, EMMY_STDLIB: path.join(root, 'stdlib') };
  delete env.EMMY_KNOBS;
  for (const [name, text] of expanded) {
    const file = path.join(dir, `${name.replace(/\W+/g, '_')}.emmy`);
    fs.writeFileSync(file, (text.startsWith('schedule') ? `${op}\n\n${text}` : text) + '\n');
    try {
      for (const args of [['check', file], ['fmt', '--check', file]])
        execFileSync(emmyc, args, { env, stdio: 'pipe' });
      ++snippetsChecked;
    } catch (e) {
      fail(`snippet '${name}' at its defaults does not pass emmyc check and fmt --check:\n${fs.readFileSync(file, 'utf8')}${e.stdout}${e.stderr}`);
    }
  }
  fs.rmSync(dir, { recursive: true });
}

for (const f of failures) console.log(`FAIL: ${f}`);
const checked = Object.values(totals).reduce((a, b) => a + b, 0);
console.log(
  `editors_textmate: ${repoFiles} files + fixture + ${expanded.length} snippets, ${lineCount} lines, ` +
    `${checked} tokens checked (${Object.entries(totals).map(([c, n]) => `${c} ${n}`).join(', ')}); ` +
    `broken grammar caught (${brokenErrors.length} failures); ` +
    `${emmyc ? `${snippetsChecked} snippets pass emmyc check and fmt --check` : 'snippets not checked (no emmyc given)'}; ` +
    `${failures.length} failures`,
);
process.exit(failures.length ? 1 : 0);
