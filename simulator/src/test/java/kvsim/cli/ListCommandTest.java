package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import kvsim.registry.AllocatorRegistry;
import kvsim.testing.CliRun;
import org.junit.jupiter.api.Test;

/** {@code kvsim list} names every registered allocator and every preset. */
class ListCommandTest {
  @Test
  void listNamesEveryRegisteredAllocator() {
    CliRun run = CliRun.of("list").ok();
    for (String name : AllocatorRegistry.names()) {
      assertTrue(run.out().contains(name), "missing " + name + " in\n" + run.out());
    }
    assertTrue(run.out().contains("h100-80"));
    assertTrue(run.out().contains("llama-2-7b"));
  }

  @Test
  void listShowsTheCapabilitiesOfEveryAllocator() {
    CliRun run = CliRun.of("list").ok();
    for (AllocatorRegistry.Entry e : AllocatorRegistry.entries()) {
      String line = run.out().lines().filter(l -> l.startsWith("  " + e.name() + " ")).findFirst().orElseThrow();
      assertTrue(line.contains(" " + e.capabilityLabels() + " ") && line.endsWith(e.description()), line);
    }
  }

  @Test
  void listNamesTheVllmReleaseTheV1SchedulerFollows() {
    CliRun run = CliRun.of("list").ok();
    String systems = run.out().substring(run.out().indexOf("Serving systems"));
    assertTrue(systems.contains("follow " + kvsim.serving.VllmV1Scheduler.UPSTREAM + ","), systems);
    assertTrue(kvsim.serving.VllmV1Scheduler.UPSTREAM.contains("ec5ef0a"), kvsim.serving.VllmV1Scheduler.UPSTREAM);
  }

  @Test
  void versionPrintsTheProjectVersion() {
    CliRun run = CliRun.of("--version").ok();
    assertTrue(run.out().startsWith("kvsim "), run.out());
  }

  @Test
  void anUnknownSubcommandIsAUsageError() {
    assertEquals(2, CliRun.of("no-such-command").exitCode());
  }
}
