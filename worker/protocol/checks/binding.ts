import { failure, type Failure } from "../codes.js";
import { jcs, prefixedDigest, sha256Hex } from "../digest.js";
import { actionDigest, type Receipt } from "../receipt.js";

/** The request an executor is about to run, as presented with the receipt. */
export interface PresentedRequest {
  agent_id: string;
  tool: string;
  params: unknown;
  timestamp: number;
  trace_id: string;
}

export interface Presented {
  request?: PresentedRequest;
  response?: unknown;
  runtimeContext?: unknown;
}

const REQUEST_FIELDS = ["agent_id", "params", "timestamp", "tool", "trace_id"];

/** Why a value is not a presentable request, or null. A call-level error, not a receipt failure. */
export function requestProblem(value: unknown): string | null {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "request must be an object";
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v)) if (!REQUEST_FIELDS.includes(key)) return `request has unknown field ${JSON.stringify(key)}`;
  for (const key of REQUEST_FIELDS) if (!Object.hasOwn(v, key)) return `request is missing ${key}`;
  if (typeof v.agent_id !== "string" || typeof v.tool !== "string" || typeof v.trace_id !== "string") {
    return "request.agent_id, request.tool and request.trace_id must be strings";
  }
  // Intake takes a Command's timestamp as RFC 3339 text too, so a caller who sent one there is
  // told what to present instead, not only that a string is refused.
  if (typeof v.timestamp !== "number") {
    return "request.timestamp must be a number of Unix seconds (intake converts a Command's RFC 3339 text to one and binds that number: present it)";
  }
  return null;
}

/**
 * The canonical request `{agent_id, params, timestamp, tool, trace_id}` built around the
 * params' canonical text, which is computed once and also digested on its own.
 */
export function canonicalRequest(q: PresentedRequest, paramsText: string): string {
  return `{"agent_id":${jcs(q.agent_id)},"params":${paramsText},"timestamp":${jcs(q.timestamp)},"tool":${jcs(q.tool)},"trace_id":${jcs(q.trace_id)}}`;
}

/** Step 5: what is presented is exactly what the receipt was issued for. Failures come in a fixed order. */
export async function checkBinding(r: Receipt, p: Presented): Promise<Failure[]> {
  const q = p.request;
  const paramsText = q ? jcs(q.params) : "";
  const digestOf = (value: unknown) => (value === undefined ? undefined : prefixedDigest(jcs(value)));
  // Every digest is started before the first is awaited; awaited one by one (they are settled by
  // then, and a digest of bytes does not reject) rather than through Promise.all, which cost more
  // than a digest here (measured).
  const paramsPending = q ? sha256Hex(paramsText) : undefined;
  const requestPending = q ? prefixedDigest(canonicalRequest(q, paramsText)) : undefined;
  const responsePending = digestOf(p.response);
  const contextPending = digestOf(p.runtimeContext);
  const problems: string[] = [];
  if (q) {
    const paramsDigest = await paramsPending;
    const requestHash = await requestPending;
    if (q.tool !== r.tool) problems.push(`request.tool ${JSON.stringify(q.tool)} is not the receipt's tool`);
    if (q.trace_id !== r.trace_id) problems.push("request.trace_id is not the receipt's trace_id");
    if (paramsDigest !== actionDigest(r.action, r.tool)) problems.push("params digest does not match the receipt's action");
    if (paramsDigest!.slice(0, 16) !== r.params_hash) problems.push("params digest does not match params_hash");
    if (requestHash !== r.request_hash) problems.push("request_hash does not match the presented request");
  }
  const bound = (digest: string | undefined, expected: string, name: string) => {
    if (digest === undefined) return;
    if (expected === "") problems.push(`a ${name} was presented but the receipt binds none`);
    else if (digest !== expected) problems.push(`${name}_hash does not match the presented ${name}`);
  };
  // An absent hash field binds nothing, exactly like "".
  bound(await responsePending, r.response_hash ?? "", "response");
  bound(await contextPending, r.runtime_context_hash ?? "", "runtime_context");
  return problems.map((detail) => failure("BINDING_MISMATCH", detail));
}
