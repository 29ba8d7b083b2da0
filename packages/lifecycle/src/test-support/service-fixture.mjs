// A service run by run-service.int.test.ts as its own process, on the built
// helper: it registers one step per shutdown phase (out of order) and prints
// each step as it runs, so the test sees the order and the exit code.
import { z } from "zod";
import { envInt, envLogLevel, loadConfig } from "@roost/config";
import { runService } from "../../dist/index.js";

runService({
  config: () => loadConfig(z.object({ LOG_LEVEL: envLogLevel(), FIXTURE_STEP_MS: envInt(10, 0, 60_000) }), process.env),
  shutdownDeadlineMs: 1_000,
  start: async ({ config, shutdown }) => {
    const step = (name) => async () => {
      await new Promise((resolve) => setTimeout(resolve, config.FIXTURE_STEP_MS));
      process.stdout.write(`step ${name}\n`);
    };
    for (const phase of ["infrastructure", "database", "queues", "workers", "listeners"]) shutdown.add(phase, phase, step(phase));
    // Keeps the process alive as a listener would.
    setInterval(() => undefined, 1 << 30);
    process.stdout.write("started\n");
  },
});
