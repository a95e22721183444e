import { classifyHost, urlHosts } from "../hosts.js";
import { allow, argumentStrings, deny, type InputRule } from "./types.js";

/**
 * SEC-001: a URL argument whose host, read literally or by the WHATWG URL parser (NFKC-folded
 * either way), is loopback, private or link-local. Either reading hitting is enough: a client
 * may use either.
 */
export const SEC_001: InputRule = {
  name: "SEC-001",
  trigger: "an argument is a URL whose host, read literally or by the WHATWG URL parser after NFKC folding (IPv4 in any numeric form, IPv6 incl. mapped forms, localhost), is loopback, private, link-local or unspecified",
  scope: "string arguments of any tool",
  judge({ command }) {
    for (const s of argumentStrings(command.params)) {
      for (const host of urlHosts(s)) {
        const cls = classifyHost(host);
        if (cls) return deny(`SEC-001: URL argument targets a ${cls} host (${host})`);
      }
    }
    return allow();
  },
};
