/** swc's compiled Wasm module (see _swc_module.js). */
declare const swcModule: WebAssembly.Module;
export default swcModule;
