package kvsim.alloc.caching;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Parsing of PyTorch's allocator configuration string, after its parsers {@code
 * c10/cuda/CUDAAllocatorConfig.cpp} (2.6-2.8 era) and {@code c10/core/AllocatorConfig.cpp}
 * (2025-26).
 */
class TorchAllocConfTest {
  private static final long MiB = 1L << 20;

  @Test
  void anEmptyStringGivesPyTorchsDefaults() {
    TorchAllocConf c = TorchAllocConf.parse("");
    assertEquals(TorchAllocConf.UNLIMITED, c.maxSplitSizeBytes());
    assertEquals(20 * MiB, c.maxNonSplitRoundingBytes());
    assertArrayEquals(new int[16], c.roundupPower2Divisions());
    assertFalse(c.expandableSegments());
    assertEquals(0.0, c.garbageCollectionThreshold());
    assertFalse(c.fractionSet());
  }

  @Test
  void theListFormGivesOneValuePerInterval() {
    TorchAllocConf c = TorchAllocConf.parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
    assertArrayEquals(new int[] {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8, 8, 8, 8, 8}, c.roundupPower2Divisions());
  }

  @Test
  void theLegacyParserOverwritesTheLastKeyWithTheGreaterThanValue() {
    TorchAllocConf c =
        TorchAllocConf.parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", TorchAllocConf.Dialect.LEGACY);
    assertArrayEquals(new int[] {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 8, 8, 8, 8, 8, 8}, c.roundupPower2Divisions());
  }

  @Test
  void theIssueExampleParsesEveryOption() {
    TorchAllocConf c =
        TorchAllocConf.parse("expandable_segments:True,max_split_size_mb:512,roundup_power2_divisions:[256:1,512:2,>:8]");
    assertTrue(c.expandableSegments());
    assertEquals(512 * MiB, c.maxSplitSizeBytes());
    assertArrayEquals(new int[] {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 8, 8, 8, 8, 8, 8}, c.roundupPower2Divisions());
  }

  @Test
  void intervalsNeverNamedStayOffInASparseList() {
    TorchAllocConf c = TorchAllocConf.parse("roundup_power2_divisions:[64:2,1024:4]");
    assertArrayEquals(new int[] {2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 4, 0, 0, 0, 0, 0}, c.roundupPower2Divisions());
  }

  @Test
  void keysBeyondTheLastIntervalAreClampedToIt() {
    TorchAllocConf c = TorchAllocConf.parse("roundup_power2_divisions:[1:2,65536:16]");
    assertEquals(16, c.roundupPower2Divisions()[15]);
    assertEquals(2, c.roundupPower2Divisions()[0]);
    assertEquals(0, c.roundupPower2Divisions()[14]);
  }

  @Test
  void aSingleNumberSetsEveryInterval() {
    int[] d = TorchAllocConf.parse("roundup_power2_divisions:4").roundupPower2Divisions();
    for (int v : d) {
      assertEquals(4, v);
    }
  }

  @Test
  void spacesAreIgnoredAsPyTorchsLexerDropsThem() {
    TorchAllocConf c = TorchAllocConf.parse(" max_split_size_mb : 256 , expandable_segments : False ");
    assertEquals(256 * MiB, c.maxSplitSizeBytes());
  }

  @Test
  void twentyMebibytesIsTheSmallestMaxSplitSize() {
    assertEquals(20 * MiB, TorchAllocConf.parse("max_split_size_mb:20").maxSplitSizeBytes());
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> TorchAllocConf.parse("max_split_size_mb:19"));
    assertTrue(e.getMessage().contains("max_split_size_mb too small"), e.getMessage());
    assertEquals(64 * MiB, TorchAllocConf.parse("max_non_split_rounding_mb:64").maxNonSplitRoundingBytes());
  }

  @Test
  void largeSegmentSizeAlsoMovesTheDefaultNonSplitRounding() {
    TorchAllocConf c = TorchAllocConf.parse("large_segment_size_mb:64");
    assertEquals(64 * MiB, c.largeSegmentSizeBytes());
    assertEquals(64 * MiB, c.maxNonSplitRoundingBytes());
  }

  @ParameterizedTest(name = "''{0}'' is refused")
  @CsvSource(
      delimiter = '|',
      value = {
        "roundup_power2_divisions:3|divisions has to be power of 2",
        "roundup_power2_divisions:[256:3]|power of 2 or 0",
        "roundup_power2_divisions:[300:2]|intervals have to be power of 2",
        "roundup_power2_divisions:[256:2|closing bracket",
        "garbage_collection_threshold:0|too small",
        "garbage_collection_threshold:1.0|too big",
        "garbage_collection_threshold:abc|not a number",
        "expandable_segments:true|True/False",
        "max_split_size_mb:lots|not an integer",
        "max_split_size_mb|expected ':'",
        "max_split_size_mb:|has no value",
        "no_such_option:1|Unrecognized CachingAllocator option",
        "backend:cudaMallocAsync|not modelled",
        "per_process_memory_fraction:1.5|[0, 1]",
        "max_split_size_mb:512,|trailing ','",
        "large_segment_size_mb:3|even number",
      })
  void malformedStringsAreClearErrors(String text, String expected) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TorchAllocConf.parse(text));
    assertTrue(e.getMessage().contains(expected), "message was: " + e.getMessage());
  }

  @Test
  void optionsWithoutEffectOnPlacementAreAccepted() {
    TorchAllocConf c =
        TorchAllocConf.parse("backend:native,release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:False,pinned_num_register_threads:8");
    assertFalse(c.expandableSegments());
  }

  @Test
  void theCanonicalFormParsesBackToTheSameOptions() {
    TorchAllocConf c =
        TorchAllocConf.parse("max_split_size_mb:300,roundup_power2_divisions:[256:1,512:2,>:8],garbage_collection_threshold:0.6,per_process_memory_fraction:0.5,expandable_segments:True");
    TorchAllocConf again = TorchAllocConf.parse(c.canonical());
    assertEquals(c.canonical(), again.canonical());
    assertArrayEquals(c.roundupPower2Divisions(), again.roundupPower2Divisions());
    assertEquals(0.5, again.perProcessMemoryFraction());
  }
}
