/**
 * The hardline layer of `decide()` (DESIGN §3, layer 1): every shell action is unwrapped into the
 * commands it will run, and any that breaks the hardline floor denies the action — in every mode,
 * whatever a rule or capability says.
 *
 * @module
 */
import type {
  Action,
  Decision,
  DecisionContext,
  DecisionLayer,
  Subject,
} from "../authority/decide.ts";
import { hardlineRule, isForkBomb } from "./hardline.ts";
import { analyzeArgv, type ScriptAnalyzer, UNPARSED } from "./shell_argv.ts";
import { ProgramTable } from "./shell_programs.ts";
import { SCRIPT_LIMITS } from "./shell_script.ts";

/** Layer 1: the hardline floor, for shell actions. */
export class HardlineLayer implements DecisionLayer {
  readonly #scripts: () => ScriptAnalyzer | null;

  /** `scripts` gives the shell parser once loaded (before that, scripts are opaque). */
  constructor(scripts: () => ScriptAnalyzer | null = () => null) {
    this.#scripts = scripts;
  }

  /** The programs-that-run-programs table, built on the first command (about 15 ms). */
  #table: ProgramTable | undefined;
  get #programs(): ProgramTable {
    return this.#table ??= new ProgramTable();
  }

  /** Denies a shell action any of whose commands breaks the floor; passes everything else. */
  decide(_subject: Subject, action: Action, _context: DecisionContext): Decision | undefined {
    const r = action.resource;
    if (r.type !== "shell" || r.argv.length === 0) return undefined;
    for (const command of analyzeArgv(r.argv, this.#scripts(), this.#programs)) {
      // A script body the floor cannot look into (the parser is not loaded) could hide what
      // the floor forbids: refused, never passed on as "nothing to forbid".
      if (command.kind === "opaque" && command.reason === UNPARSED) {
        return { effect: "deny", reason: "hardline:unparsed-script", layer: "hardline" };
      }
      const rule = hardlineRule(command.argv) ??
        (command.argv.some((t) => t.length <= SCRIPT_LIMITS.maxBytes && isForkBomb(t))
          ? "fork-bomb"
          : undefined);
      if (rule) return { effect: "deny", reason: `hardline:${rule}`, layer: "hardline" };
    }
    return undefined;
  }
}
