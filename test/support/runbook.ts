import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Runs the ```bash blocks of a markdown file exactly as written, in order, in one bash in the
 * repository's root, inside fresh user, mount, network and PID namespaces (`unshare -rmnpf`): the
 * documented ports (8484, 8486, …) are the namespace's own, `./harness-data` and `build/` are
 * bind-mounted from a temporary folder, and everything the file started dies with the namespace.
 *
 * Conventions the runner reads:
 * - `# → text` after a command: its output must contain `text`, `…` standing for anything
 *   (fragments matched in order, whitespace collapsed).
 * - Server commands (`npm start`, `npm run example -- x`, `…/examples/basic/main.ts`) run in the
 *   background until their banner says `listening on`; another server command on the same line
 *   stops the previous one first (Ctrl-C in its terminal).
 * - `<pid>` is the last server's pid (its banner's `pid:`), `<submissionId>` the last submission id
 *   any output showed, `<record id>` the first SSE record id the last stream showed.
 * - A command that follows forever (`… tail … --follow`) runs in the background, as in a second
 *   terminal, until the namespace goes.
 * - Commands that need what a test cannot have are not run, and reported: `npm install`/`npm ci`
 *   (the test's setup), `npm test` (this suite), `npx cdk deploy`, `aws …`, `npm run bench`.
 * - `<!-- runbook: skip (why) -->` on the line before a block skips it.
 */
export interface RunbookResult {
  /** Commands run, with their output. */
  ran: { command: string; output: string; code: number }[];
  /** Commands not run, and why. */
  skipped: { command: string; why: string }[];
  /** Expectations that failed. */
  failures: string[];
}

const ROOT = join(import.meta.dirname, "..", "..");
const NOT_RUN: [RegExp, string][] = [
  [/^npm (install|ci)\b/, "installing is the test's setup"],
  [/^npm test\b/, "the test suite runs this"],
  [/^npx cdk deploy\b/, "needs an AWS account"],
  [/^(URL=\$\()?aws /, "needs an AWS account"],
  [/--aws-sigv4/, "needs an AWS account"],
  [/^npm run bench\b/, "benchmarks run with npm run bench"],
];
const FOLLOW = /(^|\s)tail\s.*--follow\b/;
const SERVER = /(^|\s)(npm start|npm run example -- \S+|node_modules\/\.bin\/node .*examples\/\S+\/main\.ts)(\s|$)/;

interface Block {
  skip?: string;
  commands: { text: string; expect: string[] }[];
}

/** The bash blocks of a markdown file: commands (continuations joined) and their `# →` expectations. */
export function parseRunbook(markdown: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```bash") continue;
    let before = i - 1;
    while (before >= 0 && lines[before]!.trim() === "") before--;
    const skip = /^<!-- runbook: skip \((.*)\) -->$/.exec(lines[before] ?? "")?.[1];
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]!);
    const commands: Block["commands"] = [];
    for (let j = 0; j < body.length; j++) {
      const line = body[j]!;
      if (/^# → /.test(line)) {
        let expected = line.slice(4);
        while (j + 1 < body.length && /^#\s{2,}\S/.test(body[j + 1]!)) expected += ` ${body[++j]!.slice(1).trim()}`;
        commands.at(-1)?.expect.push(expected);
        continue;
      }
      if (line.trim() === "" || line.trimStart().startsWith("#")) continue;
      let text = line;
      while (text.endsWith("\\") && j + 1 < body.length) text = `${text}\n${body[++j]!}`;
      commands.push({ text, expect: [] });
    }
    blocks.push({ skip, commands });
  }
  return blocks;
}

/** `expected` (with `…` for anything) found in `output`, fragments in order, whitespace collapsed. */
export function matches(output: string, expected: string): boolean {
  const norm = (s: string) => s.replace(/\s+/g, " ");
  const text = norm(output);
  let at = 0;
  for (const fragment of norm(expected).split("…").map((f) => f.trim()).filter(Boolean)) {
    const found = text.indexOf(fragment, at);
    if (found < 0) return false;
    at = found + fragment.length;
  }
  return true;
}

export async function runRunbook(file: string, options: { commandTimeoutMs?: number } = {}): Promise<RunbookResult> {
  const timeoutMs = options.commandTimeoutMs ?? 90_000;
  const blocks = parseRunbook(readFileSync(join(ROOT, file), "utf8"));
  const scratch = mkdtempSync(join(tmpdir(), "runbook-"));
  mkdirSync(join(scratch, "data"));
  mkdirSync(join(scratch, "build"));
  mkdirSync(join(ROOT, "harness-data"), { recursive: true });
  mkdirSync(join(ROOT, "build"), { recursive: true });
  const shell: ChildProcessWithoutNullStreams = spawn("unshare", ["-rmnpf", "--mount-proc", "bash", "--noprofile", "--norc"], {
    cwd: ROOT,
    env: { ...process.env, MODEL: "", PORT: "", DATA_DIR: "", HARNESS_URL: "", NODE_OPTIONS: "" },
  });
  let stdout = "";
  shell.stdout.on("data", (d) => (stdout += d));
  shell.stderr.on("data", (d) => (stdout += d));
  const result: RunbookResult = { ran: [], skipped: [], failures: [] };
  let n = 0;
  let lastPid = "";
  let lastSubmission = "";
  let firstRecordId = "";
  const servers = new Map<string, string>(); // server key → the background job's pid (its process group)

  /** Runs `script` in the shell and resolves with the number it echoed last (the sentinel). */
  const exec = async (script: string, limitMs = timeoutMs): Promise<number> => {
    const id = `__RB_${++n}__`;
    shell.stdin.write(`${script}\necho "${id} $?"\n`);
    const deadline = Date.now() + limitMs;
    for (;;) {
      const m = new RegExp(`${id} (\\d+)`).exec(stdout);
      if (m) return Number(m[1]);
      if (Date.now() > deadline) throw new Error(`timed out after ${limitMs} ms: ${script}\n${whatRan()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const out = (i: number) => (existsSync(join(scratch, `out.${i}`)) ? readFileSync(join(scratch, `out.${i}`), "utf8") : "");
  // What a timed-out command and the servers before it printed (the last 2,000 characters of each).
  const whatRan = () =>
    Array.from({ length: n }, (_, k) => k + 1)
      .filter((i) => out(i) !== "")
      .map((i) => `--- out.${i}:\n${out(i).slice(-2_000)}`)
      .join("\n");

  try {
    await exec(
      `set -m; ip link set lo up; mount --bind ${scratch}/data harness-data && mount --bind ${scratch}/build build`,
    );
    for (const block of blocks) {
      if (block.skip) {
        for (const c of block.commands) result.skipped.push({ command: c.text, why: block.skip });
        continue;
      }
      for (const { text, expect } of block.commands) {
        const why = NOT_RUN.find(([re]) => re.test(text.replace(/^(npm install && )/, "")))?.[1];
        let command = text;
        if (/^npm install && /.test(command)) command = command.replace(/^npm install && /, "");
        else if (why) {
          result.skipped.push({ command: text, why });
          continue;
        }
        command = command.replaceAll("<pid>", lastPid).replaceAll("<submissionId>", lastSubmission).replaceAll("<record id>", firstRecordId);
        const i = n + 1;
        if (SERVER.test(command)) {
          // The same server (its port, else its command without variables or comment) is stopped first.
          const key = /PORT=(\d+)/.exec(command)?.[1] ?? command.replace(/^(\w+=\S+\s+)+/, "").replace(/\s+#.*$/, "").trim();
          const previous = servers.get(key);
          if (previous) await exec(`kill -INT -- -${previous} 2>/dev/null; while kill -0 -- -${previous} 2>/dev/null; do sleep 0.1; done`);
          await exec(`{ ${command}\n} > ${scratch}/out.${i} 2>&1 < /dev/null & echo "__JOB__ $!"`);
          const job = /__JOB__ (\d+)\s*__RB_\d+__ \d+\s*$/.exec(stdout)?.[1] ?? "";
          servers.set(key, job);
          const deadline = Date.now() + timeoutMs;
          while (!/listening on /.test(out(i))) {
            if (Date.now() > deadline) throw new Error(`${command} did not come up:\n${out(i)}`);
            await new Promise((r) => setTimeout(r, 100));
          }
          lastPid = /pid: (\d+)/.exec(out(i))?.[1] ?? lastPid;
          result.ran.push({ command: text, output: out(i), code: 0 });
          continue;
        }
        if (FOLLOW.test(command)) {
          await exec(`{ ${command}\n} > ${scratch}/out.${i} 2>&1 < /dev/null &`);
          result.ran.push({ command: text, output: "(in the background)", code: 0 });
          continue;
        }
        const code = await exec(`{ ${command}\n} > ${scratch}/out.${i} 2>&1 < /dev/null`);
        const output = out(i);
        result.ran.push({ command: text, output, code });
        for (const m of output.matchAll(/"submissionId":"([^"]+)"|admitted (\S+) \(conversation/g)) lastSubmission = m[1] ?? m[2]!;
        firstRecordId = /^id: (\S+)$/m.exec(output)?.[1] ?? firstRecordId;
        if (code !== 0) result.failures.push(`exit ${code}: ${command}\n${output}`);
        for (const e of expect) if (!matches(output, e)) result.failures.push(`expected "${e}" from: ${command}\ngot: ${output}`);
      }
    }
  } finally {
    shell.kill("SIGKILL"); // the namespace's init: everything it started goes with it
    rmSync(scratch, { recursive: true, force: true });
  }
  return result;
}
