package kvsim.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import kvsim.core.ModelPreset;
import kvsim.core.OptionMap;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.MemoryPlan;
import kvsim.devicemodel.Region;
import kvsim.registry.AllocatorRegistry;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * An allocator option that the model would round, clamp or leave without a block is refused when
 * the model is built from the registry, with one line naming the allocator, the option, the value
 * as given and why; the nearest good values build.
 */
class AllocatorOptionRulesTest {
  /** The default device's region under test: 80 GiB. */
  private static final Region DEVICE = MemoryPlan.whole(DeviceSpec.defaultDevice()).testedRegion();

  private static Allocator build(String allocator, String key, String value) {
    return AllocatorRegistry.create(new AllocatorContext(allocator, DEVICE, DeviceSpec.defaultDevice(), ModelPreset.defaultModel(), Map.of(key, value)));
  }

  @ParameterizedTest(name = "{0}.{1}={2}")
  @CsvSource(
      delimiter = '|',
      value = {
        "first-fit | alignment | 3 | must be a power of two",
        "first-fit | alignment | 1000 | must be a power of two",
        "best-fit | alignment | 3KiB | must be a power of two",
        "buddy | min-block | 3MiB | must be a power of two",
        "buddy | min-block | 128GiB | is larger than the region under test (80.00 GiB), which then holds no block",
        "slab | block-size | 100GiB | is larger than the region under test (80.00 GiB), which then holds no block",
        "slab | block-size | 3 | blocks of the region under test (80.00 GiB), more than 2147483639; use a larger block-size",
        "multi-slab | classes | 1GiB:1 | class 1GiB:1: block size is larger than its 1 % of the region under test (819.20 MiB)",
        "multi-slab | classes | 2MiB:50,3:50 | class 3B:50: block size makes 14316557653 blocks",
        "pytorch-caching | torch-alloc-conf | max_split_size_mb:99999999999999999 | max_split_size_mb too large, must be <= 8796093022207",
        "paged | block-tokens | 0 | must be a positive number of tokens",
        "vattention | page-size | 3MiB | must be a power of two from 64 KiB to 2 MiB",
      })
  void anOptionTheModelWouldRoundOrLeaveEmptyIsRefused(String allocator, String key, String value, String why) {
    OptionMap.OptionException e = assertThrows(OptionMap.OptionException.class, () -> build(allocator, key, value));
    assertEquals(key, e.key());
    String message = e.getMessage();
    assertTrue(message.startsWith("allocator " + allocator + ": option " + key + "='" + value + "': "), message);
    assertTrue(message.contains(why), message);
    assertFalse(message.contains("\n"), message);
  }

  @ParameterizedTest(name = "{0}.{1}={2}")
  @CsvSource(
      delimiter = '|',
      value = {
        "first-fit | alignment | 1",
        "first-fit | alignment | 4KiB",
        "best-fit | alignment | 2MiB",
        "buddy | min-block | 64GiB",
        "slab | block-size | 3MiB",
        "slab | block-size | 80GiB",
        "multi-slab | classes | 1GiB:2,2MiB:50",
        "pytorch-caching | torch-alloc-conf | max_split_size_mb:8796093022207",
      })
  void theNearestGoodValuesBuild(String allocator, String key, String value) {
    Allocator a = build(allocator, key, value);
    assertEquals(allocator, a.name());
  }
}
