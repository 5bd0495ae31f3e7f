import type { HarnessTool } from "./define-tool.ts";

/** Why an MCP toolset was refused or could not be used (ADR 0050). Branch on `code`. */
export type McpToolsErrorCode =
  /** `mcpTools(...)` was given options it cannot use (the message names the option). */
  | "invalid_mcp_options"
  /** A stdio server (`command`) was declared in a Lambda function: there is no process to keep beside it. */
  | "mcp_stdio_on_lambda"
  /** The server could not be reached, or did not list its tools, when the attempt started. */
  | "mcp_server_unavailable"
  /** Two tools of the setup (MCP or local) have the same name: give a toolset a `prefix`. */
  | "mcp_tool_name_collision";

/** An MCP toolset was refused or could not be used; `code` says why. */
export class McpToolsError extends Error {
  readonly code: McpToolsErrorCode;
  constructor(code: McpToolsErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = "McpToolsError";
  }
}

/** What every MCP toolset takes besides where its server is. */
export interface McpToolsCommonOptions {
  /** Only these of the server's tools (by the server's names); absent: all of them. */
  include?: readonly string[];
  /** None of these (by the server's names), after `include`. */
  exclude?: readonly string[];
  /** Put before every tool's name as the model sees it (`github_` → `github_create_issue`), so two servers' tools cannot collide. */
  prefix?: string;
  /**
   * Which calls wait for a person's decision first (ADR 0025): `true` for all, a list of the
   * server's tool names, or a function of the arguments and where the call is made (its
   * `toolName` is the prefixed name); one that throws refuses the call.
   */
  needsApproval?: boolean | readonly string[] | Extract<HarnessTool["needsApproval"], (...args: any[]) => unknown>;
  /** How long such a call waits for its decision (default: the setup's `approvalTimeoutMs`). */
  approvalTimeoutMs?: number;
  /** Bound on connecting and listing the tools at attempt start (default 30 s); past it the attempt fails and is retried. */
  connectTimeoutMs?: number;
}

/** A server reached over streamable HTTP. */
export interface McpHttpServerOptions extends McpToolsCommonOptions {
  /** The server's MCP endpoint, e.g. `https://mcp.example.com/mcp`. */
  url: string | URL;
  /** Sent with every request (an `Authorization` header, say). */
  headers?: Record<string, string>;
}

/** A server the harness starts as a child process and talks to over stdio (embedded shape only). */
export interface McpStdioServerOptions extends McpToolsCommonOptions {
  command: string;
  args?: readonly string[];
  /** The child's environment (default: the SDK's safe subset of this process's: PATH, HOME, ...). */
  env?: Record<string, string>;
  cwd?: string;
}

/** Where an MCP toolset's server is, and which of its tools the agent gets. */
export type McpToolsOptions = McpHttpServerOptions | McpStdioServerOptions;

const TOOLSET = Symbol.for("resolute-harness.mcp-toolset");

/**
 * The global (a `Symbol.for` key) where `mcpTools` notes each stdio server it was asked for, so the
 * construct's synth, which imports the agents module in a child process to read its names, can
 * refuse one declared at module level before it is deployed to Lambda (`src/cdk/agent-names.ts`).
 */
export const STDIO_DECLARED_KEY = "resolute-harness.mcp-stdio-declared";

/**
 * The tools of one MCP server, as an agent setup lists them (`tools: [mcpTools({...}), clock]`).
 * Declaring one does nothing: each attempt connects at its start, reads the tool list once, runs
 * the calls of that attempt over the connection and closes it at its end.
 */
export interface McpToolset {
  readonly [TOOLSET]: true;
  /** The server as errors and logs name it: its URL, or its command line. */
  readonly label: string;
  readonly options: Readonly<McpToolsOptions>;
}

/** True for a toolset made by {@link mcpTools}. */
export function isMcpToolset(value: unknown): value is McpToolset {
  return typeof value === "object" && value !== null && (value as { [TOOLSET]?: unknown })[TOOLSET] === true;
}

/** True in a Lambda function (Lambda sets this variable in every function's environment). */
function onLambda(): boolean {
  return (process.env.AWS_LAMBDA_FUNCTION_NAME ?? "") !== "";
}

