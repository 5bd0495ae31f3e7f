/**
 * The server could not listen: `port_in_use` (EADDRINUSE: another process listens on that port),
 * or `listen_failed` (no permission for a low port, an address this machine does not have). The
 * message names the port and address; `cause` is Node's error.
 */
export class ServerListenFailed extends Error {
  readonly code: "port_in_use" | "listen_failed";
  readonly port: number;
  readonly hostname: string;
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
    super(message, { cause });
    this.name = "ServerListenFailed";
    this.code = inUse ? "port_in_use" : "listen_failed";
    this.port = port;
    this.hostname = hostname;
  }
}

/**
 * The one line an entry point that reads `PORT` prints for a server that cannot listen: what
 * happened and what to do (`PORT=`); `undefined` for any other error.
 */
export function listenFailureHint(err: unknown): string | undefined {
  if (!(err instanceof ServerListenFailed)) return undefined;
  if (err.code === "port_in_use") return `${err.message}: stop it, or start with PORT=<another port> (PORT=0 picks a free one)`;
  return `${err.message}: start with another PORT or HOST`;
}
