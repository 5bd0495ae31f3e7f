export { InProcessQueue } from "./inprocess-queue.ts";
