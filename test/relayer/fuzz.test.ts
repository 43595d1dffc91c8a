import { Ajv2020 } from "ajv/dist/2020.js";
import { expect } from "chai";
import { getAddress } from "ethers";
import { ErrorBodySchema } from "../../relayer/schemas/error.js";
import { createNote, deriveChangeSecrets, hash2, nullifierHashOf, type Note } from "../../sdk/index.js";
import { depositNote } from "../contracts/helpers/notes.js";
import { buildIndexerConfig, startIndexer, TEST_TOKEN, type RunningIndexer } from "../indexer/helpers/indexer-harness.js";
import { startLocalChain, type LocalChain } from "../indexer/helpers/local-chain.js";
import { applyEdit, exampleOf, malformedEdits, randomString, seededRandom, type Json, type JsonSchema } from "./helpers/fuzz-cases.js";
import { buildRelayerConfig, logLines, serviceDeposit, startRelayer, type RunningRelayer } from "./helpers/relayer-harness.js";

const PAYEE = getAddress("0x000000000000000000000000000000000000beef");
const SEED = 0x5eed;
const MAX_BODY_BYTES = 64 * 1024;

/** Identifying headers sent with every request: the relayer must drop them before anything logs. */
const CALLER = {
  userAgent: "fuzz-agent/7.3 (unique-ua-4417)",
  cookie: "session=c00kie-value-8812",
  ips: ["203.0.113.77", "198.51.100.23", "192.0.2.60"],
};
const IDENTIFYING_HEADERS = {
  "user-agent": CALLER.userAgent,
  cookie: CALLER.cookie,
  "x-forwarded-for": `${CALLER.ips[0]}, ${CALLER.ips[1]}`,
  "x-real-ip": CALLER.ips[1]!,
  forwarded: `for=${CALLER.ips[2]}`,
};

interface QueryParameter {
  name: string;
  in: "query" | "header";
  schema: JsonSchema;
}
interface OpenApiOperation {
  parameters?: QueryParameter[];
  requestBody?: { content: { "application/json": { schema: JsonSchema } } };
  responses: Record<string, { content?: { "application/json": { schema: JsonSchema } } }>;
}
type OpenApiDocument = { paths: Record<string, Record<string, OpenApiOperation>> };

/** One malformed request and what its answer must be besides a documented 4xx. */
interface FuzzCase {
  what: string;
  route: string;
  method: string;
  /** Whether the OpenAPI document describes this route and method, so the answer is checked against it. */
  documented: boolean;
  body?: RequestInit["body"];
  contentType?: string;
  failureFields: Record<string, false>;
  /**
   * The seller-side routes answer a payment they refuse as x402 facilitators do: 200 with this field false and a
   * snake_case reason (docs/api.md 4.9). A body they cannot read is still a 4xx.
   */
  x402Refusal?: "isValid" | "success";
  expect?: { status?: number; code?: string };
}

