/**
 * Agent-written TypeScript tools ("JIT tools", DESIGN §7): the AST validator and the
 * permission-less Deno sandbox they run in, reaching the world only through checked syscalls.
 * Built by the JIT validator and JIT sandbox issues; nothing is exported yet.
 *
 * @module
 */
export {};
