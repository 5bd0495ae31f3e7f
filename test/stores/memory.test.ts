import { createMemoryStore } from "../../src/stores/memory/index.ts";
import { describeStoreConformance } from "../../src/storetest/index.ts";

describeStoreConformance("memory", async (clock) => createMemoryStore({ clock }));
