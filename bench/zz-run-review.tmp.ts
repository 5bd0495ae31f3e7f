import { startEmulators } from "../test/support/emulators.ts";
import { benchReviewCosts } from "./review-costs.ts";
const emulators = await startEmulators();
Object.assign(process.env, emulators.env);
try { await benchReviewCosts(); } finally { await emulators.stop(); }
