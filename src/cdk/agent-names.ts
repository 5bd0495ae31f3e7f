/**
 * The agent names of an agents module, for the functions that know agents by name only
 * (`HARNESS_AGENT_NAMES`), and its `subagentLimits` (`HARNESS_SUBAGENT_LIMITS`, ADR 0023): given,
 * or discovered by importing the module in a child Node process (Node 22 strips TypeScript
 * types), so the synthesizing process never evaluates user code and its provider SDKs. Imports
 * only Node built-ins, the id rules, the subagent limits' check and the key under which
 * `mcpTools` notes stdio servers (a constant).
 */
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { resolveLimits } from "../engine/subagents.ts";
import { type SubagentLimits } from "../agent/subagent-policy.ts";
import { ID_RULES } from "../protocol/id-rules.ts";
import { STDIO_DECLARED_KEY } from "../agent/mcp-tools.ts";

const MARKER = "__harness_agent_names__=";
const FAILED = "__harness_agent_names_error__=";
// Prints the names (or the error) on a marked line (the module may log too), then exits (the
// module may hold handles open).
const DISCOVER = `
try {
  const mod = await import(process.argv[1]);
  const agents = mod.agents;
  if (agents === null || typeof agents !== "object") throw new Error("the module exports no \`agents\` object");
  const stdioMcp = globalThis[Symbol.for(${JSON.stringify(STDIO_DECLARED_KEY)})] ?? [];
  process.stdout.write("\\n${MARKER}" + JSON.stringify({ names: Object.keys(agents), subagentLimits: mod.subagentLimits, stdioMcp }) + "\\n");
  process.exit(0);
} catch (err) {
  const text = err instanceof Error ? (err.code ? err.code + " " : "") + err.name + ": " + err.message : String(err);
  process.stdout.write("\\n${FAILED}" + JSON.stringify(text) + "\\n");
  process.exit(1);
}`;

/** What discovery reads from an agents module. */
export interface DiscoveredAgentsModule {
  names: string[];
  /** The module's `subagentLimits` with the defaults applied, when it exports any. */
  subagentLimits?: Required<SubagentLimits>;
  /** Stdio MCP servers the module declared as it loaded (`mcpTools({command})` at module level), by command line. */
  stdioMcpServers?: string[];
}

const discovered = new Map<string, DiscoveredAgentsModule>();

/** Thrown when the agent names could not be discovered (the message says what to do). */
export class AgentNamesDiscoveryError extends Error {
  constructor(agentsEntry: string, reason: string) {
    super(
      `Harness: could not discover the agent names by importing ${agentsEntry} in a child Node process ` +
        `(${reason}). Pass them as the \`agentNames\` prop instead (e.g. agentNames: ["assistant"]).`,
    );
    this.name = "AgentNamesDiscoveryError";
  }
}

/**
 * The keys of the `agents` export of `agentsEntry`, read by importing it in a child process of
 * this Node binary (`process.execPath`, ≥ 22.18 for TypeScript). Memoized per file and mtime.
 * @throws {AgentNamesDiscoveryError} when the import fails, times out or exports no valid names.
 */
export function discoverAgentNames(agentsEntry: string, options: { timeoutMs?: number } = {}): string[] {
  return discoverAgentsModule(agentsEntry, options).names;
}

/**
 * The agent names and the checked `subagentLimits` of `agentsEntry` (see {@link discoverAgentNames}).
 * @throws {AgentNamesDiscoveryError} as {@link discoverAgentNames}, and for invalid limits
 */
export function discoverAgentsModule(agentsEntry: string, options: { timeoutMs?: number } = {}): DiscoveredAgentsModule {
  let key = agentsEntry;
  try {
    key = `${agentsEntry}@${statSync(agentsEntry).mtimeMs}`;
  } catch {
    throw new AgentNamesDiscoveryError(agentsEntry, "the file does not exist");
  }
  const known = discovered.get(key);
  if (known) return copyOf(known);
  const run = spawnSync(
    process.execPath,
    ["--disable-warning=ExperimentalWarning", "--input-type=module", "--eval", DISCOVER, pathToFileURL(agentsEntry).href],
    { encoding: "utf8", timeout: options.timeoutMs ?? 60_000, maxBuffer: 16 * 1024 * 1024 },
  );
  if (run.error) throw new AgentNamesDiscoveryError(agentsEntry, run.error.message);
  // The last marked line (a loop rather than `findLast`, ES2023: the construct's sources stay
  // within what an app compiled for ES2022 type-checks).
  const marked = (marker: string): string | undefined => {
    const lines = run.stdout.split("\n");
    for (let i = lines.length - 1; i >= 0; i--) if (lines[i]!.startsWith(marker)) return lines[i]!.slice(marker.length);
    return undefined;
  };
  const failed = marked(FAILED);
  if (failed !== undefined) throw new AgentNamesDiscoveryError(agentsEntry, shorten(JSON.parse(failed) as string));
  if (run.status !== 0) {
    throw new AgentNamesDiscoveryError(agentsEntry, `node ${process.version} exited with ${run.status ?? run.signal}: ${shorten(run.stderr)}`);
  }
  const line = marked(MARKER);
  if (line === undefined) throw new AgentNamesDiscoveryError(agentsEntry, "the child printed no names");
  let found: DiscoveredAgentsModule;
  try {
    const read = JSON.parse(line) as { names: string[]; subagentLimits?: SubagentLimits; stdioMcp?: string[] };
    found = { names: checkAgentNames(read.names) };
    if (read.subagentLimits !== undefined) found.subagentLimits = resolveLimits(read.subagentLimits);
    if (Array.isArray(read.stdioMcp) && read.stdioMcp.length > 0) found.stdioMcpServers = read.stdioMcp.map(String);
  } catch (err) {
    throw new AgentNamesDiscoveryError(agentsEntry, err instanceof Error ? err.message : String(err));
  }
  discovered.set(key, found);
  return copyOf(found);
}

function copyOf(found: DiscoveredAgentsModule): DiscoveredAgentsModule {
  return { ...found, names: [...found.names] };
}

/**
 * Checks agent names: at least one, each a valid agent name (`ID_RULES.agent`), no duplicates.
 * @returns the names, unchanged
 */
export function checkAgentNames(names: readonly string[]): string[] {
  if (!Array.isArray(names) || names.length === 0) throw new Error("no agent names (the agents record is empty)");
  for (const name of names) {
    if (typeof name !== "string" || !ID_RULES.agent.test(name)) throw new Error(`invalid agent name ${JSON.stringify(name)}`);
  }
  if (new Set(names).size !== names.length) throw new Error(`duplicate agent names in ${JSON.stringify(names)}`);
  return [...names];
}

/** One line of at most 500 characters. */
function shorten(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 500 ? `${line.slice(0, 500)}…` : line || "no output";
}
