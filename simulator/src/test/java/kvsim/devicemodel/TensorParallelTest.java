package kvsim.devicemodel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import org.junit.jupiter.api.Test;

/** A model split over GPUs: one GPU's share, the divisibility rules, the multi-GPU presets and the forward time with its all-reduces. */
class TensorParallelTest {
  private static final ModelPreset OPT_66B = ModelPreset.parse("opt-66b");

  @Test
  void oneGpuOfOpt66bOnFourHoldsAQuarterOfTheWeightsAndOfTheKvHeads() {
    ModelPreset share = OPT_66B.perGpu(4);
    assertEquals(72, OPT_66B.heads());
    assertEquals(18, share.kvHeads());
    // 65,719,701,504 parameters / 4, in fp16.
    assertEquals(16_429_925_376L, share.parameters());
    assertEquals(32_859_850_752L, share.weightBytes());
    // 2 × 64 layers × 18 KV heads × 128 × 2 B = 589,824 B per token per GPU, a quarter of the whole 2,359,296.
    assertEquals(589_824, share.kvBytesPerToken());
    assertEquals(2_359_296, OPT_66B.kvBytesPerToken());
    // The MLP width, and with it the activation estimate, is split; the width of the hidden states is not.
    assertEquals(9216, share.intermediateSize());
    assertEquals(9216, share.hiddenSize());
    assertEquals(OPT_66B, OPT_66B.perGpu(1));
  }

  @Test
  void theDegreeMustDivideTheHeadsAndKvHeadsFewerThanItAreReplicated() {
    assertEquals("opt-13b has 40 attention heads, which 3 GPUs cannot split evenly (the degree must divide them)",
        ModelPreset.parse("opt-13b").tensorParallelRefusal(3));
    assertNull(ModelPreset.parse("opt-13b").tensorParallelRefusal(8));
    // Llama-3-70B: 64 query heads, 8 KV heads; over 16 GPUs each holds one KV head, replicated twice (vLLM's max(1, 8 / 16)).
    ModelPreset llama70 = ModelPreset.parse("llama-3-70b");
    assertEquals(1, llama70.perGpu(16).kvHeads());
    assertEquals(2L * 80 * 1 * 128 * 2, llama70.perGpu(16).kvBytesPerToken());
    // Six KV heads cannot be split over four GPUs, nor replicated onto them.
    ModelPreset odd = new ModelPreset("odd", 2, 6, 128, 2, 3072, 8192, 1_000_000_000L, 2048);
    assertEquals("odd has 6 KV heads, which 4 GPUs can neither split evenly nor replicate (the degree must divide them or be a multiple of them)",
        odd.tensorParallelRefusal(4));
    assertThrows(IllegalArgumentException.class, () -> odd.perGpu(4));
  }

  @Test
  void multiGpuPresetsAreTwoFourAndEightOfEachDevice() {
    DeviceGroup g = DeviceGroup.parse("4xA100-40");
    assertEquals("4xa100-40", g.name());
    assertEquals(DeviceSpec.parse("a100-40"), g.gpu());
    assertEquals(4, g.gpus());
    assertEquals(1, DeviceGroup.parse("h100-80").gpus());
    assertEquals(1, DeviceGroup.parse("80GiB").gpus());
    assertTrue(DeviceGroup.presets().keySet().containsAll(java.util.List.of("2xh100-80", "4xh100-80", "8xh100-80", "4xa100-40", "8xa100-80", "2xa40")));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DeviceGroup.parse("3xa100-40"));
    assertTrue(e.getMessage().startsWith("unknown device '3xa100-40': the multi-GPU presets are 2x, 4x and 8x"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> DeviceGroup.parse("4xfoo"));
    assertTrue(e.getMessage().startsWith("unknown device '4xfoo'") && e.getMessage().contains("4xa100-40"), e.getMessage());
  }

  @Test
  void oneGpuIsTimedExactlyAsBefore() {
    for (String m : new String[] {"llama-2-7b", "opt-13b", "llama-3-8b"}) {
      for (String d : new String[] {"a100-80", "h100-80", "h200-141", "a40"}) {
        ModelPreset model = ModelPreset.parse(m);
        DeviceSpec device = DeviceSpec.parse(d);
        ForwardTimeModel before = CostModels.choose(null, model, device, null, null);
        ForwardTimeModel now = CostModels.choose(null, model, device, 1, null, null);
        assertEquals(before, now, m + " on " + d);
        assertEquals(before.echo(), now.echo());
      }
    }
  }

  @Test
  void twoGpusAreSlowerPerTokenThanIdealScalingByTheirAllReduces() {
    ModelPreset model = ModelPreset.parse("llama-2-13b");
    DeviceSpec h100 = DeviceSpec.parse("h100-80");
    ForwardTimeModel one = CostModels.choose(null, model, h100, 1, null, null);
    ForwardTimeModel two = CostModels.choose(null, model, h100, 2, null, null);
    TensorParallelForwardTime split = assertInstanceOf(TensorParallelForwardTime.class, two);
    assertInstanceOf(MeasuredRoofline.class, split.inner());
    // A prefill of 2,048 tokens and a decode batch of 64 sequences with 1,000 tokens of context each (KV read halved per GPU).
    long kv = 64L * 1000 * model.kvBytesPerToken();
    long[][] shapes = {{2048, 0, 0, 1}, {0, 64, kv, 64}};
    for (long[] s : shapes) {
      long t1 = one.forwardNanos(s[0], s[1], s[2], (int) s[3]);
      long t2 = two.forwardNanos(s[0], s[1], s[2] / 2, (int) s[3]);
      assertTrue(t2 > t1 / 2, "slower than ideal: " + t2 + " vs " + t1 + " / 2");
      assertTrue(t2 < t1, "but faster than one GPU: " + t2 + " vs " + t1);
      // The difference from the share's own time is 2 × 40 layers + 1 all-reduces of tokens × 5,120 × 2 B, from the H100 table.
      long tokens = s[0] + s[1];
      double allReduce = 81 * AllReduce.builtIn("h100_dgx").nanos(2, tokens * 5120.0 * 2);
      assertEquals(Math.round(allReduce), t2 - split.inner().forwardNanos(s[0], s[1], s[2] / 2, (int) s[3]), 1);
    }
    assertEquals(2, two.echo().get("tensor_parallel"));
    assertEquals("measured-roofline", two.echo().get("forward"));
  }

  @Test
  void aProfileOrACalibrationsForwardSectionIsRefusedForASplitModel() {
    ModelPreset model = ModelPreset.parse("llama-2-7b");
    DeviceSpec a100 = DeviceSpec.parse("a100-80");
    InputException e = assertThrows(InputException.class, () -> CostModels.choose("profile", model, a100, 2, null, null));
    assertTrue(e.getMessage().startsWith("cost-model profile: the built-in profile tables were measured at tensor-parallel degree 1"), e.getMessage());
    // auto on a GPU with tables takes the measured roofline of the share, on one without the plain roofline.
    assertInstanceOf(MeasuredRoofline.class, ((TensorParallelForwardTime) CostModels.choose(null, model, a100, 2, null, null)).inner());
    assertInstanceOf(Roofline.class, ((TensorParallelForwardTime) CostModels.choose(null, model, DeviceSpec.parse("h200-141"), 2, null, null)).inner());
  }
}
