import { request as httpRequest } from "node:http";

/**
 * A JSON POST with its path sent exactly as written: `fetch` (and the URL parser) would resolve
 * `.` and `..` segments before sending, which the path checks under test must see.
 */
export function rawPost(base: string, path: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(base, { method: "POST", path, headers: { "content-type": "application/json" } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}
