/**
 * The server could not listen: `port_in_use` (EADDRINUSE: another process listens on that port),
 * or `listen_failed` (no permission for a low port, an address this machine does not have). The
 * message names the port and address; `errno` is Node's code (EADDRINUSE, EACCES, …).
 *
 * Left uncaught (`await serve(…)` in a program of one's own), Node prints it as one line saying
 * what to do ({@link listenFailureHint}), not a stack trace: a busy port is the user's situation,
 * not the harness's bug, so the error carries no frames, no enumerable fields and no `cause`
 * (Node would print each).
 */
export class ServerListenFailed extends Error {
  declare readonly code: "port_in_use" | "listen_failed";
  declare readonly port: number;
  declare readonly hostname: string;
  /** Node's error code (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`, …), when it gave one. */
  declare readonly errno: string | undefined;
  constructor(port: number, hostname: string, cause: unknown) {
    const errno = (cause as { code?: unknown } | undefined)?.code;
    const inUse = errno === "EADDRINUSE";
    const message = inUse
      ? `port ${port} on ${hostname} is already in use (another server, or an earlier run of this one, listens there)`
      : errno === "EACCES"
        ? `no permission to listen on port ${port} of ${hostname}`
        : errno === "EADDRNOTAVAIL"
          ? `cannot listen on ${hostname}: not an address of this machine`
          : `cannot listen on ${hostname}:${port}: ${cause instanceof Error ? cause.message : String(cause)}`;
    // No frames captured: Node would print them, and the line of ours that made the error.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = "ServerListenFailed";
    const hidden = (value: unknown) => ({ value, enumerable: false, writable: false, configurable: true });
    Object.defineProperties(this, {
      code: hidden(inUse ? "port_in_use" : "listen_failed"),
      port: hidden(port),
      hostname: hidden(hostname),
      errno: hidden(typeof errno === "string" ? errno : undefined),
    });
    Object.defineProperty(this, "stack", { value: `${this.name}: ${hint(this)}`, enumerable: false, writable: true, configurable: true });
  }
}

function hint(err: ServerListenFailed): string {
  if (err.code === "port_in_use") return `${err.message}: stop it, or start with PORT=<another port> (PORT=0 picks a free one)`;
  return `${err.message}: start with another PORT or HOST`;
}

/**
 * The one line an entry point that reads `PORT` prints for a server that cannot listen: what
 * happened and what to do (`PORT=`); `undefined` for any other error.
 */
export function listenFailureHint(err: unknown): string | undefined {
  return err instanceof ServerListenFailed ? hint(err) : undefined;
}
