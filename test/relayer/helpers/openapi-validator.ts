import { Ajv2020 } from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv";

interface OpenApiDocument {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>>;
}

/**
 * Checks response bodies against the relayer's own OpenAPI document (GET /api/openapi.json): a response the
 * document does not describe, or describes differently, fails the test that received it.
 */
export class OpenApiValidator {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly document: OpenApiDocument) {}

  assertResponse(method: string, route: string, status: number, body: unknown): void {
    const path = route.split("?")[0]!;
    const operation = this.document.paths[path]?.[method.toLowerCase()];
    if (operation === undefined) throw new Error(`the OpenAPI document has no ${method} ${path}`);
    const response = operation.responses[String(status)];
    const schema = response?.content?.["application/json"]?.schema;
    if (schema === undefined) throw new Error(`the OpenAPI document has no ${status} response for ${method} ${path}`);
    const key = `${method} ${path} ${status}`;
    let validate = this.compiled.get(key);
    if (validate === undefined) {
      validate = this.ajv.compile(schema);
      this.compiled.set(key, validate);
    }
    if (!validate(body)) {
      throw new Error(`${key} does not match the OpenAPI document: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`);
    }
  }
}
