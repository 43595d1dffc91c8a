import { X402AgentError } from "./errors.js";

/** The redirects fetch follows. */
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** The most redirects one request follows, as the Fetch standard's. */
const MAX_REDIRECTS = 20;

/**
 * `fetch(url, init)`, following redirects only within the origin of `url` (scheme, host and port): a redirect to
 * another origin is refused with CROSS_ORIGIN_REDIRECT before anything is sent there, so the agent never pays, nor
 * shows a payment to, a seller of an origin the user did not ask for. Within the origin it follows as fetch does: a
 * 303, or a 301 or 302 of a POST, goes on as a GET without the body; a 307 or 308 repeats the request. A caller that
 * sets `init.redirect` gets fetch's own handling.
 */
export async function fetchSameOrigin(url: string, init: RequestInit = {}): Promise<Response> {
  if (init.redirect !== undefined && init.redirect !== "follow") return fetch(url, init);
  const { origin } = new URL(url);
  let at = new URL(url);
  let request = init;
  for (let redirects = 0; ; redirects++) {
    const response = await fetch(at, { ...request, redirect: "manual" });
    const location = response.headers.get("location");
    if (!REDIRECT_STATUSES.has(response.status) || location === null) return response;
    await response.body?.cancel();
    const next = new URL(location, at);
    if (next.origin !== origin) {
      throw new X402AgentError(
        "CROSS_ORIGIN_REDIRECT",
        `${url} redirects to ${next.origin} (${next.href}); the agent pays only the origin it was asked for, ${origin}. Nothing was paid. ` +
          `To pay there, fetch ${next.href} itself.`,
      );
    }
    if (redirects === MAX_REDIRECTS) throw new TypeError(`fetch failed: ${url} redirected more than ${MAX_REDIRECTS} times`);
    const method = (request.method ?? "GET").toUpperCase();
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
      request = { ...request, method: method === "HEAD" ? "HEAD" : "GET", body: undefined };
    }
    at = next;
  }
}
