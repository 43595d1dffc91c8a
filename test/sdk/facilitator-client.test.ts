import http from "node:http";
import { expect } from "chai";
import { FacilitatorClient, FacilitatorError } from "../../sdk/client/facilitator-client.js";
import { listenLocal, type LocalServer } from "../../x402-peers/local-server.js";
import { rejectionOf } from "./agent/helpers/rejection.js";

/** Reads a request's whole body. */
async function bodyOf(request: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

describe("the SDK's facilitator client keeps note secrets pinned", function () {
  describe("a redirect from the pinned facilitator", function () {
    let elsewhere: LocalServer;
    let pinned: LocalServer;
    const receivedElsewhere: string[] = [];

    before(async function () {
      // Another origin (another port), which would read whatever a followed 307 re-posts to it.
      elsewhere = await listenLocal(async (request, response) => {
        receivedElsewhere.push(await bodyOf(request));
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ settled: true }));
      });
      pinned = await listenLocal((request, response) => {
        response.writeHead(307, { location: `${elsewhere.url}${request.url}` }).end();
      });
    });
    after(async function () {
      await Promise.all([elsewhere?.close(), pinned?.close()]);
    });

    it("is refused: the settle body, secrets included, is never re-sent to where it points", async function () {
      const client = new FacilitatorClient(pinned.url);
      const serviceDeposit = { nullifier: "1111", secret: "2222", value: "1000000", label: "3", commitment: "4" };
      const refused = await rejectionOf(client.settleX402({ accepts: {}, serviceDeposit, acceptNotPrivate: true }));

      expect(refused).to.be.instanceOf(FacilitatorError);
      expect(refused).to.include({ status: 307, code: "REDIRECT_REFUSED", retryable: false });
      expect(refused.message).to.contain(elsewhere.url);
      expect(receivedElsewhere).to.deep.equal([]);
    });
  });

  describe("the facilitator URL", function () {
    for (const url of ["https://facilitator.example", "http://127.0.0.1:8787", "http://127.9.3.1", "http://localhost:8787", "http://[::1]:8787"]) {
      it(`accepts ${url}`, function () {
        expect(new FacilitatorClient(url).url).to.equal(new URL(url).origin);
      });
    }

    for (const url of ["http://facilitator.example", "http://10.0.0.5:8787", "http://128.0.0.1", "http://localhost.example.com", "ftp://127.0.0.1"]) {
      it(`refuses ${url}: plain http off loopback`, function () {
        expect(() => new FacilitatorClient(url)).to.throw(/must be https/);
      });
    }
  });
});