/** A valid value for every request field the relayer's schemas name, for `note`; a new field needs an entry. */
function validFieldValues(note: Note, usdc: string): Record<string, Json> {
  const change = deriveChangeSecrets(note);
  return {
    nullifier: note.nullifier.toString(),
    secret: note.secret.toString(),
    value: note.value.toString(),
    label: note.label.toString(),
    commitment: note.commitment.toString(),
    nextNullifier: change.nullifier.toString(),
    nextSecret: change.secret.toString(),
    nullifierHash: nullifierHashOf(note.nullifier).toString(),
    // The note an access fee paid out of this one authorizes: its change note.
    authorizedNullifierHash: nullifierHashOf(change.nullifier).toString(),
    payTo: PAYEE,
    provider: PAYEE,
    recipient: PAYEE,
    ownerWallet: PAYEE,
    providerWhitelist: [PAYEE],
    asset: usdc,
    maxAmountRequired: "1000000",
    amount: "1000000",
    amountAtomic: "1000000",
    perTransactionLimitAtomic: "1000000",
    dailyLimitAtomic: "5000000",
    network: "eip155:31337",
    networkId: "eip155:31337",
    scheme: "exact",
    accessTokenTxHash: `0x${"ab".repeat(32)}`,
    agentId: "agent_0123456789abcdef",
    category: "data",
    categories: ["data"],
    // The agent's name, and the token name of an x402 `extra` block.
    name: "fuzz-bot",
    version: "2",
    publicKey: `0x02${"11".repeat(32)}`,
    url: "https://seller.example/data",
    description: "fuzzed resource",
    mimeType: "application/json",
    maxTimeoutSeconds: 60,
    acceptNotPrivate: true,
    // A non-custodial settle's quote and proof: well formed, neither issued nor valid, so every one is refused.
    processooor: PAYEE,
    feeRecipient: PAYEE,
    scope: "1",
    withdrawnValue: "1000000",
    fee: "0",
    context: "1",
    stateRoot: "1",
    aspRoot: "1",
    signature: `0x${"cd".repeat(32)}`,
    paymentNonce: `0x${"ce".repeat(32)}`,
    pi_a: ["1", "2", "1"],
    pi_b: [["1", "2"], ["3", "4"], ["1", "0"]],
    pi_c: ["1", "2", "1"],
    publicSignals: ["1", "2", "3"],
    retryKey: `0x${"cb".repeat(32)}`,
    // A tab's channel (quote-tab, open-tab): the seller's authorizer and delay, the agent's voucher key, salt and deposit.
    receiverAuthorizer: PAYEE,
    withdrawDelay: 900,
    payerAuthorizer: PAYEE,
    salt: `0x${"ca".repeat(32)}`,
    depositAmount: "1000000",
  };
}

/**
 * What every failure of an operation carries, read off its success response: spends say settled:false,
 * authorizations authorized:false (an access fee paid out of a note, both), a tab's opening opened:false.
 */
function failureFieldsOf(operation: OpenApiOperation): Record<string, false> {
  // The lowest 2xx: a 202 is SETTLEMENT_UNCERTAIN, an error body.
  const successStatus = Object.keys(operation.responses).filter((status) => status.startsWith("2")).sort()[0]!;
  const success = operation.responses[successStatus];
  const properties = success?.content?.["application/json"].schema.properties ?? {};
  return {
    ...("authorized" in properties && { authorized: false as const }),
    ...("opened" in properties && { opened: false as const }),
    ...(("settled" in properties || "txHash" in properties) && { settled: false as const }),
  };
}

/** The field of an x402 facilitator answer that says a payment was refused, when the operation answers in that shape. */
function x402RefusalOf(operation: OpenApiOperation): FuzzCase["x402Refusal"] {
  const properties = operation.responses["200"]?.content?.["application/json"].schema.properties ?? {};
  if ("isValid" in properties) return "isValid";
  if ("success" in properties) return "success";
  return undefined;
}

/** A body of more than 64 KiB sent in chunks, without a Content-Length to refuse it by. */
function streamedOversizedBody(): ReadableStream<Uint8Array> {
  const chunk = new TextEncoder().encode(`"${"x".repeat(8 * 1024)}",`);
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent === 0) controller.enqueue(new TextEncoder().encode("["));
      controller.enqueue(chunk);
      sent += chunk.length;
      if (sent > MAX_BODY_BYTES + chunk.length) controller.close();
    },
  });
}

/** Malformed values of a GET's query parameter, the parameter given twice, and a parameter it does not take. */
function queryCases(route: string, parameter: QueryParameter, random: () => number): FuzzCase[] {
  const pattern = new RegExp(parameter.schema.pattern ?? "^$", "u");
  const values = ["", "x", "agent_", "AGENT_0123456789ABCDEF", "agent_0123456789abcdeg", "agent_0123456789abcdef0", "x".repeat(5_000), randomString(random, 24)];
  const query = (what: string, search: string): FuzzCase => ({ what, route: `${route}?${search}`, method: "GET", documented: true, failureFields: {} });
  return [
    ...values
      .filter((value) => !pattern.test(value))
      .map((value) => query(`?${parameter.name}=${JSON.stringify(value.slice(0, 30))}`, new URLSearchParams({ [parameter.name]: value }).toString())),
    query(`?${parameter.name} twice`, `${parameter.name}=a&${parameter.name}=b`),
    query("an unknown query parameter", "fuzz=1"),
  ];
}

