// Starts `sfz lsp` for .sfz files. Everything else (diagnostics, hover, definitions, completion,
// formatting) is the server's.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate() {
  const command = vscode.workspace.getConfiguration("sfz").get("path") || "sfz";
  client = new LanguageClient(
    "sfz",
    "sfz",
    { command, args: ["lsp"] },
    { documentSelector: [{ scheme: "file", language: "sfz" }] },
  );
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
