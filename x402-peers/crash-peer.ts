/**
 * One party of a shielded-proof payment as a process of its own, for the crash tests (test/x402/crash.test.ts), which
 * kill it by signal between a send and its receipt and start it again: a seller (its record of served payments in a
 * SQLite file, so a restart keeps it), or the seller's @x402/core facilitator with the plug-in, or an agent that fetches
 * one paid URL out of a note vault. Configured by one JSON value in CRASH_PEER; each writes one JSON line when ready.
 */
import { z } from "zod";
import { resolveAddressBook } from "../lib/address-book.js";
import { NoteVault, X402Agent } from "../sdk/agent/index.js";
import { FacilitatorClient } from "../sdk/client/facilitator-client.js";
import { caip2NetworkOf } from "../sdk/x402/networks.js";
import { SqliteServedPayments } from "../seller/served-payments-sqlite.js";
import { startReferenceFacilitator } from "./reference-facilitator.js";
import { startSeller } from "./seller.js";

const Hex = z.string().regex(/^0x[0-9a-fA-F]+$/);

const PeerSchema = z.discriminatedUnion("role", [
  z.object({
    role: z.literal("seller"),
    facilitatorUrl: z.url(),
    chainId: z.number().int(),
    asset: z.string(),
    priceAtomic: z.string(),
    payTo: z.string(),
    port: z.number().int(),
    servedFile: z.string(),
    referenceSecret: Hex,
    serveLeaseSeconds: z.number().int().positive(),
  }),
  z.object({
    role: z.literal("facilitator"),
    rpcUrl: z.url(),
    chainId: z.number().int(),
    addressBook: z.string(),
    exactKey: Hex,
    relayKey: Hex,
    feeRecipient: z.string(),
    minimumFee: z.string(),
    usdcPerEth: z.string(),
    port: z.number().int(),
  }),
  z.object({
    role: z.literal("agent"),
    url: z.url(),
    relayerUrl: z.url(),
    chainId: z.number().int(),
    asset: z.string(),
    vaultFile: z.string(),
    passphrase: z.string(),
  }),
]);

const ready = (fields: Record<string, unknown>) => console.log(JSON.stringify({ msg: "ready", ...fields }));

async function main(): Promise<void> {
  const peer = PeerSchema.parse(JSON.parse(process.env.CRASH_PEER ?? "{}"));
  switch (peer.role) {
    case "seller": {
      const seller = await startSeller({
        facilitatorUrl: peer.facilitatorUrl,
        x402Version: 2,
        network: caip2NetworkOf(peer.chainId),
        asset: peer.asset,
        amountAtomic: peer.priceAtomic,
        payTo: peer.payTo,
        port: peer.port,
        offers: "shielded-proof",
        served: new SqliteServedPayments(peer.servedFile),
        referenceSecret: Buffer.from(peer.referenceSecret.slice(2), "hex"),
        serveLeaseSeconds: peer.serveLeaseSeconds,
      });
      return ready({ url: seller.resourceUrl });
    }
    case "facilitator": {
      const deployment = await resolveAddressBook(peer.chainId, peer.addressBook, "CRASH_PEER.addressBook");
      const facilitator = await startReferenceFacilitator({
        rpcUrl: peer.rpcUrl,
        chainId: peer.chainId,
        privateKey: peer.exactKey as `0x${string}`,
        port: peer.port,
        shielded: {
          privateKey: peer.relayKey,
          deployment,
          feeRecipient: peer.feeRecipient,
          minimumFee: BigInt(peer.minimumFee),
          usdcPerEth: BigInt(peer.usdcPerEth),
        },
      });
      return ready({ url: facilitator.url });
    }
    case "agent": {
      const notes = await NoteVault.open(peer.vaultFile, peer.passphrase);
      const agent = new X402Agent({
        facilitator: new FacilitatorClient(peer.relayerUrl),
        notes,
        network: { chainId: peer.chainId, asset: peer.asset },
        acceptNotPrivate: true,
      });
      ready({});
      const response = await agent.fetch(peer.url);
      console.log(JSON.stringify({ msg: "answered", status: response.status, body: await response.text() }));
      await notes.close();
      return;
    }
  }
}

main().catch((error: unknown) => {
  console.error(JSON.stringify({ msg: "failed", error: String(error) }));
  process.exit(1);
});
