/**
 * The services every runtime component is built from. Components take a `RuntimeCore` (plus
 * their own extras) instead of each listing the same five dependencies.
 *
 * @module
 */
import type { AuditLog } from "./audit_log.ts";
import type { Clock } from "../base/clock.ts";
import type { EventLog } from "./event_log.ts";
import type { IdSource } from "../base/ids.ts";
import type { Store } from "../store/store.ts";

/** Store, audit log, event log, clock and id source of one runtime. */
export interface RuntimeCore {
  readonly store: Store;
  readonly audit: AuditLog;
  readonly events: EventLog;
  readonly clock: Clock;
  readonly ids: IdSource;
}
