/**
 * The image registry (DESIGN §1): built-in images ship with libos; more are loaded from strict
 * YAML and persisted. A registry primitive: every use by a process is decided on `image:<id>` —
 * `read` to see or exec an image, `write` to load one, and `admin` to replace a built-in (an
 * operator must say so explicitly, too). Every load is audited.
 *
 * @module
 */
import type { Authority } from "../authority/authority.ts";
import type { Right } from "../authority/capability.ts";
import {
  CapabilityDeniedError,
  LibosError,
  NotFoundError,
  StoreError,
  ValidationError,
} from "../base/errors.ts";
import { AgentImage, type AgentImageInput, ImageId } from "./image.ts";
import type { RuntimeCore } from "../audit/runtime_core.ts";
import { parseStrictYaml } from "../base/strict_yaml.ts";

/** Who acts: a pid, or the operator. */
export type ImageActor = string;

/** The operator (the host or the command line). */
export const IMAGE_OPERATOR = "operator";

/** One line of the image list. */
export interface ImageSummary {
  readonly id: string;
  readonly description: string;
  readonly defaultTools: readonly string[];
  /** `builtin`, `loaded`, or `replaced` (a loaded image in place of a built-in). */
  readonly origin: "builtin" | "loaded" | "replaced";
}

/** How an image is loaded. */
export interface LoadOptions {
  /** Replace an image that exists (default false: loading an existing id is refused). */
  readonly replace?: boolean;
  /** The operator's explicit claim to replace a built-in (processes need `image:<id>` admin). */
  readonly admin?: boolean;
  /** A file name for messages. */
  readonly source?: string;
}

function validate(input: unknown, source: string): AgentImage {
  const parsed = AgentImage.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue?.path.length ? ` at ${issue.path.map(String).join(".")}` : "";
  throw new ValidationError(
    `${source} is not a valid agent image${where}: ${issue?.message ?? "invalid"}`,
    { cause: parsed.error },
  );
}

/** The images of one runtime. */
export class ImageRegistry {
  readonly #core: RuntimeCore;
  readonly #authority: Authority;
  readonly #builtins = new Map<string, AgentImage>();

  /**
   * Binds the registry to a runtime with its built-in images (validated here).
   * @throws {ValidationError} for an invalid built-in image (a bug in this build).
   */
  constructor(core: RuntimeCore, authority: Authority, builtins: readonly AgentImageInput[]) {
    this.#core = core;
    this.#authority = authority;
    for (const input of builtins) {
      const image = validate(input, `built-in image ${String(input.id)}`);
      this.#builtins.set(image.id, Object.freeze(image));
    }
  }

  /** The image an id names, with no check (spawn resolves images through this). */
  resolve(id: string): AgentImage | undefined {
    const row = ImageId.safeParse(id).success ? this.#core.store.getImage(id) : undefined;
    if (row) return this.#decode(row.id, row.data);
    return this.#builtins.get(id);
  }

