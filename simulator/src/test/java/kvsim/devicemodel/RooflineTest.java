package kvsim.devicemodel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import kvsim.core.ModelPreset;
import org.junit.jupiter.api.Test;

/** The roofline: prefill compute-bound, decode bandwidth-bound, the larger of the two. */
class RooflineTest {
  private final Roofline roofline = Roofline.of(ModelPreset.parse("llama-2-7b"), DeviceSpec.parse("h100-80"));

  @Test
  void decodeOfOneTokenIsTheTimeToReadTheWeights() {
    // 6.738e9 parameters × 2 B = 13.476 GB at 3.35 TB/s × 0.8 = 5.028 ms.
    assertEquals(5_028_358, roofline.forwardNanos(1, 0), 1);
  }

  @Test
  void aLongPrefillIsComputeBound() {
    // 2 × 6.738e9 × 4096 tokens / (989 TFLOP/s × 0.5) = 111.6 ms, far above the 5 ms memory time.
    assertEquals(2.0 * 6.738e9 * 4096 / (989e12 * 0.5) * 1e9, roofline.forwardNanos(4096, 0), 1);
  }

  @Test
  void readingTheKvCacheAddsToTheMemoryTime() {
    long kv = 10L << 30; // 10 GiB of context read by a large decode batch
    double expected = (13.476e9 + kv) / (3.35e12 * 0.8) * 1e9;
    assertEquals(expected, roofline.forwardNanos(64, kv), 1);
  }

  @Test
  void efficienciesOutsideZeroToOneAreRefused() {
    ModelPreset m = ModelPreset.defaultModel();
    DeviceSpec d = DeviceSpec.defaultDevice();
    assertThrows(IllegalArgumentException.class, () -> new Roofline(m, d, 0, 0.8));
    assertThrows(IllegalArgumentException.class, () -> new Roofline(m, d, 0.5, 1.5));
    assertThrows(IllegalArgumentException.class, () -> new Roofline(m, d, Double.NaN, 0.8));
  }
}
