// The VS Code extension: packaged with the official packager (@vscode/vsce) into a .vsix that
// carries the client and its runtime dependency, and its client, loaded with stand-ins for the
// `vscode` and `vscode-languageclient` modules, starts `<emmy.emmycPath> lsp` for emmy files and
// restarts it when the setting changes.
//
//   node tests/editors/vsix.test.mjs [out.vsix]
//
// Exit status: 0 when every check passes, 1 on a failure, 77 (skipped) when the extension's npm
// packages are not installed (npm ci --prefix editors/vscode).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import Module, { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const ext = path.resolve(here, '../../editors/vscode');
const vsce = path.join(ext, 'node_modules/@vscode/vsce/vsce');
if (!fs.existsSync(vsce) || !fs.existsSync(path.join(ext, 'node_modules/vscode-languageclient'))) {
  console.log('editors_vsix: skipped: the extension\'s npm packages are not installed (npm ci --prefix editors/vscode)');
  process.exit(77);
}
let failures = 0;
function check(what, ok, got) {
  if (ok) return;
  failures++;
  console.error(`FAIL: ${what}\n  got: ${JSON.stringify(got)}`);
}

// 1. The package.
const out = process.argv[2] || path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'emmy-vsix-')), 'emmy.vsix');
execFileSync(process.execPath, [vsce, 'package', '--skip-license', '--allow-missing-repository', '--out', out], { cwd: ext, stdio: 'pipe' });
check('the .vsix exists', fs.existsSync(out) && fs.statSync(out).size > 10000, out);
const listing = execFileSync(process.execPath, [vsce, 'ls'], { cwd: ext, encoding: 'utf8' });
for (const f of ['extension.js', 'package.json', 'syntaxes/emmy.tmLanguage.json', 'snippets/emmy.json',
                 'node_modules/vscode-languageclient/node.js'])
  check(`the package holds ${f}`, listing.split('\n').includes(f), listing.split('\n').slice(0, 20));
check('the packager is not in the package', !listing.includes('node_modules/@vscode/vsce/'), '');

// 2. The client, with stand-ins for the editor's API.
const started = [];
let setting = 'emmyc';
let onConfig;
const vscode = {
  workspace: {
    getConfiguration: (section) => ({ get: (key) => (section === 'emmy' && key === 'emmycPath' ? setting : undefined) }),
    onDidChangeConfiguration: (f) => { onConfig = f; return { dispose() {} }; },
  },
  window: { showWarningMessage: (m) => started.push({ warning: m }) },
};
class LanguageClient {
  constructor(id, name, server, options) { Object.assign(this, { id, name, server, options, running: false }); started.push(this); }
  start() { this.running = true; return Promise.resolve(); }
  stop() { this.running = false; return Promise.resolve(); }
}
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === 'vscode' || request === 'vscode-languageclient/node') return request;
  return resolve.call(this, request, ...rest);
};
const require = createRequire(import.meta.url);
require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: vscode };
require.cache['vscode-languageclient/node'] = { id: 'lc', filename: 'lc', loaded: true, exports: { LanguageClient } };
const extension = require(path.join(ext, 'extension.js'));
const context = { subscriptions: [] };
await extension.activate(context);
const first = started[0] || {};
check('activation starts `emmyc lsp`', first.server && first.server.command === 'emmyc' && first.server.args[0] === 'lsp' && first.running, first.server);
check('for emmy documents', first.options && first.options.documentSelector.some((s) => s.language === 'emmy'), first.options);
setting = '/opt/emmy/bin/emmyc';
await onConfig({ affectsConfiguration: (k) => k === 'emmy.emmycPath' });
const second = started[1] || {};
check('a new emmy.emmycPath restarts the server with it', !first.running && second.server && second.server.command === '/opt/emmy/bin/emmyc' && second.running, second.server);
await extension.deactivate();
check('deactivation stops it', !second.running, second.running);

console.log(failures ? `editors_vsix: ${failures} failure(s)` : `editors_vsix: ok (${out})`);
process.exit(failures ? 1 : 0);
