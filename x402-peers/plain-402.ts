import { listenLocal, type LocalServer } from "./local-server.js";

/**
 * A paywall that is not x402: every request gets a 402 with a generic JSON error and no x402 details (no
 * PAYMENT-REQUIRED header, no x402Version/accepts body), whatever payment headers it carries.
 */
export function startPlain402(port = 0): Promise<LocalServer> {
  return listenLocal((_request, response) => {
    response.writeHead(402, { "content-type": "application/json" }).end(JSON.stringify({ error: "Payment Required" }));
  }, port);
}
