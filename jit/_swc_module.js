// @ts-self-types="./_swc_module.d.ts"
// swc's compiled Wasm module, as a source-phase import: part of the static module graph, so it
// loads without read permission. Plain JavaScript because the type checker does not parse
// source-phase imports yet (Deno runs them); the types are in _swc_module.d.ts.
import source swcModule from "npm:@swc/wasm-web@1.16.18/wasm_bg.wasm";

export default swcModule;
