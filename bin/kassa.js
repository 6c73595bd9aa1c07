#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=8 --disable-warning=ExperimentalWarning
// Entry point of the installed `kassa` command: runs the TypeScript CLI directly (Node 24 strips types).
import '../src/cli/main.ts';
