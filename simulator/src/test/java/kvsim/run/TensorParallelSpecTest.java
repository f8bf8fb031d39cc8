package kvsim.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import kvsim.config.ServingSettings;
import kvsim.config.Settings;
import kvsim.core.InputException;
import org.junit.jupiter.api.Test;

/** The memory plan of a serving run split over GPUs, per GPU and in total, and the echo that says so. */
class TensorParallelSpecTest {
  private static final String WORKLOAD = "requests:preset=vllm-sharegpt,rate=1,count=10,seed=1";

  private static ServingSpec spec(Settings s) {
    return ServingSpec.resolve(ServingSpec.Request.of(WORKLOAD, List.of("vllm"), s));
  }

  @Test
  void opt66bOnFourA100s40GbHoldsFivePointThreeGibOfKvPerGpu() {
    ServingSpec s = spec(Settings.none().and(ServingSettings.MODEL, "opt-66b").and(ServingSettings.DEVICE, "4xa100-40"));
    assertEquals(4, s.tensorParallel());
    assertEquals("a100-40", s.device().name());
    // Per GPU: 0.9 × 40 GiB = 38,654,705,664 B, less a quarter of the weights (65,719,701,504 × 2 B / 4 = 32,859,850,752)
    // and the activations of 2,048 tokens × a quarter of the MLP width (9,216) × 4 B = 75,497,472: 5,719,357,440 B.
    assertEquals(32_859_850_752L, s.model().weightBytes());
    assertEquals(5_719_357_440L, s.kvMemoryBytes());
    // 589,824 B per token per GPU, 16 tokens a block: 606 blocks, 9,696 slots (the paper's Table 1: 9.7K).
    assertEquals(606, kvsim.serving.ServingSystems.numBlocks(s.kvMemoryBytes(), s.model().kvBytesPerToken(), 16));
    Map<String, Object> echo = s.configEcho();
    assertEquals(4, echo.get("tensor_parallel"));
    assertEquals(4 * 5_719_357_440L, echo.get("kv_memory_total_bytes"));
    assertEquals(Map.of("name", "4xa100-40", "capacity_bytes", 40L << 30, "gpus", 4), echo.get("device"));
    // The same split given as an option on one GPU's preset.
    ServingSpec t = spec(Settings.none().and(ServingSettings.MODEL, "opt-66b").and(ServingSettings.DEVICE, "a100-40").and(ServingSettings.TENSOR_PARALLEL, "4"));
    assertEquals(s.kvMemoryBytes(), t.kvMemoryBytes());
  }

  @Test
  void oneGpuEchoesNothingNew() {
    Map<String, Object> echo = spec(Settings.none()).configEcho();
    assertFalse(echo.containsKey("tensor_parallel"));
    assertFalse(echo.containsKey("kv_memory_total_bytes"));
    assertEquals(Map.of("name", "h100-80", "capacity_bytes", 80L << 30), echo.get("device"));
  }

  @Test
  void aDegreeThatContradictsThePresetOrTheHeadsIsRefused() {
    InputException e = assertThrows(InputException.class,
        () -> spec(Settings.none().and(ServingSettings.MODEL, "opt-66b").and(ServingSettings.DEVICE, "4xa100-40").and(ServingSettings.TENSOR_PARALLEL, "2")));
    assertTrue(e.getMessage().contains("2 contradicts") && e.getMessage().contains("4xa100-40, which is 4 GPUs"), e.getMessage());
    e = assertThrows(InputException.class,
        () -> spec(Settings.none().and(ServingSettings.MODEL, "opt-13b").and(ServingSettings.DEVICE, "a100-80").and(ServingSettings.TENSOR_PARALLEL, "3")));
    assertTrue(e.getMessage().contains("opt-13b has 40 attention heads, which 3 GPUs cannot split evenly"), e.getMessage());
    e = assertThrows(InputException.class,
        () -> spec(Settings.none().and(ServingSettings.MODEL, "opt-66b").and(ServingSettings.DEVICE, "2xa100-40")));
    assertTrue(e.getMessage().contains("the weights of opt-66b per GPU (of 2)"), e.getMessage());
  }
}
