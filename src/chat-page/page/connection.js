// Whether the server can be reached, and the banner that says so. A stream that ends is normal
// (the server ends it once the session is idle, and the browser's reconnect gets a 204), so a
// dropped stream or a failed request only raises the banner once /healthz does not answer
// either; while it is up, /healthz is asked again every few seconds until the server is back.

const PROBE_TIMEOUT_MS = 3_000;
const RETRY_MS = 2_000;

export class Connection {
  /** @param {HTMLElement} banner  @param {() => void} onBack called when the server answers again */
  constructor(banner, onBack) {
    this.banner = banner;
    this.onBack = onBack;
    this.state = "ok";
    this.timer = null;
    this.probing = null;
  }

  /** Something failed to reach the server (a fetch threw, the stream dropped): find out whether it is down. */
  suspect() {
    if (this.state === "unreachable") return;
    this.probing ??= this.#probe().then((up) => {
      this.probing = null;
      if (!up) this.#down();
    });
  }

  /** A request or the stream got an answer: the server is there. */
  reached() {
    if (this.state !== "ok") this.#up();
  }

  async #probe() {
    try {
      const res = await fetch("/healthz", { cache: "no-store", signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      return res.ok;
    } catch {
      return false;
    }
  }

  #down() {
    if (this.state === "unreachable") return;
    this.state = "unreachable";
    this.#show("unreachable", `Can't reach the server at ${location.host}. Is it still running? Trying again every few seconds…`);
    const retry = async () => {
      if (await this.#probe()) this.#up();
      else this.timer = setTimeout(retry, RETRY_MS);
    };
    this.timer = setTimeout(retry, RETRY_MS);
  }

  #up() {
    clearTimeout(this.timer);
    this.timer = null;
    const wasDown = this.state === "unreachable";
    this.state = "ok";
    this.banner.hidden = true;
    this.banner.dataset.state = "ok";
    document.body.dataset.connection = "ok";
    this.banner.textContent = "";
    if (wasDown) this.onBack();
  }

  #show(state, text) {
    this.banner.dataset.state = state;
    document.body.dataset.connection = state;
    this.banner.textContent = text;
    this.banner.hidden = false;
  }
}