  #decode(id: string, data: string): AgentImage {
    try {
      return AgentImage.parse(JSON.parse(data));
    } catch (error) {
      throw new StoreError(
        "store_corrupt",
        `Image ${id} is stored in a shape this libos does not understand; the database was edited outside libos`,
        { cause: error },
      );
    }
  }

  /**
   * Requires `right` on `image:<id>` for a process's operation `op`; a refusal (a deny, or an ask:
   * images have no route to a human) is recorded as the operation's decision and thrown.
   */
  #require(actor: ImageActor, op: string, id: string, right: Right, what: string): string {
    if (actor === IMAGE_OPERATOR) return "operator";
    const resource = { type: "image", key: id } as const;
    const decision = this.#authority.decide(actor, { resource, right });
    if (decision.effect === "allow") return decision.reason;
    this.#core.audit.append({
      actor,
      pid: actor,
      action: op,
      resource: `image:${id}`,
      decision: decision.effect,
      authority: decision.reason,
      detail: { right },
    });
    throw new CapabilityDeniedError(
      "capability_denied",
      `${actor} cannot ${what}: it lacks ${right} on image:${id} (${decision.reason})`,
      { reason: decision.reason },
    );
  }

  /**
   * An image, for an actor that may read it.
   * @throws {NotFoundError} for an unknown id; {@link CapabilityDeniedError} without read.
   */
  get(actor: ImageActor, id: string): AgentImage {
    const authority = this.#require(actor, "image.read", id, "read", `read image ${id}`);
    const image = this.resolve(id);
    if (actor !== IMAGE_OPERATOR) {
      // The operator's reads are not decided; a process's read is, found or not.
      this.#core.audit.append({
        actor,
        pid: actor,
        action: "image.read",
        resource: `image:${id}`,
        decision: "allow",
        authority,
        ...(image ? {} : { detail: { failed: "not_found" } }),
      });
    }
    if (!image) {
      throw new NotFoundError(
        `No image ${
          JSON.stringify(id)
        }; list them with "libos images list" or load one with "libos images load FILE"`,
      );
    }
    return image;
  }

  /**
   * Every image, built-in and loaded, in id order (for an actor, those it may read). Which
   * images a process is shown is a filter, not a decision: a listing leaves no record.
   */
  list(actor: ImageActor): ImageSummary[] {
    const out = new Map<string, ImageSummary>();
    for (const image of this.#builtins.values()) {
      out.set(image.id, {
        id: image.id,
        description: image.description,
        defaultTools: image.defaultTools,
        origin: "builtin",
      });
    }
    let after: string | undefined;
    for (;;) {
      const rows = this.#core.store.listImages(after, 500);
      for (const row of rows) {
        const image = this.#decode(row.id, row.data);
        out.set(image.id, {
          id: image.id,
          description: image.description,
          defaultTools: image.defaultTools,
          origin: this.#builtins.has(image.id) ? "replaced" : "loaded",
        });
      }
      if (rows.length < 500) break;
      after = rows[rows.length - 1]!.id;
    }
    return [...out.values()]
      .filter((s) =>
        actor === IMAGE_OPERATOR ||
        this.#authority.decide(actor, { resource: { type: "image", key: s.id }, right: "read" })
            .effect === "allow"
      )
      .sort((a, b) => a.id < b.id ? -1 : 1);
  }

  /**
   * Loads an image from strict YAML text. Loading needs `write` on `image:<id>`; an id that
   * exists needs `replace`; a built-in's id needs `admin` too.
   * @throws {ValidationError} for bad YAML or an invalid image; {@link CapabilityDeniedError}.
   */
  loadYaml(actor: ImageActor, yaml: string, options: LoadOptions = {}): AgentImage {
    const source = options.source ?? "the image";
    return this.load(actor, parseStrictYaml(yaml, { source }), options);
  }

  /** Loads an image from data (already parsed); see {@link loadYaml}. */
  load(actor: ImageActor, input: unknown, options: LoadOptions = {}): AgentImage {
    const source = options.source ?? "the image";
    const image = validate(input, source);
    // Decided before the step, so a refusal's audit record is not rolled back with it.
    let authority = this.#require(actor, "image.load", image.id, "write", `load image ${image.id}`);
    const builtin = this.#builtins.has(image.id);
    const stored = this.#core.store.getImage(image.id);
    // Replacing a built-in, or an image somebody else loaded, is an administrator's act: with
    // write alone a process could rewrite what the operator spawns next.
    const foreign = builtin || (stored !== undefined && stored.loader !== actor);
    if (foreign && options.replace) {
      if (actor === IMAGE_OPERATOR && !options.admin) {
        // The operator is refused by a rule, not a capability: recorded all the same.
        this.#core.audit.append({
          actor,
          action: "image.load",
          resource: `image:${image.id}`,
          decision: "deny",
          authority: builtin ? "image:builtin" : "image:foreign",
          detail: { admin: false },
        });
        throw new CapabilityDeniedError(
          "capability_denied",
          `Image ${image.id} is ${
            builtin ? "built in" : `loaded by ${stored?.loader}`
          }; replacing it needs admin (libos images load FILE --replace --admin)`,
          { reason: builtin ? "builtin" : "foreign" },
        );
      }
      authority = this.#require(
        actor,
        "image.load",
        image.id,
        "admin",
        `replace image ${image.id}`,
      );
    }
    try {
      return this.#loadStep(actor, image, builtin, authority, options);
    } catch (error) {
      // A process's load allowed, then refused by a precondition (it exists; replace was not
      // asked): the step and the allow record in it rolled back, so the allow is recorded here,
      // failed. (The operator's attempts are not decisions; its loads are audited.)
      if (actor === IMAGE_OPERATOR) throw error;
      this.#core.audit.append({
        actor,
        pid: actor,
        action: "image.load",
        resource: `image:${image.id}`,
        decision: "allow",
        authority,
        detail: { failed: error instanceof LibosError ? error.code : "failed" },
      });
      throw error;
    }
  }

  #loadStep(
    actor: ImageActor,
    image: AgentImage,
    builtin: boolean,
    authority: string,
    options: LoadOptions,
  ): AgentImage {
    return this.#core.store.step(() => {
      const exists = builtin || this.#core.store.getImage(image.id) !== undefined;
      if (exists && !options.replace) {
        throw new ValidationError(
          `Image ${image.id} exists; pass replace (libos images load FILE --replace) to replace it`,
        );
      }
      const now = Math.trunc(this.#core.clock.now());
      const previous = this.#core.store.getImage(image.id);
      this.#core.store.putImage({
        id: image.id,
        data: JSON.stringify(image),
        loader: actor,
        created: previous?.created ?? now,
        updated: now,
      });
      this.#core.audit.append({
        actor,
        ...(actor === IMAGE_OPERATOR ? {} : { pid: actor }),
        action: "image.load",
        resource: `image:${image.id}`,
        decision: "allow",
        authority,
        detail: { replaced: exists, builtin, tools: image.defaultTools.length },
      });
      return image;
    });
  }
}
