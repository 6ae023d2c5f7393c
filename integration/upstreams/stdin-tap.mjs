// stdin-tap.mjs, preloaded into a stdio MCP server
// (node --import file:///…/stdin-tap.mjs server.js), appends every chunk
// the server reads on stdin to the file STDIN_TAP_FILE names, just before
// the server gets it, so that a test can count the messages that reached
// the child (stdio_resume_test.go). It changes nothing the server does:
// it wraps the emit of process.stdin's 'data' events only (it neither
// reads stdin nor adds a listener).
import { appendFileSync } from 'node:fs';

const file = process.env.STDIN_TAP_FILE;
if (!file) throw new Error('stdin-tap.mjs: STDIN_TAP_FILE is not set');
const emit = process.stdin.emit;
process.stdin.emit = function (event, ...args) {
  if (event === 'data') appendFileSync(file, args[0]);
  return emit.call(this, event, ...args);
};
