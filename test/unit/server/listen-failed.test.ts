import { createServer } from "node:net";
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
