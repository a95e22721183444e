/** Byte encodings used on the wire: lowercase hex and unpadded base64url. */

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const utf8Encoder = new TextEncoder();

export function utf8(text: string): Uint8Array {
  return utf8Encoder.encode(text);
}

/** Wire forms shared by every schema: lowercase hex of a fixed length, and `sha256:` + 64 hex. */
export const HEX16 = /^[0-9a-f]{16}$/;
export const HEX64 = /^[0-9a-f]{64}$/;
export const SHA256_REF = /^sha256:[0-9a-f]{64}$/;

export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i]];
  return out;
}

const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  NIBBLE["0123456789abcdef".charCodeAt(i)] = i;
  NIBBLE["0123456789ABCDEF".charCodeAt(i)] = i;
}

/** Decodes lowercase or uppercase hex; returns null when the text is not hex of even length. */
export function fromHex(text: string): Uint8Array | null {
  if (text.length % 2 !== 0) return null;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) {
    const hi = NIBBLE[text.charCodeAt(2 * i) & 0x7f];
    const lo = NIBBLE[text.charCodeAt(2 * i + 1) & 0x7f];
    if (hi < 0 || lo < 0 || text.charCodeAt(2 * i) > 0x7f || text.charCodeAt(2 * i + 1) > 0x7f) return null;
    out[i] = (hi << 4) | lo;
  }
  return out;
}

export function toBase64Url(bytes: Uint8Array): string {
  let bin = "";
  for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Decodes canonical unpadded base64url (the encoding that `toBase64Url` produces), else null. */
export function fromBase64Url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return null;
  let bin: string;
  try {
    bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return null;
  }
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return toBase64Url(out) === text ? out : null;
}

export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) (n += 4), i++;
    else n += 3;
  }
  return n;
}
