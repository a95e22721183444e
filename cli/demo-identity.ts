/**
 * The documented demo identity: an issuer, its Ed25519 key and the audience the local
 * instance serves. Public on purpose; never pin it anywhere but a local instance.
 */
import { publicKeyFromSeed } from "../worker/protocol/ed25519.js";
import { fromHex, toBase64Url } from "../worker/protocol/encoding.js";

export const DEMO_ISSUER = "https://demo-issuer.example";
export const DEMO_AUDIENCE = "https://relying-party.example";
export const DEMO_KID = "demo-2026";
/** The relying party `npm start` registers with DEMO_RP_TOKEN from .dev.vars. */
export const DEMO_RELYING_PARTY = "demo-relying-party";
/** The demo issuer's Ed25519 seed (RFC 8032 private key), hex. */
export const DEMO_SEED_HEX = "0d3b2f6c0c8e4b1a9f7e6d5c4b3a29181716151413121110f0e0d0c0b0a09080";

export const demoSeed = (): Uint8Array => fromHex(DEMO_SEED_HEX)!;

export function demoAnchor() {
  return {
    issuer: DEMO_ISSUER,
    org_id: "https://demo-org.example",
    keys: [{ kid: DEMO_KID, alg: "Ed25519", public_key: toBase64Url(publicKeyFromSeed(demoSeed())) }],
  };
}
