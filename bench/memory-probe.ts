/**
 * Preloaded into a benchmarked server (`--expose-gc --import bench/memory-probe.ts`) to explain
 * its RSS: on SIGUSR2 it runs a full GC and prints one `BENCH_MEMORY <process.memoryUsage()>` line
 * on stderr. Nothing else changes in the server.
 */
process.on("SIGUSR2", () => {
  (globalThis as { gc?: () => void }).gc?.();
  process.stderr.write(`BENCH_MEMORY ${JSON.stringify(process.memoryUsage())}\n`);
});
