/**
 * `deno task schema`: writes the JSON Schema of the public event log, generated from the zod
 * definitions in `runtime/audit/events.ts`, to `schema/events.v<EVENT_VERSION>.json`.
 * `tests/event_schema_test.ts` fails when the file and the code differ.
 *
 * @module
 */
import { EVENT_VERSION, eventJsonSchema } from "../runtime/audit/events.ts";

/** The schema file's path for this build's event version, relative to the repository. */
export function schemaFileUrl(version: number = EVENT_VERSION): URL {
  return new URL(`./events.v${version}.json`, import.meta.url);
}

/** The schema file's exact text: two-space JSON and a final newline (what `deno fmt` keeps). */
export function schemaText(): string {
  return `${JSON.stringify(eventJsonSchema(), null, 2)}\n`;
}

if (import.meta.main) {
  const url = schemaFileUrl();
  await Deno.writeTextFile(url, schemaText());
  // deno-lint-ignore no-console
  console.log(`wrote ${url.pathname}`);
}
