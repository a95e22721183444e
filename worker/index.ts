/** The Worker: the Hono app and the Durable Object classes it binds. */
import { createApp } from "./app.js";

export { AdminRegistry } from "../durable-objects/admin-registry.js";
export { DecisionStats } from "../durable-objects/decision-stats.js";
export { EvidenceChain } from "../durable-objects/evidence-chain.js";
export { IssuerLedger } from "../durable-objects/issuer-ledger.js";
export { IntakeChallenges } from "../durable-objects/intake-challenges.js";
export { IssuingSequence } from "../durable-objects/issuing-sequence.js";
export { UsageLedger } from "../durable-objects/usage-ledger.js";
export { ReceiptJournal } from "../durable-objects/receipt-journal.js";

export default createApp();
