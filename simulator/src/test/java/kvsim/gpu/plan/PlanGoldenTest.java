package kvsim.gpu.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import kvsim.gpu.replay.GpuReplay;
import kvsim.run.RunRequest;
import kvsim.run.RunSpec;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The plans of {@code churn:ops=100,seed=0} match the golden plans under {@code
 * src/test/resources/gpu/} byte for byte, raw and in arena mode for first-fit, pytorch-caching with
 * expandable segments, paged and vattention. A deliberate change of the planner rewrites them with
 * {@code -Dkvsim.gpu.writeGolden=src/test/resources/gpu} (then review the diff).
 */
class PlanGoldenTest {
  static final String WORKLOAD = "churn:ops=100,seed=0";

  /** Returns the plan of the golden workload in {@code mode} on {@code allocator}. */
  static Plan plan(String mode, String allocator, String torchAllocConf) throws IOException {
    return planOf(WORKLOAD, mode, allocator, torchAllocConf);
  }

  /** Returns the plan of {@code workload} in {@code mode} on {@code allocator}, probing every 25 events. */
  static Plan planOf(String workload, String mode, String allocator, String torchAllocConf) throws IOException {
    RunRequest request = RunRequest.of(workload).withAllocators(List.of(allocator)).withTorchAllocConf(torchAllocConf);
    RunSpec spec = RunSpec.resolve(request, new PrintWriter(new StringWriter()));
    return GpuReplay.plan(new GpuReplay.Setting(spec, mode.equals("arena"), 25), Planner.DEFAULT_GRANULARITY_BYTES);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({
    "plan-raw.jsonl, raw, first-fit, ''",
    "plan-arena-first-fit.jsonl, arena, first-fit, ''",
    "plan-arena-pytorch-caching-expandable.jsonl, arena, pytorch-caching, expandable_segments:True",
    "plan-arena-paged.jsonl, arena, paged, ''",
    "plan-arena-vattention.jsonl, arena, vattention, ''",
  })
  void planMatchesGolden(String file, String mode, String allocator, String conf) throws IOException {
    String text = plan(mode, allocator, conf.isEmpty() ? null : conf).toJsonLines();
    String dir = System.getProperty("kvsim.gpu.writeGolden");
    if (dir != null) {
      Files.writeString(Path.of(dir, file), text, StandardCharsets.UTF_8);
    }
    try (InputStream in = PlanGoldenTest.class.getResourceAsStream("/gpu/" + file)) {
      assertNotNull(in, "golden plan " + file + " is missing");
      assertEquals(new String(in.readAllBytes(), StandardCharsets.UTF_8), text, file);
    }
    assertTrue(text.lines().count() > 2, "the plan has operations");
  }
}
