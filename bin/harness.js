#!/usr/bin/env node
// The `harness` bin. A file of its own outside dist/ so that npm finds it when it reads
// package.json, before prepack builds dist/ (npm drops a bin whose file is missing then).
import "../dist/cli/main.js";
