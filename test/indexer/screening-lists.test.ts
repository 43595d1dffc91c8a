import { expect } from "chai";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { parseScreeningList, ScreeningListError } from "../../indexer/asp/screening-list.js";
import { ScreeningLists } from "../../indexer/asp/screening-lists.js";
import { addressOf } from "./helpers/builders.js";

const silent = pino({ level: "silent" });

/** Two list files in a fresh folder, with helpers to rewrite them. */
function listFiles(sanctions: string, overlay: string) {
  const dir = mkdtempSync(path.join(tmpdir(), "screening-"));
  const files = { sanctions: path.join(dir, "sanctions.txt"), overlay: path.join(dir, "overlay.txt") };
  writeFileSync(files.sanctions, sanctions);
  writeFileSync(files.overlay, overlay);
  const lists = new ScreeningLists(
    [
      { name: "sanctions", file: files.sanctions },
      { name: "overlay", file: files.overlay },
    ],
    silent,
  );
  return { files, lists };
}

describe("screening lists", function () {
  it("reads one address per line in any case, with comments kept as the listing's reason", function () {
    const text = [
      "# sample list",
      "",
      `${addressOf(1).toLowerCase()}   # Example hack, 2024`,
      `  ${addressOf(2).toUpperCase().replace("0X", "0x")}`,
      `${addressOf(1)} # listed twice: the first entry wins`,
    ].join("\n");
    const list = parseScreeningList("overlay", "overlay.txt", text);
    expect([...list.entries]).to.deep.equal([
      [addressOf(1), { line: 3, note: "Example hack, 2024" }],
      [addressOf(2), { line: 4, note: null }],
    ]);
  });

  it("rejects a whole file with a malformed line, naming the file and line", function () {
    const text = `${addressOf(1)}\n0x12345 # truncated\n`;
    expect(() => parseScreeningList("sanctions", "sanctions.txt", text)).to.throw(
      ScreeningListError,
      'sanctions.txt:2: not an EVM address: "0x12345"',
    );
  });

  it("matches the first list naming an address", async function () {
    const { lists } = listFiles(`${addressOf(1)} # SDN\n`, `${addressOf(1)}\n${addressOf(2)} # mixer\n`);
    await lists.load();
    expect(lists.match(addressOf(1))).to.deep.include({ list: "sanctions", line: 1, note: "SDN" });
    expect(lists.match(addressOf(2))).to.deep.include({ list: "overlay", line: 2, note: "mixer" });
    expect(lists.match(addressOf(3))).to.equal(null);
  });

  it("reloads changed files without a restart, and keeps the lists in force when a file turns bad", async function () {
    const { files, lists } = listFiles("", "");
    await lists.load();
    const emptyDigest = lists.digest;
    expect(await lists.reloadIfChanged()).to.equal(false);

    writeFileSync(files.overlay, `${addressOf(5)} # bridge exploit\n`);
    expect(await lists.reloadIfChanged()).to.equal(true);
    expect(lists.match(addressOf(5))?.list).to.equal("overlay");
    expect(lists.digest).to.not.equal(emptyDigest);

    const goodDigest = lists.digest;
    writeFileSync(files.overlay, "not an address\n");
    expect(await lists.reloadIfChanged()).to.equal(false);
    expect(lists.match(addressOf(5))?.list).to.equal("overlay");
    expect(lists.digest).to.equal(goodDigest);
  });

  it("ships sample lists that parse", async function () {
    const lists = new ScreeningLists(
      [
        { name: "sanctions", file: "config/screening/sanctions.txt" },
        { name: "overlay", file: "config/screening/overlay.txt" },
      ],
      silent,
    );
    await lists.load();
    expect(lists.summary()).to.deep.equal({ sanctions: 1, overlay: 1 });
  });

  it("refuses to start when a list file is missing", async function () {
    const lists = new ScreeningLists([{ name: "sanctions", file: "/nonexistent/sanctions.txt" }], silent);
    const error = await lists.load().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(Error).with.property("code", "ENOENT");
  });
});
