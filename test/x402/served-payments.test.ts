import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { expect } from "chai";
import pg from "pg";
import { MemoryServedPayments, PostgresServedPayments, SERVED_RETENTION_SECONDS, type ServedPayments } from "../../seller/index.js";
import { SqliteServedPayments } from "../../seller/served-payments-sqlite.js";
import { createTestSchema, type TestSchema } from "../helpers/database.js";

/** Each store of a seller's served payments, on a clock the test moves. */
describe("a seller's record of served payments", function () {
  let now = 1_900_000_000;
  const clock = () => now;
  const schemas: TestSchema[] = [];
  after(async function () {
    for (const schema of schemas) await schema.drop();
  });

  const stores: Record<string, () => Promise<{ open: () => Promise<ServedPayments>; close: () => Promise<void> }>> = {
    memory: async () => {
      const one = new MemoryServedPayments(clock);
      return { open: async () => one, close: async () => {} };
    },
    sqlite: async () => {
      const file = path.join(mkdtempSync(path.join(tmpdir(), "served-")), "served.sqlite");
      const opened: SqliteServedPayments[] = [];
      return {
        open: async () => {
          const store = new SqliteServedPayments(file, clock);
          opened.push(store);
          return store;
        },
        close: async () => opened.forEach((store) => store.close()),
      };
    },
    postgres: async () => {
      const schema = await createTestSchema();
      schemas.push(schema);
      const opened: PostgresServedPayments[] = [];
      return {
        open: async () => {
          const store = await PostgresServedPayments.open(new pg.Pool({ connectionString: schema.connectionString, options: `-c search_path=${schema.schema}` }), clock);
          opened.push(store);
          return store;
        },
        close: async () => {
          for (const store of opened) await store.close();
        },
      };
    },
  };

  for (const [name, make] of Object.entries(stores)) {
    describe(name, function () {
      it("leases a payment to one request, serves it once, and gives a lease back only to its holder", async function () {
        const backend = await make();
        try {
          const served = await backend.open();
          const first = await served.begin("1", now + 60, 120);
          expect(first.outcome).to.equal("serve");
          expect(await served.begin("1", now + 60, 120)).to.deep.equal({ outcome: "busy", untilSeconds: now + 120 });
          await served.abandon("1", "not-the-holder");
          expect((await served.begin("1", now + 60, 120)).outcome, "a stranger's token gives nothing back").to.equal("busy");
          await served.abandon("1", (first as { token: string }).token);
          const second = await served.begin("1", now + 60, 120);
          expect(second.outcome, "given back: the next presentation serves it").to.equal("serve");
          await served.finish("1");
          expect(await served.begin("1", now + 60, 120)).to.deep.equal({ outcome: "served" });
          now += 3600;
          expect(await served.begin("1", now + 60, 120), "served stays served after its lease").to.deep.equal({ outcome: "served" });
        } finally {
          await backend.close();
        }
      });

      it("lets the next presentation take a payment whose request died holding it, once its lease lapsed", async function () {
        const backend = await make();
        try {
          const served = await backend.open();
          expect((await served.begin("2", now + 60, 120)).outcome).to.equal("serve");
          now += 119;
          expect((await served.begin("2", now + 60, 120)).outcome).to.equal("busy");
          expect(await served.unanswered(1800), "held, not lapsed").to.equal(0);
          now += 1;
          expect(await served.unanswered(1800), "its request died holding it").to.equal(1);
          const taken = await served.begin("2", now + 60, 120);
          expect(taken.outcome).to.equal("serve");
          await served.finish("2");
          expect(await served.unanswered(1800), "answered since").to.equal(0);
        } finally {
          await backend.close();
        }
      });

      it("renews a lease for its holder only, while it holds it: a renewed lease does not lapse, one taken over or served renews no more", async function () {
        const backend = await make();
        try {
          const served = await backend.open();
          const first = (await served.begin("4", now + 600, 120)) as { token: string };
          now += 100;
          expect(await served.renew("4", first.token, 120)).to.equal(true);
          expect(await served.renew("4", "not-the-holder", 120), "a stranger's token renews nothing").to.equal(false);
          now += 100;
          expect((await served.begin("4", now + 600, 120)).outcome, "renewed: 200 s after it was taken, still held").to.equal("busy");
          now += 121;
          const second = (await served.begin("4", now + 600, 120)) as { outcome: string; token: string };
          expect(second.outcome, "lapsed unrenewed: the next presentation takes it").to.equal("serve");
          expect(await served.renew("4", first.token, 120), "taken over: the first holder renews no more").to.equal(false);
          expect(await served.renew("4", second.token, 120)).to.equal(true);
          await served.finish("4");
          expect(await served.renew("4", second.token, 120), "served: nothing to renew").to.equal(false);
        } finally {
          await backend.close();
        }
      });

      it("forgets a payment whose window closed longer ago than it keeps records", async function () {
        const backend = await make();
        try {
          const served = await backend.open();
          const validBefore = now + 60;
          await served.begin("3", validBefore, 120);
          await served.finish("3");
          now = validBefore + SERVED_RETENTION_SECONDS + 1;
          expect((await served.begin("3", validBefore, 120)).outcome).to.equal("serve");
        } finally {
          await backend.close();
        }
      });

      if (name !== "memory") {
        it("gives one of several instances sharing the record the payment when all are presented it at once", async function () {
          const backend = await make();
          try {
            const instances = await Promise.all([1, 2, 3, 4, 5].map(() => backend.open()));
            const starts = await Promise.all(instances.map((served) => served.begin("4", now + 60, 120)));
            expect(starts.filter((start) => start.outcome === "serve")).to.have.length(1);
          } finally {
            await backend.close();
          }
        });
      }
    });
  }
});
