/**
 * A local stand-in for the two calls the handlers make to read their secrets at cold start
 * (`src/lambda/secrets.ts`): SSM `GetParameter` (decrypted) and Secrets Manager
 * `GetSecretValue`, answered from values given to the local cloud (a parameter by name, a secret
 * by ARN or name). The functions reach it through the IAM gate, so a role without
 * `ssm:GetParameter` or `secretsmanager:GetSecretValue` on that reference is refused as on AWS.
 * An unknown reference answers as the services do (`ParameterNotFound`,
 * `ResourceNotFoundException`).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface SecretsStandIn {
  readonly url: string;
  /** Sets (or replaces) a value: an SSM parameter name (`/a/b`) or a secret's ARN or name. */
  set(reference: string, value: string): void;
  close(): Promise<void>;
}

export async function startSecretsStandIn(initial: Record<string, string>): Promise<SecretsStandIn> {
  const values = new Map(Object.entries(initial));
  // A secret's ARN ends in `-XXXXXX` (its random suffix); a reference by name finds it too.
  const secretValue = (id: string) => values.get(id) ?? [...values].find(([k]) => k.startsWith("arn:aws:secretsmanager:") && k.split(":")[6]?.replace(/-[A-Za-z0-9]{6}$/, "") === id)?.[1];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const target = String(req.headers["x-amz-target"] ?? "");
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Record<string, string>;
      const reply = (status: number, payload: unknown) => {
        res.writeHead(status, { "content-type": "application/x-amz-json-1.1" });
        res.end(JSON.stringify(payload));
      };
      if (target === "AmazonSSM.GetParameter") {
        const value = values.get(body.Name ?? "");
        if (value === undefined) return reply(400, { __type: "ParameterNotFound", message: `parameter ${body.Name} not found` });
        return reply(200, { Parameter: { Name: body.Name, Type: "SecureString", Value: value, Version: 1 } });
      }
      if (target === "secretsmanager.GetSecretValue") {
        const value = secretValue(body.SecretId ?? "");
        if (value === undefined) return reply(400, { __type: "ResourceNotFoundException", message: "Secrets Manager can't find the specified secret." });
        return reply(200, { ARN: body.SecretId, Name: body.SecretId, SecretString: value, VersionId: "local" });
      }
      reply(400, { __type: "UnknownOperationException", message: `the local stand-in answers GetParameter and GetSecretValue only, not ${target}` });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set: (reference, value) => void values.set(reference, value),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
