/**
 * CloudFormation's intrinsic functions, resolved against the local cloud's resources: what a
 * template's `Ref`, `Fn::GetAtt`, `Fn::Join`, `Fn::Sub`, `Fn::Select` and `Fn::Split` become once
 * each logical id has a local name, URL and ARN. A reference the local cloud cannot give a value
 * (an import, a condition, a resource it does not create) throws {@link UnresolvableReference},
 * so the caller lists it instead of passing a wrong value on.
 */

/** What one logical id resolves to: its `Ref` and its attributes (`Arn`, `QueueName`, …). */
export interface LocalResource {
  ref: string;
  attributes: Record<string, string>;
}

/** The context intrinsics resolve in. */
export interface ResolveContext {
  region: string;
  account: string;
  stackName: string;
  resources: ReadonlyMap<string, LocalResource>;
  /** Template parameters' values (their defaults, unless given). */
  parameters?: Readonly<Record<string, string>>;
}

/** A value the local cloud has no stand-in for (names the intrinsic). */
export class UnresolvableReference extends Error {
  readonly code = "unresolvable_reference";
  constructor(what: string) {
    super(`cannot resolve ${what} locally`);
    this.name = "UnresolvableReference";
  }
}

/** `AWS::NoValue`: the property is left out. */
const NO_VALUE = Symbol("AWS::NoValue");

function pseudo(name: string, ctx: ResolveContext): string | typeof NO_VALUE | undefined {
  switch (name) {
    case "AWS::Region":
      return ctx.region;
    case "AWS::AccountId":
      return ctx.account;
    case "AWS::Partition":
      return "aws";
    case "AWS::URLSuffix":
      return "amazonaws.com";
    case "AWS::StackName":
      return ctx.stackName;
    case "AWS::StackId":
      return `arn:aws:cloudformation:${ctx.region}:${ctx.account}:stack/${ctx.stackName}/local`;
    case "AWS::NoValue":
      return NO_VALUE;
    default:
      return undefined;
  }
}

function ref(name: string, ctx: ResolveContext): string | typeof NO_VALUE {
  const p = pseudo(name, ctx);
  if (p !== undefined) return p;
  const param = ctx.parameters?.[name];
  if (param !== undefined) return param;
  const resource = ctx.resources.get(name);
  if (resource) return resource.ref;
  throw new UnresolvableReference(`Ref ${name}`);
}

function getAtt(id: string, attribute: string, ctx: ResolveContext): string {
  const value = ctx.resources.get(id)?.attributes[attribute];
  if (value === undefined) throw new UnresolvableReference(`Fn::GetAtt ${id}.${attribute}`);
  return value;
}

function asString(value: unknown, where: string): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  throw new UnresolvableReference(`${where} of a non-string`);
}

/** Resolves every intrinsic in `value` (recursively); `AWS::NoValue` drops the property. */
export function resolveIntrinsics(value: unknown, ctx: ResolveContext): unknown {
  const out = resolve(value, ctx);
  return out === NO_VALUE ? undefined : out;
}

function resolve(value: unknown, ctx: ResolveContext): unknown {
  if (Array.isArray(value)) return value.map((v) => resolve(v, ctx)).filter((v) => v !== NO_VALUE);
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 1) {
    const [key, arg] = entries[0]!;
    switch (key) {
      case "Ref":
        return ref(asString(arg, "Ref"), ctx);
      case "Fn::GetAtt": {
        const [id, ...attr] = Array.isArray(arg) ? (arg as string[]) : String(arg).split(".");
        return getAtt(String(id), attr.join("."), ctx);
      }
      case "Fn::Join": {
        const [sep, parts] = arg as [string, unknown];
        const list = resolve(parts, ctx);
        if (!Array.isArray(list)) throw new UnresolvableReference("Fn::Join of a non-list");
        return list.map((p) => asString(p, "Fn::Join")).join(sep);
      }
      case "Fn::Select": {
        const [index, list] = arg as [unknown, unknown];
        const items = resolve(list, ctx);
        if (!Array.isArray(items)) throw new UnresolvableReference("Fn::Select of a non-list");
        return items[Number(resolve(index, ctx))];
      }
      case "Fn::Split": {
        const [sep, source] = arg as [string, unknown];
        return asString(resolve(source, ctx), "Fn::Split").split(sep);
      }
      case "Fn::Sub":
        return sub(arg, ctx);
      case "Fn::Base64":
        return Buffer.from(asString(resolve(arg, ctx), "Fn::Base64")).toString("base64");
      case "Fn::If":
      case "Fn::ImportValue":
      case "Fn::FindInMap":
      case "Fn::GetAZs":
      case "Fn::Cidr":
        throw new UnresolvableReference(key);
    }
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries) {
    const r = resolve(v, ctx);
    if (r !== NO_VALUE) out[k] = r;
  }
  return out;
}

function sub(arg: unknown, ctx: ResolveContext): string {
  const [text, vars] = Array.isArray(arg) ? (arg as [string, Record<string, unknown>]) : [String(arg), {}];
  return text.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
    if (name.startsWith("!")) return `\${${name.slice(1)}}`;
    if (vars && name in vars) return asString(resolve(vars[name], ctx), `Fn::Sub \${${name}}`);
    if (name.includes(".") && !name.startsWith("AWS::")) {
      const [id, ...attr] = name.split(".");
      return getAtt(id!, attr.join("."), ctx);
    }
    const r = ref(name, ctx);
    return r === NO_VALUE ? "" : r;
  });
}
