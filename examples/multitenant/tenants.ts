/** A tenant: one instance of the `concierge` agent, with its own prompt. */
export interface Tenant {
  name: string;
  /** How this tenant wants its customers answered. */
  style: string;
  /** The line every answer ends with. */
  signature: string;
}

/** The tenants this deployment serves (in a real one: a table or a config service). */
export const TENANTS: Record<string, Tenant> = {
  acme: { name: "Acme Corp", style: "Be formal and precise.", signature: "Acme Corp support" },
  globex: { name: "Globex", style: "Be warm and brief.", signature: "the Globex team" },
};

/** The system prompt of a tenant's concierge, built on every claim. */
export function tenantPrompt(tenant: Tenant): string {
  return `You are the concierge of ${tenant.name}. ${tenant.style} Sign every answer "${tenant.signature}".`;
}