describe("relayer: fuzzing every endpoint with malformed requests", function () {
  let chain: LocalChain;
  let indexer: RunningIndexer;
  let relayer: RunningRelayer;
  let config: ReturnType<typeof buildRelayerConfig>;
  const log = logLines();
  /** The deposited note every request names; nothing but the last test may spend it. */
  let note: Note;
  /** The same note's fields with other secrets: hashes consistently, was never deposited, can never be spent. */
  let decoy: Note;
  let usdc: string;

  /** Every value that must never reach a log line. */
  let secrets: string[];

  /** Log lines holding a secret or any IP address, each with what it leaked. */
  const leaks = () =>
    log.lines.flatMap((line) => [
      ...secrets
        .filter((secret) => line.includes(secret))
        .map((secret) => `${secret.slice(0, 12)}... in ${line}`),
      ...(/\b\d{1,3}(\.\d{1,3}){3}\b|::ffff:|::1\b/.test(line) ? [`an IP address in ${line}`] : []),
    ]);

  before(async function () {
    chain = await startLocalChain();
    // Large secrets, so that finding one in a log line cannot be a coincidence.
    const tag = 0xf022n;
    note = await depositNote(chain.facilitator, chain.depositors.alice, 3_000_000n, { nullifier: hash2(tag, 1n), secret: hash2(tag, 2n) });
    decoy = createNote(note.value, note.label, { nullifier: hash2(tag, 3n), secret: hash2(tag, 4n) });
    usdc = await chain.facilitator.usdc.getAddress();
    indexer = await startIndexer(buildIndexerConfig(chain));
    await indexer.indexer.sync.catchUp();
    await indexer.indexer.curator.publish();
    await indexer.indexer.sync.catchUp();
    // Limits high enough that the fuzzing itself is never throttled (rate-limit.test.ts covers the limits).
    config = buildRelayerConfig(chain, indexer, { logLevel: "debug", rateLimitGlobalPerSecond: "1000000", rateLimitPerNotePerMinute: "1000000" });
    relayer = await startRelayer(config, { logTo: log.destination });
    secrets = [
      ...[note, decoy, deriveChangeSecrets(note), deriveChangeSecrets(decoy)].flatMap(({ nullifier, secret }) => [nullifier.toString(), secret.toString()]),
      config.relayerPrivateKey,
      config.relayerPrivateKey.slice(2),
      config.payerKeySecret,
      config.payerKeySecret.slice(2),
      TEST_TOKEN,
      CALLER.userAgent,
      CALLER.cookie,
      CALLER.cookie.split("=")[1]!,
      ...CALLER.ips,
    ];
  });

  after(async function () {
    await relayer?.stop();
    await indexer?.stop();
    await chain?.close();
  });

  /** The malformed requests of every operation of the relayer's own OpenAPI document, and of routes it lacks. */
  async function fuzzCases(): Promise<FuzzCase[]> {
    const document = (await (await fetch(new URL("/api/openapi.json", relayer.url))).json()) as OpenApiDocument;
    const random = seededRandom(SEED);
    return [
      ...Object.entries(document.paths).flatMap(([route, operations]) => [
        ...(operations.post === undefined ? [] : bodyCases(route, operations.post, random)),
        ...(operations.get?.parameters ?? []).filter((parameter) => parameter.in === "query").flatMap((parameter) => queryCases(route, parameter, random)),
        ...["PUT", "PATCH", "DELETE", "PROPFIND"].map((method) => ({ what: `${method} ${route}`, route, method, documented: false, failureFields: {} })),
      ]),
      ...["/api/facilitator/nope", "/api/facilitator/settle/extra", "/api", "/"].map((route) => ({
        what: `POST ${route}`,
        route,
        method: "POST",
        documented: false,
        body: "{}",
        contentType: "application/json",
        failureFields: {},
      })),
    ];
  }

  /**
   * Malformed bodies of a POST: one break at every field and level of its request schema, texts that are not
   * JSON, wrong content types, and bodies over the size limit.
   */
  function bodyCases(route: string, operation: OpenApiOperation, random: () => number): FuzzCase[] {
    const schema = operation.requestBody!.content["application/json"].schema;
    const base = exampleOf(schema, validFieldValues(note, usdc));
    const decoyBase = exampleOf(schema, validFieldValues(decoy, usdc));
    const isValid = new Ajv2020({ strict: false }).compile(schema);
    expect(isValid(base), `the valid ${route} body the fuzzing starts from: ${JSON.stringify(isValid.errors)}`).to.equal(true);
    const failureFields = failureFieldsOf(operation);
    const x402Refusal = x402RefusalOf(operation);
    const postCase = (what: string, body: RequestInit["body"], extra: Partial<FuzzCase> = {}): FuzzCase => ({
      what,
      route,
      method: "POST",
      documented: true,
      body,
      contentType: "application/json",
      failureFields,
      ...(x402Refusal !== undefined && { x402Refusal }),
      ...extra,
    });

    const cases = malformedEdits(schema, base, random).map((edit) => {
      // A break the JSON schema cannot see (a bad checksum, an amount too large) is made in the decoy's body, so
      // that even a relayer that missed it could not spend the note.
      const body = applyEdit(base, edit);
      return postCase(edit.what, JSON.stringify(isValid(body) ? applyEdit(decoyBase, edit) : body));
    });
    const decoyJson = JSON.stringify(decoyBase);
    const notJson = [
      "",
      "{",
      "not json",
      "{'paymentDetails': 1}",
      "[1, 2",
      "\u0000",
      "NaN",
      `\uFEFF${decoyJson}`,
      `${decoyJson} trailing`,
      decoyJson.slice(0, -1),
      randomString(random, 200),
    ];
    const deeplyNested = ["[".repeat(20_000) + "]".repeat(20_000), '{"a":'.repeat(5_000) + "1" + "}".repeat(5_000)];
    for (const text of [...notJson, ...deeplyNested]) cases.push(postCase(`body text ${JSON.stringify(text.slice(0, 30))}`, text));
    cases.push(postCase("a body with a __proto__ field", `{"__proto__": {"polluted": true}, ${decoyJson.slice(1)}`));
    for (const contentType of [undefined, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=fuzz", "application/xml", "application/jsonx", "json"]) {
      const refused = { contentType, expect: { status: 400, code: "INVALID_REQUEST" } };
      cases.push(postCase(`Content-Type ${contentType ?? "absent"}`, new TextEncoder().encode(decoyJson), refused));
    }
    const tooLarge = { expect: { status: 413, code: "INVALID_REQUEST" } };
    cases.push(postCase("a body over 64 KiB", JSON.stringify({ ...(base as object), padding: "x".repeat(MAX_BODY_BYTES) }), tooLarge));
    cases.push(postCase("a streamed body over 64 KiB", streamedOversizedBody(), tooLarge));
    return cases;
  }

  /** What is wrong with the answer to `fuzzCase`; empty when it is a documented 4xx. */
  async function problemsWith(fuzzCase: FuzzCase): Promise<string[]> {
    const headers: Record<string, string> = { ...IDENTIFYING_HEADERS, ...(fuzzCase.contentType === undefined ? {} : { "content-type": fuzzCase.contentType }) };
    const init: RequestInit = { method: fuzzCase.method, headers, body: fuzzCase.body, ...(fuzzCase.body instanceof ReadableStream ? { duplex: "half" } : {}) };
    let status: number;
    let body: Record<string, unknown>;
    try {
      if (fuzzCase.documented) {
        ({ status, body } = await relayer.request(fuzzCase.route, init));
      } else {
        const response = await fetch(new URL(fuzzCase.route, relayer.url), init);
        status = response.status;
        body = (await response.json()) as Record<string, unknown>;
      }
    } catch (error) {
      return [`${(error as Error).message}`];
    }
    const problems: string[] = [];
    if (fuzzCase.x402Refusal !== undefined && status === 200 && fuzzCase.expect === undefined) {
      const reason = body.invalidReason ?? body.errorReason;
      return body[fuzzCase.x402Refusal] === false && typeof reason === "string" && /^[a-z_]+$/.test(reason)
        ? []
        : [`answered 200 without an x402 refusal: ${JSON.stringify(body).slice(0, 200)}`];
    }
    if (status < 400 || status >= 500) problems.push(`answered ${status}`);
    const shape = ErrorBodySchema.safeParse(body);
    if (!shape.success) problems.push(`error body ${JSON.stringify(body).slice(0, 200)}: ${shape.error.message}`);
    for (const [field, value] of Object.entries(fuzzCase.failureFields)) {
      if (body[field] !== value) problems.push(`no ${field}: ${value}`);
    }
    if (fuzzCase.expect?.status !== undefined && status !== fuzzCase.expect.status) problems.push(`answered ${status}, not ${fuzzCase.expect.status}`);
    if (fuzzCase.expect?.code !== undefined && body.code !== fuzzCase.expect.code) problems.push(`answered ${String(body.code)}, not ${fuzzCase.expect.code}`);
    return problems;
  }

  it("answers every malformed request with a documented 4xx, leaves the note unspent and logs nothing identifying or secret", async function () {
    const cases = await fuzzCases();
    const postRoutes = new Set(cases.filter((fuzzCase) => fuzzCase.method === "POST" && fuzzCase.documented).map((fuzzCase) => fuzzCase.route));
    expect([...postRoutes]).to.include.members([
      "/api/facilitator/verify",
      "/api/facilitator/settle",
      "/api/facilitator/quote",
      "/api/facilitator/settle-proof",
      "/api/facilitator/quote-x402",
      "/api/facilitator/settle-x402-proof",
      "/api/facilitator/authorize",
      "/api/facilitator/quote-access-fee",
      "/api/facilitator/access-fee-proof",
      "/api/withdraw",
      "/api/x402-pay",
      "/api/agent/register",
    ]);

    const failures: string[] = [];
    const parallel = 8;
    for (let start = 0; start < cases.length; start += parallel) {
      const batch = cases.slice(start, start + parallel);
      const answers = await Promise.all(batch.map(problemsWith));
      answers.forEach((problems, i) => {
        if (problems.length > 0) failures.push(`${batch[i]!.method} ${batch[i]!.route} (${batch[i]!.what}): ${problems.join("; ")}`);
      });
    }
    expect(failures, failures.slice(0, 20).join("\n")).to.deep.equal([]);

    expect(await chain.facilitator.privacyPool.isNullifierSpent(nullifierHashOf(note.nullifier))).to.equal(false);
    expect(log.lines.length, "one request line per case at least").to.be.at.least(cases.length);
    const leaked = leaks();
    expect(leaked, leaked.slice(0, 5).join("\n")).to.deep.equal([]);
  });

  it("logs nothing secret while it settles the note for real", async function () {
    const payeeBefore = await chain.facilitator.usdc.balanceOf(PAYEE);
    const { status, body } = await relayer.post("/api/facilitator/settle", {
      paymentDetails: { payTo: PAYEE, maxAmountRequired: "1000000", networkId: "eip155:31337" },
      serviceDeposit: serviceDeposit(note),
    });
    expect(status, JSON.stringify(body)).to.equal(200);
    expect(body).to.deep.include({ settled: true, amount: "1000000", fee: "0", remainingValue: "2000000" });
    expect(await chain.facilitator.usdc.balanceOf(PAYEE)).to.equal(payeeBefore + 1_000_000n);
    const change = body.nextDeposit as Record<string, string>;
    expect(change.nullifier).to.equal(deriveChangeSecrets(note).nullifier.toString());
    const leaked = leaks();
    expect(leaked, leaked.slice(0, 5).join("\n")).to.deep.equal([]);
  });
});
