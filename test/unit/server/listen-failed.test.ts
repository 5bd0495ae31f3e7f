import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listenFailureHint, ServerListenFailed } from "../../../src/server/listen-failed.ts";
import { checkPortFree } from "../../../src/server/port-check.ts";
import { serve } from "../../../src/server/server.ts";
import { createRuntime } from "../../../src/runtime/runtime.ts";
import { localModel } from "../../../src/agent/local-model.ts";
import { createMemoryStore } from "../../../src/memory/index.ts";

describe("serve on a port another process holds", () => {
  it("rejects with ServerListenFailed port_in_use naming the port; checkPortFree says the same before anything starts", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const { port } = holder.address() as { port: number };
    const runtime = createRuntime({ agents: { assistant: { initialize: () => localModel() } }, store: createMemoryStore() });
    await runtime.start();
    try {
      const err = await serve(runtime, { port }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ServerListenFailed);
      expect(err).toMatchObject({ code: "port_in_use", port, hostname: "127.0.0.1" });
      expect((err as Error).message).toBe(`port ${port} on 127.0.0.1 is already in use (another server, or an earlier run of this one, listens there)`);
      expect(listenFailureHint(err)).toBe(`${(err as Error).message}: stop it, or start with PORT=<another port> (PORT=0 picks a free one)`);
      expect(listenFailureHint(new Error("other"))).toBeUndefined();

      await expect(checkPortFree(port, "127.0.0.1")).rejects.toMatchObject({ code: "port_in_use", port });
      await expect(checkPortFree(0, "127.0.0.1")).resolves.toBeUndefined();
    } finally {
      await runtime.close();
      await new Promise((resolve) => holder.close(resolve));
    }
    // Released: the same port is free again, and serve listens on it.
    await expect(checkPortFree(port, "127.0.0.1")).resolves.toBeUndefined();
  });
});

describe("serve on a busy port, left uncaught in a program of one's own (issue 37)", () => {
  it("Node prints one line saying what to do: no stack trace, no fields, no cause", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const { port } = holder.address() as { port: number };
    const dir = mkdtempSync(join(tmpdir(), "harness-busy-"));
    const src = (path: string) => JSON.stringify(join(import.meta.dirname, "../../../src", path));
    writeFileSync(
      join(dir, "main.ts"),
      `import { createRuntime } from ${src("runtime/runtime.ts")};
import { localModel } from ${src("agent/local-model.ts")};
import { createMemoryStore } from ${src("memory/index.ts")};
import { serve } from ${src("server/server.ts")};
const runtime = createRuntime({ agents: { assistant: { initialize: () => localModel() } }, store: createMemoryStore() });
await serve(runtime, { port: ${port} });
`,
    );
    try {
      const run = spawnSync(process.execPath, ["--disable-warning=ExperimentalWarning", join(dir, "main.ts")], { encoding: "utf8", timeout: 60_000 });
      expect(run.status).toBe(1);
      const hint = `port ${port} on 127.0.0.1 is already in use (another server, or an earlier run of this one, listens there): stop it, or start with PORT=<another port> (PORT=0 picks a free one)`;
      expect(run.stderr).toContain(`ServerListenFailed: ${hint}`);
      expect(run.stderr).not.toMatch(/\n\s+at |\[cause\]|code: |EADDRINUSE/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});
