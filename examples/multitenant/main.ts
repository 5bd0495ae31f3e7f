/**
 * The multitenant example (`npm run example -- multitenant`): tenant = instance, sessions as
 * independent ordered queues, on http://127.0.0.1:8489. Who is calling comes from a signed token
 * whose `tenant` claim names the caller's tenant (ADR 0043); the example runs its own dev issuer
 * (`dev-issuer.ts`: `POST /dev/token`) and verifies its tokens as it would a real issuer's. See
 * README.md for the runbook and the load script. Environment: PORT (8489), HOST (loopback only),
 * DATA_DIR (./harness-data/multitenant), LEASE_MS, LOG_LEVEL, REPLY_MS (700): how long each
 * keyless answer takes, HARNESS_BEARER_TOKEN: an operator token (reaches every tenant).
 */
import { anyOf, bearerTokenAuthenticator } from "../../src/auth/authenticate.ts";
import { AUTH_ENV } from "../../src/auth/auth-from-env.ts";
import { jwtAuthenticator } from "../../src/auth/jwt-authenticator.ts";
import { isLoopbackHost } from "../../src/http/origin-guard.ts";
import { exampleFail, exampleSettings } from "../shared/settings.ts";
import { startExample } from "../shared/start-example.ts";
import { agents, CONCIERGE } from "./agents.ts";
import { createDevIssuer, DEV_AUDIENCE } from "./dev-issuer.ts";
import { isTenant, tenantPolicy } from "./tenant-auth.ts";

const settings = exampleSettings("multitenant", 8489);
if (!isLoopbackHost(settings.hostname)) {
  exampleFail(settings.name, `HOST=${settings.hostname}: this example mints a token for anyone who asks (POST /dev/token), so it listens on loopback only`);
}
for (const name of [AUTH_ENV.issuer, AUTH_ENV.audience, AUTH_ENV.jwksUrl, AUTH_ENV.ownerClaim]) {
  if ((process.env[name] ?? "") !== "") exampleFail(settings.name, `${name} is set, but this example issues and verifies its own tokens (see its README): unset it`);
}
const operatorTokens = (process.env[AUTH_ENV.bearerToken] ?? "").split(",").map((t) => t.trim()).filter(Boolean);
const issuer = await createDevIssuer(isTenant);

await startExample({
  settings,
  agents,
  auth: {
    // The issuer is this server: its key set is fetched from it, as from any OIDC issuer.
    authenticate: (url) => {
      const users = jwtAuthenticator({ issuer: url, audience: DEV_AUDIENCE });
      return operatorTokens.length > 0 ? anyOf(bearerTokenAuthenticator({ token: operatorTokens }), users) : users;
    },
    authorize: tenantPolicy(),
    describe: [...(operatorTokens.length > 0 ? ["operator token"] : []), "JWT from this server's dev issuer (POST /dev/token), tenant claim"],
  },
  routes: (app, _runtime, url) => issuer.mount(app, url),
  model: "local-concierge (keyless)",
  tryLines: (base) => [
    `ACME=$(curl -s ${base}/dev/token -d '{"tenant":"acme","user":"ann"}' | sed -n 's/.*"token":"\\([^"]*\\)".*/\\1/p')`,
    `curl -s '${base}/agents/${CONCIERGE}/acme?wait=true' -H "authorization: Bearer $ACME" -d '{"kind":"user","body":"where is my order?","session":"support"}'`,
    `npm run load:multitenant          # head-of-line inside a session, parallelism across sessions`,
  ],
});
