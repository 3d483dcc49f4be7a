// The VS Code client for `.venus` files: starts `venusc lsp` (the language server speaks LSP
// over stdio) and hands it every `.venus` document. Highlighting does not need the server: it
// comes from `syntaxes/venus.tmLanguage.json`, so the extension is useful without venusc.
'use strict';

const vscode = require('vscode');
const { serverCommand } = require('./server');

/** @type {import('vscode-languageclient/node').LanguageClient | undefined} */
let client;

/** @param {vscode.ExtensionContext} context */
async function activate(context) {
  const config = vscode.workspace.getConfiguration('venus');
  if (!config.get('server.enable', true)) {
    return;
  }
  // Loaded lazily so that a packaging problem with the client library leaves highlighting,
  // brackets and comments working.
  const { LanguageClient, TransportKind } = require('vscode-languageclient/node');
  const { command, args } = serverCommand((key, fallback) => config.get(key, fallback));
  const serverOptions = {
    run: { command, args, transport: TransportKind.stdio },
    debug: { command, args, transport: TransportKind.stdio },
  };
  const clientOptions = {
    documentSelector: [{ scheme: 'file', language: 'venus' }, { scheme: 'untitled', language: 'venus' }],
    synchronize: {
      // `use "other.venus"` makes a file depend on others: tell the server when any changes.
      fileEvents: vscode.workspace.createFileSystemWatcher('**/*.venus'),
    },
    outputChannelName: 'venusc',
  };
  client = new LanguageClient('venus', 'venusc language server', serverOptions, clientOptions);
  try {
    await client.start();
  } catch (err) {
    vscode.window.showWarningMessage(
      `venusc language server did not start (${command} ${args.join(' ')}): ${err.message}. ` +
        'Set "venus.server.path" to the venusc binary, or "venus.server.enable" to false.'
    );
  }
  context.subscriptions.push({ dispose: () => client && client.stop() });
  context.subscriptions.push(
    vscode.commands.registerCommand('venus.restartServer', async () => {
      if (client) {
        await client.restart();
      }
    })
  );
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
