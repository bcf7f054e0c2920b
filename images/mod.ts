/**
 * Built-in agent images (system prompt, default tools, required capabilities) and the YAML image
 * loader. Built by the tool broker and built-in images issues; nothing is exported yet.
 *
 * @module
 */
export {};
