import { getAddress, isAddress } from "ethers";
import { z } from "zod";
import { SNARK_SCALAR_FIELD } from "../crypto/field.js";

/** A checksummed EVM address; any valid casing is accepted and normalised. */
export const AddressSchema = z
  .string()
  .refine((s) => /^0x[0-9a-fA-F]{40}$/.test(s) && isAddress(s), { message: "must be a 0x-prefixed 20-byte address" })
  .transform((s) => getAddress(s));
export type Address = z.infer<typeof AddressSchema>;

/** 0x-prefixed hex of even length. */
export const HexSchema = z.string().regex(/^0x([0-9a-fA-F]{2})*$/, "must be 0x-prefixed hex");

/** A 32-byte hash such as a transaction hash. */
export const Bytes32Schema = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte hex string");

/** A canonical decimal integer string: digits only, no sign, no leading zeros (except "0"). */
const canonicalDecimal = /^(0|[1-9][0-9]*)$/;

/** A canonical decimal integer string, kept a string (a wire form of a bigint). */
export const DecimalStringSchema = z.string().regex(canonicalDecimal, "must be a canonical decimal integer string");

/** An element of the BN254 scalar field as a canonical decimal string, parsed to bigint. */
export const FieldElementSchema = z
  .string()
  .regex(canonicalDecimal, "must be a canonical decimal integer string")
  .transform((s) => BigInt(s))
  .refine((x) => x < SNARK_SCALAR_FIELD, { message: "must be below the BN254 scalar field order" });

/** An amount of atomic USDC (1 USDC = 1000000) as a canonical positive integer string, parsed to bigint. */
export const AtomicAmountSchema = z
  .string()
  .regex(canonicalDecimal, "must be an atomic USDC amount: a canonical integer string such as \"1000000\"")
  .transform((s) => BigInt(s))
  .refine((x) => x > 0n, { message: "must be greater than zero" })
  .refine((x) => x < 1n << 128n, { message: "must be below 2^128" });

/** A CAIP-2 EVM chain id such as eip155:84532. */
export const Caip2Schema = z.string().regex(/^eip155:[1-9][0-9]*$/, "must be a CAIP-2 EVM network id such as eip155:84532");
