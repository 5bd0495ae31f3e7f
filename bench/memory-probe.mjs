/**
 * Preloaded into a benchmarked server (`--expose-gc --import ./bench/memory-probe.mjs`) to explain
 * its RSS: on SIGUSR2 it runs a full GC and prints one `BENCH_MEMORY <process.memoryUsage()>` line
 * on stderr. Nothing else changes in the server. JavaScript, not TypeScript: preloading a `.ts`
 * file would load Node's TypeScript stripper into a server that runs compiled JavaScript
 * (`npm start`), and add its memory to what is measured.
 */
process.on("SIGUSR2", () => {
  globalThis.gc?.();
  process.stderr.write(`BENCH_MEMORY ${JSON.stringify(process.memoryUsage())}\n`);
});
