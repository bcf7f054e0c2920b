/**
 * Built-in agent images (system prompt, default tools, context policy, safety profile, required
 * capabilities). The registry (`runtime/broker/image_registry.ts`) serves them and loads more from strict
 * YAML.
 *
 * @module
 */
export { builtinImages } from "./builtin.ts";
