/**
 * The closed sets the sixteen rules are scoped by, written down as data. Each is a literal
 * membership test (CCS §4.8): a tool is in a set only if its name, folded (NFKC, invisible
 * characters removed, trimmed, lowercase: `foldToolName` in rules/types.ts), is listed here. The
 * sets, patterns and thresholds are part of the canonical configuration's policy digest, so
 * changing any of them changes `policy_version` and therefore `config_hash`.
 */

/** Tools whose arguments are run as a shell command line (SEC-002, SEC-006). */
export const COMMAND_EXECUTION_TOOL: readonly string[] = [
  "shell_exec", "bash", "sh", "exec", "run_command", "execute_command", "terminal", "subprocess", "run_shell",
];

/** Tools that fetch content from the network (OUT-003); also network-facing. */
export const NETWORK_FETCH_TOOL: readonly string[] = [
  "fetch_url", "http_get", "web_fetch", "browse", "read_url", "download_file",
];

/** Tools whose arguments leave this host (SEC-003) and whose output came over the network (OUT-001). */
export const NETWORK_FACING_TOOL: readonly string[] = [
  ...NETWORK_FETCH_TOOL,
  "http_request", "http_post", "search_web", "web_search", "send_email", "send_message", "post_webhook", "slack_post", "upload_file",
];

/** Tools whose effect cannot be undone; SEC-005 asks for a human approval of the exact request. */
export const DESTRUCTIVE_TOOL: readonly string[] = [
  "delete_file", "delete_directory", "drop_table", "drop_database", "truncate_table", "format_disk",
  "delete_repository", "terminate_instance", "delete_bucket", "revoke_all_keys",
];

/** Absolute paths a traversal may not reach (SEC-004): the path itself or anything under it. */
export const BLOCKED_ABSOLUTE_PATH: readonly string[] = [
  "/etc", "/root", "/proc", "/sys", "/dev", "/boot", "/var/run/secrets", "/run/secrets", "/var/lib/kubelet", "/.ssh", "/.aws", "/.config/gcloud",
];

/**
 * What a forced recursive `rm` may not be aimed at (SEC-002): the filesystem root and its
 * top-level system directories, judged after the target is resolved lexically (`//`, `/./`,
 * `/usr/..` are `/`) and a trailing `*` glob is taken as its directory.
 */
export const RM_PROTECTED_PATH: readonly string[] = [
  "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt", "/opt", "/proc",
  "/root", "/run", "/sbin", "/snap", "/srv", "/sys", "/usr", "/var", "/Applications", "/Library", "/System", "/Users", "/private",
];

/**
 * Deployed secret patterns (SEC-003, OUT-001): credential formats with a fixed, documented
 * shape, so a match is structural rather than a guess.
 */
export const SECRET_PATTERN: readonly { name: string; pattern: string }[] = [
  { name: "aws-access-key-id", pattern: "\\b(?:AKIA|ASIA)[0-9A-Z]{16}\\b" },
  { name: "github-token", pattern: "\\bgh[pousr]_[A-Za-z0-9]{36,255}\\b" },
  { name: "github-fine-grained-token", pattern: "\\bgithub_pat_[A-Za-z0-9_]{82}\\b" },
  { name: "slack-token", pattern: "\\bxox[abposr]-[A-Za-z0-9-]{10,}\\b" },
  { name: "stripe-live-key", pattern: "\\b[rs]k_live_[A-Za-z0-9]{24,}\\b" },
  { name: "google-api-key", pattern: "\\bAIza[0-9A-Za-z_-]{35}\\b" },
  { name: "private-key-block", pattern: "-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED )?PRIVATE KEY-----" },
  { name: "jwt", pattern: "\\beyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{16,}" },
];

/**
 * Prompt-injection patterns in tool output (OUT-002: scored, OUT-003: any one, network-fetch
 * output only). Each is case-insensitive and literal apart from whitespace and a few word
 * alternatives. `addresses_system_prompt` marks the ones OUT-003 looks for.
 */
export const INSTRUCTION_PATTERN: readonly { name: string; pattern: string; addresses_system_prompt: boolean }[] = [
  { name: "ignore-previous", pattern: "\\b(?:ignore|disregard|forget)\\s+(?:all\\s+|any\\s+)?(?:the\\s+)?(?:previous|prior|above|earlier|preceding)\\s+(?:instructions|prompts?|rules|directions)", addresses_system_prompt: true },
  { name: "reveal-system-prompt", pattern: "\\b(?:reveal|print|show|repeat|output)\\s+(?:your|the)\\s+(?:system\\s+prompt|initial\\s+instructions|hidden\\s+instructions)", addresses_system_prompt: true },
  { name: "new-system-prompt", pattern: "\\b(?:new|updated|override)\\s+system\\s+(?:prompt|instructions)", addresses_system_prompt: true },
  { name: "you-are-now", pattern: "\\byou\\s+are\\s+now\\s+(?:a|an|in|the)\\b", addresses_system_prompt: true },
  { name: "chat-role-marker", pattern: "<\\|im_start\\|>|<\\|system\\|>|\\[INST\\]|<<SYS>>|^\\s*#{2,}\\s*system\\s*:?\\s*$", addresses_system_prompt: true },
  { name: "agent-addressed", pattern: "\\b(?:attention|note\\s+to)\\s+(?:the\\s+)?(?:ai|assistant|agent|llm|language\\s+model)\\b", addresses_system_prompt: false },
  { name: "exfiltrate", pattern: "\\b(?:send|post|forward|upload)\\s+(?:all\\s+)?(?:the\\s+)?(?:conversation|credentials|secrets|api\\s+keys?|tokens?)\\s+to\\b", addresses_system_prompt: false },
  { name: "do-not-tell", pattern: "\\bdo\\s+not\\s+(?:tell|inform|mention\\s+(?:this\\s+)?to)\\s+the\\s+user\\b", addresses_system_prompt: false },
];

/** SEC-002 fires at or above this chain score. */
export const COMMAND_INJECTION_THRESHOLD = 2;
/** OUT-002 fires at or above this many distinct instruction patterns. */
export const PROMPT_INJECTION_THRESHOLD = 2;
/** OUT-004's limit when the tool declares no max_size: 1 MiB. */
export const DEFAULT_OUTPUT_MAX_SIZE = 1024 * 1024;
/** OUT-007: the closed outcome_status enumeration (CCS §4.5). */
export const OUTCOME_STATUS: readonly string[] = ["confirmed", "dispatched", "indeterminate", "unknown"];

/** Everything above, as one JSON value: what the policy digest is taken over. */
export const SCOPE_DATA = {
  COMMAND_EXECUTION_TOOL, NETWORK_FETCH_TOOL, NETWORK_FACING_TOOL, DESTRUCTIVE_TOOL, BLOCKED_ABSOLUTE_PATH, RM_PROTECTED_PATH,
  SECRET_PATTERN, INSTRUCTION_PATTERN, COMMAND_INJECTION_THRESHOLD, PROMPT_INJECTION_THRESHOLD, DEFAULT_OUTPUT_MAX_SIZE, OUTCOME_STATUS,
};
