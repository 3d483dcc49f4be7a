// How the extension starts the language server, kept free of the `vscode` module so that it
// can be tested with plain node (editors/test/editors.test.js).
'use strict';

/**
 * The command that starts venusc's language server: the `venus.server.path` setting (default
 * `venusc`, looked up on PATH) with `lsp` and then any `venus.server.extraArgs`.
 * @param {(key: string, fallback: any) => any} get  reads a `venus.*` setting
 * @returns {{ command: string, args: string[] }}
 */
function serverCommand(get) {
  const path = get('server.path', 'venusc');
  const command = typeof path === 'string' && path.trim() !== '' ? path.trim() : 'venusc';
  const extra = get('server.extraArgs', []);
  const args = Array.isArray(extra) ? extra.filter((a) => typeof a === 'string') : [];
  return { command, args: ['lsp', ...args] };
}

module.exports = { serverCommand };
