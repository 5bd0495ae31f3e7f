import { createServer } from "node:net";
import { ServerListenFailed } from "./listen-failed.ts";

/**
 * Checks that `port` on `hostname` can be listened on, by listening and closing at once, so a
 * command that starts slow things first (emulators, a child process) can say "port in use" before
 * it starts them. Port 0 always passes.
 * @throws {ServerListenFailed} as `serve` would
 */
export async function checkPortFree(port: number, hostname: string): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once("error", (err) => reject(new ServerListenFailed(port, hostname, err)));
    probe.listen({ port, host: hostname, exclusive: true }, () => probe.close(() => resolve()));
  });
}
