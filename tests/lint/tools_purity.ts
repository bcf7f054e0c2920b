/**
 * The purity rule for `tools/` (DESIGN §2, "One choke point"): a built-in tool reaches the world
 * only through the primitives in its context. Parsed by Deno's own parser (a lint plugin), so what
 * is checked is exactly what Deno runs. In a file under `tools/` it reports:
 * - an import or re-export of anything but `zod`, `runtime/broker/tool.ts` or another file of `tools/`
 *   (so no `node:*`, `npm:`, URLs, providers or primitives);
 * - a dynamic `import()` and `import.meta`;
 * - a reference to `Deno`, `fetch`, `globalThis`, `self`, `window`, `eval`, `Function`,
 *   `WebAssembly`, `Worker`, `WebSocket`, `XMLHttpRequest`, `EventSource`, `require`, `process`,
 *   `caches`, `localStorage`, `sessionStorage`, `navigator` or `BroadcastChannel`.
 * `deno lint` runs it (deno.json `lint.plugins`); `tests/architecture_test.ts` runs it over every
 * tool file and over hostile samples.
 *
 * @module
 */

const BANNED: readonly string[] = Object.freeze([
  "Deno",
  "fetch",
  "globalThis",
  "self",
  "window",
  "eval",
  "Function",
  "WebAssembly",
  "Worker",
  "WebSocket",
  "XMLHttpRequest",
  "EventSource",
  "require",
  "process",
  "caches",
  "localStorage",
  "sessionStorage",
  "navigator",
  "BroadcastChannel",
  "Reflect",
  "Proxy",
]);

/**
 * Property names that lead from any value to the Function constructor or the prototype chain
 * (`(() => {}).constructor("return Deno")()`, `Object.getPrototypeOf(function* () {})`).
 */
const BANNED_PROPERTIES: readonly string[] = Object.freeze([
  "constructor",
  "__proto__",
  "prototype",
  "getPrototypeOf",
  "setPrototypeOf",
  "defineProperty",
  "__defineGetter__",
  "__defineSetter__",
  "__lookupGetter__",
  "__lookupSetter__",
]);

/** Whether a file is a tool file: any script at any depth under a `tools/` folder, tests too. */
function isToolFile(filename: string): boolean {
  const path = filename.replaceAll("\\", "/");
  return /(^|\/)tools\/.+\.[cm]?[jt]sx?$/.test(path);
}

/** Whether an import specifier is one a tool file may use (no tests, no subfolders). */
function allowedSource(source: string): boolean {
  return source === "zod" || source === "../runtime/broker/tool.ts" ||
    (/^\.\/[a-z0-9_]+\.ts$/.test(source) && !source.endsWith("_test.ts"));
}

type Node = { type: string; parent?: Node; [key: string]: unknown };

/** Whether an identifier is a name in a property position (`x.Deno`, `{ Deno: 1 }`), not a reference. */
function isPropertyName(node: Node): boolean {
  const parent = node.parent;
  if (!parent) return false;
  if (parent.type === "MemberExpression") return parent.property === node && !parent.computed;
  if (parent.type === "Property" || parent.type === "MethodDefinition") {
    return parent.key === node && !parent.computed;
  }
  if (parent.type === "TSPropertySignature" || parent.type === "PropertyDefinition") {
    return parent.key === node && !parent.computed;
  }
  return false;
}

const plugin: Deno.lint.Plugin = {
  name: "libos",
  rules: {
    "tools-purity": {
      create(ctx) {
        if (!isToolFile(ctx.filename)) return {};
        const checkSource = (node: Deno.lint.Node, source: string) => {
          if (!allowedSource(source)) {
            ctx.report({
              node,
              message:
                `A tool may import only zod, ../runtime/broker/tool.ts and files of tools/, not ${
                  JSON.stringify(source)
                }; reach the world through the primitives in ctx`,
            });
          }
        };
        return {
          ImportDeclaration(node) {
            checkSource(node, node.source.value);
          },
          ExportAllDeclaration(node) {
            checkSource(node, node.source.value);
          },
          ExportNamedDeclaration(node) {
            if (node.source) checkSource(node, node.source.value);
          },
          ImportExpression(node) {
            ctx.report({ node, message: "A tool may not import() anything at run time" });
          },
          MetaProperty(node) {
            ctx.report({ node, message: "A tool may not use import.meta" });
          },
          MemberExpression(node) {
            const property = node.property as unknown as Node & { name?: string; value?: unknown };
            if (node.computed) {
              // Only a literal key may be computed: `o["con" + "structor"]` hides the name.
              if (property.type !== "Literal" || typeof property.value !== "number") {
                const key = property.type === "Literal" ? String(property.value) : undefined;
                if (key === undefined || BANNED_PROPERTIES.includes(key)) {
                  ctx.report({
                    node,
                    message:
                      "A tool may index objects only with a number or a plain property name (o.key)",
                  });
                }
              }
              return;
            }
            if (property.name !== undefined && BANNED_PROPERTIES.includes(property.name)) {
              ctx.report({
                node,
                message:
                  `A tool may not reach .${property.name}: it leads to the Function constructor or the prototype chain`,
              });
            }
          },
          Identifier(node) {
            if (!BANNED.includes(node.name)) return;
            if (isPropertyName(node as unknown as Node)) return;
            ctx.report({
              node,
              message:
                `A tool may not reference ${node.name}; it reaches the world only through the primitives in ctx`,
            });
          },
        };
      },
    },
  },
};

export default plugin;
