#!/usr/bin/env node
// Entry point of the installed `kassa` command: runs the TypeScript CLI directly (Node 24 strips types).
import '../src/cli/main.ts';
