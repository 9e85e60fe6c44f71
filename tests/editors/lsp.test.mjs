// Drives `emmyc lsp` through a real LSP client connection (vscode-jsonrpc, the library VS Code's
// language client is built on) over stdio: open a file with a known error and receive its
// diagnostic at the right range, hover a tensor and a monoid, complete a knob name and a knob
// value, go to an imported op's definition, format, shut down.
//
//   node tests/editors/lsp.test.mjs path/to/emmyc
//
// Exit status: 0 when every check passes, 1 on a failure, 77 (skipped) when vscode-jsonrpc is
// not installed (npm ci --prefix tests/editors).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const require = createRequire(import.meta.url);
let rpc;
try {
  rpc = require('vscode-jsonrpc/node');
} catch {
  console.log('editors_lsp: skipped: vscode-jsonrpc is not installed (npm ci --prefix tests/editors)');
  process.exit(77);
}
const emmyc = process.argv[2];
if (!emmyc) {
  console.error('usage: node tests/editors/lsp.test.mjs path/to/emmyc');
  process.exit(2);
}

let failures = 0;
function check(what, ok, got) {
  if (ok) return;
  failures++;
  console.error(`FAIL: ${what}\n  got: ${JSON.stringify(got)}`);
}

const child = spawn(emmyc, ['lsp'], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, EMMY_STDLIB: path.join(root, 'stdlib') } });
const connection = rpc.createMessageConnection(new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));
const diagnostics = new Map();
const waiting = new Map();
connection.onNotification('textDocument/publishDiagnostics', (p) => {
  diagnostics.set(p.uri, p.diagnostics);
  (waiting.get(p.uri) || []).forEach((resolve) => resolve(p.diagnostics));
  waiting.delete(p.uri);
});
connection.listen();
const nextDiagnostics = (uri) => new Promise((resolve) => waiting.set(uri, [...(waiting.get(uri) || []), resolve]));

const uri = pathToFileURL(path.join(root, 'tests/editors/lsp_fixture.emmy')).href;
// Line 4 reads `z`, which nothing defines: an unknown name at line 4, columns 12..13 (0-based).
const broken = [
  'import std.nn;',
  '',
  'op scale(x: f16[N, C]) -> (y: f16[N, C]) {',
  '  y[n, c] = z[n, c] * 2.0;',
  '}',
  '',
].join('\n');
const good = [
  'import std.nn;',
  '',
  'monoid argmax_left(v: f32, i: i64) {',
  '  identity = (-inf, 0);',
  '  lift(x: f32, j: i64) = (x, j);',
  '  combine(a, b) {',
  '    let take_b = b.v > a.v;',
  '    yield (select(take_b, b.v, a.v), select(take_b, b.i, a.i));',
  '  }',
  '}',
  '',
  'op probs(x: f16[N, C]) -> (y: f16[N, C]) {',
  '  y[n,c] = softmax(x)[n, c];',
  '}',
  '',
  'op first(x: f16[N, C]) -> (index: i64[N]) {',
  '  r[n] = argmax_left(c: x[n, c], c);',
  '  index[n] = r.i;',
  '}',
  '',
  'schedule probs for sm_90a {',
  '  COOP = t128/v8;',
  '  STAGE = ;',
  '}',
  '',
].join('\n');

try {
  const init = await connection.sendRequest('initialize', { processId: process.pid, rootUri: pathToFileURL(root).href, capabilities: {} });
  check('initialize: hover, definition, completion, formatting', init.capabilities.hoverProvider && init.capabilities.definitionProvider &&
    init.capabilities.completionProvider && init.capabilities.documentFormattingProvider, init);
  connection.sendNotification('initialized', {});

  // Diagnostics of a known error, at its range.
  let pending = nextDiagnostics(uri);
  connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'emmy', version: 1, text: broken } });
  let diags = await pending;
  check('one diagnostic for the unknown tensor', diags.length === 1, diags);
  const d = diags[0] || {};
  check('its range is the name z on line 4', d.range && d.range.start.line === 3 && d.range.start.character === 12 &&
    d.range.end.line === 3 && d.range.end.character === 13, d.range);
  check('an error with emmyc\'s code and message', d.severity === 1 && /^E\d{3}$/.test(d.code) && /z/.test(d.message), d);

  // The fixed text clears it.
  pending = nextDiagnostics(uri);
  connection.sendNotification('textDocument/didChange', { textDocument: { uri, version: 2 }, contentChanges: [{ text: good }] });
  diags = await pending;
  check('no diagnostics once fixed', diags.length === 0, diags);

  // Hover a tensor: its dtype and shape.
  const hover = await connection.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: 11, character: 10 } });
  check('hover on x: f16[N, C], an input', hover && /x: f16\[N, C\]/.test(hover.contents.value) && /input of probs/.test(hover.contents.value), hover);
  // Hover a monoid: its laws as proved.
  const laws = await connection.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: 16, character: 12 } });
  check('hover on argmax_left: associative proved, commutative not', laws && /associative: proved/.test(laws.contents.value) &&
    /commutative: (refuted|not proved)/.test(laws.contents.value), laws);

  // Go to an imported op's definition: softmax in std/nn.emmy.
  const def = await connection.sendRequest('textDocument/definition', { textDocument: { uri }, position: { line: 12, character: 13 } });
  check('softmax is defined in stdlib/nn.emmy', def && def.uri.endsWith('/stdlib/nn.emmy') && def.range.start.line === 9, def);

  // Complete a knob name, and a knob value legal on sm_90a.
  const names = await connection.sendRequest('textDocument/completion', { textDocument: { uri }, position: { line: 21, character: 2 } });
  check('knob names in a schedule block', names.some((i) => i.label === 'STAGE') && names.some((i) => i.label === 'TILE'), names.map((i) => i.label));
  const values = await connection.sendRequest('textDocument/completion', { textDocument: { uri }, position: { line: 22, character: 10 } });
  check('STAGE values legal on sm_90a', values.some((i) => /tma/.test(i.label)) && values.every((i) => !/^t\d/.test(i.label)), values.map((i) => i.label));

  // Format: the whole text as emmyc fmt writes it.
  const edits = await connection.sendRequest('textDocument/formatting', { textDocument: { uri }, options: { tabSize: 2, insertSpaces: true } });
  check('one edit, the text emmyc fmt writes', Array.isArray(edits) && edits.length === 1 &&
    edits[0].newText.includes('  y[n, c] = softmax(x)[n, c];\n') && edits[0].newText.includes('  STAGE = ;\n'), edits);

  await connection.sendRequest('shutdown');
  connection.sendNotification('exit');
} catch (e) {
  failures++;
  console.error(`FAIL: ${e.stack || e}`);
}
const code = await new Promise((resolve) => child.on('exit', resolve));
check('exit code 0 after shutdown', code === 0, code);
connection.dispose();
console.log(failures ? `editors_lsp: ${failures} failure(s)` : 'editors_lsp: ok');
process.exit(failures ? 1 : 0);
