// The Emmy extension's language client: starts `emmyc lsp` (the path from the setting
// emmy.emmycPath, else emmyc on the PATH) for .emmy files, and restarts it when the setting
// changes. Highlighting, brackets and snippets need no server.
const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function start() {
  const command = vscode.workspace.getConfiguration('emmy').get('emmycPath') || 'emmyc';
  client = new LanguageClient(
    'emmy',
    'Emmy (emmyc lsp)',
    { command, args: ['lsp'] },
    { documentSelector: [{ scheme: 'file', language: 'emmy' }, { scheme: 'untitled', language: 'emmy' }] },
  );
  return client.start().catch((e) => {
    vscode.window.showWarningMessage(`Emmy: could not start '${command} lsp' (${e.message}); set emmy.emmycPath.`);
  });
}

function activate(context) {
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (!e.affectsConfiguration('emmy.emmycPath')) return;
      if (client) await client.stop();
      await start();
    }),
  );
  return start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