/**
 * An MCP server's tools for an agent's setup: `mcpTools({ url, headers? })` over streamable
 * HTTP, or `mcpTools({ command, args, env })` over stdio (a child process of the worker: the
 * embedded shape only; in a Lambda function it throws `mcp_stdio_on_lambda`). Each call of one of
 * its tools is a tool call like any other: recorded before and after, never run twice after a
 * crash, subject to `needsApproval`, interrupted by a cancel (the server is sent MCP's
 * cancellation). The tool list is read at the start of each attempt; a server that cannot be
 * reached then fails the attempt, which is retried with backoff (ADR 0050).
 *
 * @throws {McpToolsError} `invalid_mcp_options` for unusable options, `mcp_stdio_on_lambda`
 */
export function mcpTools(options: McpToolsOptions): McpToolset {
  const o = options as Partial<McpHttpServerOptions & McpStdioServerOptions> | null;
  const refuse = (what: string) => new McpToolsError("invalid_mcp_options", `mcpTools: ${what}`);
  if (o === null || typeof o !== "object") throw refuse("expected an options object ({url} or {command})");
  const hasUrl = o.url !== undefined;
  const hasCommand = o.command !== undefined;
  if (hasUrl === hasCommand) throw refuse("give either url (streamable HTTP) or command (stdio), not both or neither");
  for (const list of ["include", "exclude"] as const) {
    const v = o[list];
    if (v !== undefined && (!Array.isArray(v) || v.some((n) => typeof n !== "string" || n === ""))) throw refuse(`${list} must be an array of tool names`);
  }
  if (o.prefix !== undefined && typeof o.prefix !== "string") throw refuse("prefix must be a string");
  const approval = o.needsApproval;
  if (approval !== undefined && typeof approval !== "boolean" && typeof approval !== "function" && !(Array.isArray(approval) && approval.every((n) => typeof n === "string"))) {
    throw refuse("needsApproval must be a boolean, an array of tool names or a function");
  }
  for (const knob of ["approvalTimeoutMs", "connectTimeoutMs"] as const) {
    const v = o[knob];
    if (v !== undefined && (typeof v !== "number" || !Number.isFinite(v) || v < 0)) throw refuse(`${knob} must be a finite number >= 0`);
  }
  let label: string;
  if (hasUrl) {
    let url: URL;
    try {
      url = new URL(String(o.url));
    } catch {
      throw refuse(`url is not a URL: ${String(o.url)}`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw refuse(`url must be http: or https:, got ${url.protocol}`);
    if (o.headers !== undefined && (o.headers === null || typeof o.headers !== "object" || Object.values(o.headers).some((v) => typeof v !== "string"))) {
      throw refuse("headers must be an object of strings");
    }
    // Never the query or credentials: a token may ride in either, and the label reaches logs.
    label = `${url.origin}${url.pathname}`;
  } else {
    if (typeof o.command !== "string" || o.command === "") throw refuse("command must be a non-empty string");
    if (o.args !== undefined && (!Array.isArray(o.args) || o.args.some((a) => typeof a !== "string"))) throw refuse("args must be an array of strings");
    if (o.env !== undefined && (o.env === null || typeof o.env !== "object" || Object.values(o.env).some((v) => typeof v !== "string"))) {
      throw refuse("env must be an object of strings");
    }
    label = [o.command, ...(o.args ?? [])].join(" ");
    // Each command line once: an initializer that declares its toolset on every attempt adds nothing.
    const declared = ((globalThis as { [key: symbol]: string[] | undefined })[Symbol.for(STDIO_DECLARED_KEY)] ??= []);
    if (!declared.includes(label)) declared.push(label);
    if (onLambda()) {
      throw new McpToolsError(
        "mcp_stdio_on_lambda",
        `mcpTools: a stdio MCP server (${label}) cannot run in a Lambda function: there is no process to keep beside the worker between invocations. Serve it over streamable HTTP and give mcpTools its url.`,
      );
    }
  }
  return { [TOOLSET]: true, label, options: { ...options } } as McpToolset;
}

/**
 * Whether a call of the server's tool `name` waits for approval, as the harness tool says it:
 * the toolset's `needsApproval` resolved for that tool.
 */
export function approvalOf(options: McpToolsCommonOptions, name: string): HarnessTool["needsApproval"] {
  const v = options.needsApproval;
  if (Array.isArray(v)) return v.includes(name);
  return v as HarnessTool["needsApproval"];
}

/** Whether the server's tool `name` is one the toolset keeps (`include`, then `exclude`). */
export function keepsTool(options: McpToolsCommonOptions, name: string): boolean {
  if (options.include !== undefined && !options.include.includes(name)) return false;
  return options.exclude === undefined || !options.exclude.includes(name);
}
