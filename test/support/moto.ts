/**
 * Moto's server (`python3 -m moto.server`) for Secrets Manager and SSM Parameter Store, the two
 * services the construct's `secrets` are read from. Moto is a Python package on the project's
 * machine image (there is no npm emulator of either service); where it is missing, `motoAvailable`
 * is false and the tests that need it say so and skip.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";

/** True when `python3 -m moto.server` can run here. */
export const motoAvailable = spawnSync("python3", ["-c", "import moto.server, flask"], { stdio: "ignore" }).status === 0;

export interface Moto {
  /** http://127.0.0.1:PORT: every service on one endpoint. */
  url: string;
  /** One JSON-protocol call (`X-Amz-Target`), unsigned (moto does not check signatures). */
  call(target: string, body: unknown): Promise<unknown>;
  stop(): Promise<void>;
}

export async function startMoto(): Promise<Moto> {
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
  const child: ChildProcess = spawn("python3", ["-m", "moto.server", "-H", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`moto.server exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/moto-api/`)).ok) break;
    } catch {
      // not up yet
    }
    if (i > 200) throw new Error("moto.server did not answer within 20 s");
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    async call(target, body) {
      const service = target.startsWith("AmazonSSM") ? "ssm" : "secretsmanager";
      const res = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/x-amz-json-1.1",
          "x-amz-target": target,
          authorization: `AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/${service}/aws4_request, SignedHeaders=host, Signature=0`,
        },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${target}: ${res.status} ${text}`);
      return JSON.parse(text);
    },
    async stop() {
      process.off("exit", killOnExit);
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once("exit", r)));
    },
  };
}
