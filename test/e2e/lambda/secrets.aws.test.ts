/**
 * A secret by reference end to end (issue 24): the http function of the local cloud, given its
 * bearer token only as an SSM SecureString reference (moto's server), refuses requests without it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { HARNESS_ENV } from "../../../src/lambda/env.ts";
import { type Moto, motoAvailable, startMoto } from "../../support/moto.ts";
import { useLocalCloud } from "../../support/local-cloud-suite.ts";

if (!motoAvailable) console.warn("secrets tests skipped: python3 -m moto.server is not available on this machine");

let moto: Moto;
beforeAll(async () => {
  if (motoAvailable) moto = await startMoto();
}, 60_000);
afterAll(async () => {
  await moto?.stop();
});

let seq = 0;

describe.skipIf(!motoAvailable)("the http function with its bearer token as a SecureString reference (local cloud)", () => {
  const parameter = `/harness/bearer-${Date.now()}`;
  const suite = useLocalCloud({ agentsModule: fileURLToPath(new URL("../../support/local-cloud-fixtures/agents.ts", import.meta.url)), sweeperRateMs: false });

  it("refuses a request without the token and admits one with it; the token is nowhere in the function's environment", async () => {
    await moto.call("AmazonSSM.PutParameter", { Name: parameter, Value: "s3cret-bearer", Type: "SecureString" });
    const env = {
      [HARNESS_ENV.urlAuth]: "NONE",
      HARNESS_ALLOW_UNAUTHENTICATED: "",
      [HARNESS_ENV.secrets]: JSON.stringify({ HARNESS_BEARER_TOKEN: { ssm: parameter } }),
      AWS_ENDPOINT_URL_SSM: moto.url,
    };
    expect(JSON.stringify(env)).not.toContain("s3cret-bearer");
    const http = await suite.cloud.extraFunction("http", env);
    const post = (headers: Record<string, string>) =>
      fetch(`${http.url}/agents/assistant/secret-${seq++}`, { method: "POST", headers, body: JSON.stringify({ kind: "user", body: "hello" }) });
    const refused = await post({});
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: "unauthorized" });
    expect((await post({ authorization: "Bearer wrong" })).status).toBe(401);
    expect((await post({ authorization: "Bearer s3cret-bearer" })).status).toBe(202);
  });
});
