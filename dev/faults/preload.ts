/**
 * `node --import ./dev/faults/preload.ts <entry>`: installs the fault seam's hook from
 * `HARNESS_FAULTS` before the entry builds its runtime (see `process-faults.ts`).
 */
import { installFaultsFromEnv } from "./process-faults.ts";

installFaultsFromEnv();
