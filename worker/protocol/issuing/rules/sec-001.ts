import { classifyHost, urlHost } from "../hosts.js";
import { allow, argumentStrings, deny, type InputRule } from "./types.js";

/** SEC-001: an absolute URL argument whose literal host is loopback, private or link-local. */
export const SEC_001: InputRule = {
  name: "SEC-001",
  trigger: "an argument is an absolute URL whose host, read literally (IPv4 in any numeric form, IPv6 incl. mapped forms, localhost), is loopback, private, link-local or unspecified",
  scope: "string arguments of any tool",
  judge({ command }) {
    for (const s of argumentStrings(command.params)) {
      const host = urlHost(s);
      const cls = host === null ? null : classifyHost(host);
      if (cls) return deny(`SEC-001: URL argument targets a ${cls} host (${host})`);
    }
    return allow();
  },
};
