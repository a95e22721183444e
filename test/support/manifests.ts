/** Another verifier's signed manifests, made with the pure manifest code and the vector factory's identities. */
import { signWithSeed } from "../../worker/protocol/ed25519.js";
import { fromBase64Url } from "../../worker/protocol/encoding.js";
import { fingerprintOf } from "../../worker/protocol/issuing/identity.js";
import { buildManifestContent, signManifest, type Manifest, type Profile } from "../../worker/protocol/manifest/manifest.js";
import type { Identity } from "../../vectors/ccs/factory.js";

export const POLICY = { base_duration: 30, deadline_multiplier: 4, max_deadline: 300 };

export async function manifestOf(id: Identity, profiles: Profile[], window: { published_at: number; expires_at: number }, over: { fingerprint?: string } = {}): Promise<Manifest> {
  const content = await buildManifestContent({ verifierId: id.issuer, fingerprint: over.fingerprint ?? fingerprintOf(fromBase64Url(id.publicKey)!), profiles, challengePolicy: POLICY });
  return signManifest(content, window, async (m) => signWithSeed(m, id.seed));
}
