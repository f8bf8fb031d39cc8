package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher keeps no start-up cache when a training run fails, and then says nothing: every
 * run would silently start slower. So each training command must still succeed and write its result.
 */
class TrainingTest {
  @Test
  void everyTrainingRunSucceeds(@TempDir Path dir) throws IOException {
    assertEquals(0, Training.run(dir), "failed training runs (named on standard error)");
    for (String written : new String[] {"compare/summary.json", "sweep/summary.json", "sweep-long/summary.json", "blocks.jsonl", "serving/summary.json"}) {
      assertTrue(Files.size(dir.resolve(written)) > 0, written);
    }
    long blockLines = Files.readAllLines(dir.resolve("blocks.jsonl")).size();
    assertEquals(Training.blockScript(60, 7).size(), blockLines, "one output line per script line");
  }

  @Test
  void everyRunOfTheSweepsTrainingSucceeds(@TempDir Path dir) throws IOException {
    assertEquals(0, Training.runSweeps(dir), "failed training runs (named on standard error)");
    for (String written : new String[] {"sweep/summary.json", "sweep/report.html", "sweep-long/summary.json", "sweep-data/summary.json"}) {
      assertTrue(Files.size(dir.resolve(written)) > 0, written);
    }
  }

  @Test
  void everyRunOfTheBlocksTrainingSucceeds(@TempDir Path dir) throws IOException {
    assertEquals(0, Training.runBlocks(dir), "failed training runs (named on standard error)");
    assertEquals(Training.blockScript(60, 7).size(), Files.readAllLines(dir.resolve("blocks.jsonl")).size());
    // The v0 script's 10 operations and the scheduler's 12, one output line each.
    assertEquals(10, Files.readAllLines(dir.resolve("v0.out.jsonl")).size());
    assertEquals(12, Files.readAllLines(dir.resolve("steps.out.jsonl")).size());
  }
}
