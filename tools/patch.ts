/**
 * `apply_patch`: edits, creates, deletes and moves several workspace files in one call, in the
 * patch format models trained on Codex emit (or a unified diff). The filesystem primitive parses
 * it, decides every path, asks once for the whole patch and applies all files or none.
 *
 * @module
 */
import { z } from "zod";
import { WRITE_CHARS_MAX } from "./caps.ts";
import { syscall, type ToolSpec } from "../runtime/broker/tool.ts";

const PatchArgs = z.object({
  patch: z.string().min(1).max(WRITE_CHARS_MAX).describe(
    'The whole patch, from "*** Begin Patch" to "*** End Patch" (or a unified diff)',
  ),
}).strict();

/** What a model reads about `apply_patch`: what, when, limits, one example. */
const DESCRIPTION =
  `Apply a patch that adds, updates, deletes or moves workspace files — all files or none.

Use it for any change to existing files (several hunks, several files at once) and to create, delete or rename files; prefer it to rewriting a whole file. Read a file before patching it: context lines must match the file.

Format (paths relative to your working directory):
*** Begin Patch
*** Add File: <path>          every line of the new file, each prefixed with +
*** Delete File: <path>
*** Update File: <path>
*** Move to: <new path>       optional, right after Update File: rename it too
@@ <optional line to find first, e.g. a function signature>
 <context line, prefixed with a space>
-<line to remove>
+<line to add>
*** End of File               optional: the hunk ends at the end of the file
*** End Patch

Give about 3 lines of context above and below each change, copied exactly; use several @@ hunks for several places in one file, in file order. Matching tolerates trailing-whitespace differences; the file's line endings (LF or CRLF) are kept. A unified diff (--- a/x, +++ b/x, @@ -l,n +l,n @@) is accepted too.

Limits: text files only; a hunk that does not match, a malformed line, a path outside the workspace or one you may not touch refuses the whole patch and nothing changes — the error names the line or hunk, so read the file again and send a corrected patch. Add File over an existing file replaces it. A patch that needs approval shows your human every file and the whole diff, once.

Example:
*** Begin Patch
*** Update File: src/app.py
@@ def greet(name):
-    return "Hello " + name
+    return f"Hello, {name}!"
*** Add File: tests/test_greet.py
+from src.app import greet
+
+def test_greet():
+    assert greet("Ada") == "Hello, Ada!"
*** End Patch`;

/** `apply_patch`: a multi-file patch, decided and applied as one action. */
export const applyPatchTool: ToolSpec<typeof PatchArgs, "fs.apply_patch"> = {
  name: "apply_patch",
  description: DESCRIPTION,
  args: PatchArgs,
  effects: ["fs.write", "fs.delete"],
  run: (args, ctx) => ctx.fs.applyPatch(args.patch),
  syscalls: {
    "fs.apply_patch": syscall(PatchArgs, (a, sys) => sys.fs.applyPatch({ patch: a.patch })),
  },
};
