/**
 * The bounds of the tool surface that a built-in tool and its JIT syscall share (issue 20): how
 * long a call may wait on the host, and how much it may carry. Declared once, here, and used by
 * the tool declarations, whose syscalls share their schemas (or, where a syscall's shape must
 * differ, are built from the same caps: `tests/tool_syscall_parity_test.ts` checks both). Primitives keep limits of their own (often wider, for
 * the host's own callers); a model or an agent-written tool never gets more than these.
 *
 * @module
 */

/** Longest `timeout_ms` of one shell command (`run_shell_command`, `shell.run`). */
export const SHELL_TIMEOUT_MS_MAX = 600_000;
/** Most arguments of one shell command, the program included. */
export const SHELL_ARGS_MAX = 4096;
/** Longest single argument of a shell command, in characters. */
export const SHELL_ARG_CHARS_MAX = 65_536;
/** Longest stdin handed to a shell command, in characters. */
export const SHELL_STDIN_CHARS_MAX = 1024 * 1024;

/** Longest sleep (`sleep`, `clock.sleep`): the clock primitive's own bound. */
export const SLEEP_MS_MAX = 60_000;

/**
 * Longest wait for a child (`process.wait`'s `timeout_ms`). The built-in `wait_child_process`
 * parks the process instead of holding a call open, so it has no timeout; a JIT tool's wait holds
 * its sandbox and its caller, so it gets the same bound as the longest shell command.
 */
export const CHILD_WAIT_MS_MAX = SHELL_TIMEOUT_MS_MAX;

/** Longest `timeout_ms` of one HTTP request (`fetch_url`, `net.fetch`). */
export const FETCH_TIMEOUT_MS_MAX = 120_000;
/** Largest response body kept (`max_bytes`). */
export const FETCH_BYTES_MAX = 8 * 1024 * 1024;
/** Most characters of readable text one response returns (`max_chars`). */
export const FETCH_TEXT_CHARS_MAX = 1_000_000;
/** Largest request body, in characters. */
export const FETCH_BODY_CHARS_MAX = 1024 * 1024;
/** Longest request header name, in characters. */
export const FETCH_HEADER_NAME_CHARS_MAX = 256;
/** Longest request header value, in characters. */
export const FETCH_HEADER_VALUE_CHARS_MAX = 8192;

/** Largest `max_bytes` of one file read. */
export const READ_BYTES_MAX = 8 * 1024 * 1024;
/** Largest line number or line count of one file read (`offset`, `limit`). */
export const READ_LINE_MAX = 10_000_000;
/** Most edits in one `edit_file` call (`edits`). */
export const EDITS_MAX = 100;
/** Largest content of one file write, in characters. */
export const WRITE_CHARS_MAX = 8 * 1024 * 1024;
/** Most entries of one directory listing or glob. */
export const LIST_LIMIT_MAX = 10_000;
/** Most results of one grep (lines, files or counts). */
export const GREP_MATCHES_MAX = 2_000;
/** Most context lines of one grep on either side of a match. */
export const GREP_CONTEXT_MAX = 50;

/** Longest message to the human (`human_output`, `human.output`), in characters. */
export const HUMAN_OUTPUT_CHARS_MAX = 20_000;
/** Longest question (`ask_human`, `human.ask`) and permission reason, in characters. */
export const HUMAN_QUESTION_CHARS_MAX = 4000;
