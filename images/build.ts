/**
 * `deno task images`: turns the built-in images' YAML (`images/*.yaml`, the source) into
 * `images/builtin_images.json`, which the runtime imports. Parsing happens here, once, because
 * the YAML library reads environment variables on every token — a runtime embedded without env
 * permission could not parse its own images. `images/builtin_test.ts` fails when the JSON no
 * longer matches the YAML.
 *
 * @module
 */
import { parseStrictYaml } from "../runtime/base/strict_yaml.ts";
import { builtinImageSources } from "./builtin.ts";

/** The JSON text the YAML sources make (deterministic: files in name order, two-space indent). */
export function buildBuiltinImages(): string {
  const images = Object.entries(builtinImageSources())
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([file, yaml]) => parseStrictYaml(yaml, { source: `images/${file}` }));
  return JSON.stringify(images, null, 2) + "\n";
}

if (import.meta.main) {
  const target = new URL("./builtin_images.json", import.meta.url);
  Deno.writeTextFileSync(target, buildBuiltinImages());
  Deno.stdout.writeSync(new TextEncoder().encode(`wrote ${target.pathname}\n`));
}
