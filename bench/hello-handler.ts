/**
 * The floor of a cold start: a handler that does nothing, bundled with the construct's esbuild
 * options and started by the local function host like the harness's functions.
 */
export async function handler(): Promise<{ statusCode: number; body: string }> {
  return { statusCode: 200, body: "hello" };
}
