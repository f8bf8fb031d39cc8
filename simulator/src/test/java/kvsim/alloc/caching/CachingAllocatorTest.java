package kvsim.alloc.caching;

import static kvsim.alloc.caching.Harness.MiB;
import static kvsim.alloc.caching.Harness.addr;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocatorContext;
import kvsim.alloc.AllocatorMisuseException;
import kvsim.alloc.OomReason;
import kvsim.alloc.SegmentLayout;
import kvsim.core.InputException;
import kvsim.core.ModelPreset;
import kvsim.devicemodel.DeviceSpec;
import kvsim.devicemodel.Region;
import kvsim.registry.AllocatorRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Worked examples of PyTorch's {@code c10/cuda/CUDACachingAllocator.cpp} (pytorch/pytorch @eb42ad6)
 * on the caching model: round_size, should_split, free_block, release_available_cached_blocks,
 * release_cached_blocks, garbage collection, the expandable-segment paths (growth, best fit,
 * unmapping) and the statistics.
 */
class CachingAllocatorTest {
  private static final long GiB = 1L << 30;

  private static CachingAllocator model(String conf) {
    return new CachingAllocator(TorchAllocConf.parse(conf), TieBreak.ADDRESS, new Region("all", 0, GiB));
  }

  @ParameterizedTest(name = "round_size({0}) = {1} with divisions 4")
  @CsvSource({"1200, 1536", "2049, 2560", "5242881, 6291456", "314572800, 335544320", "2048, 2048", "100, 512", "4194304, 4194304"})
  void roundingWithFourDivisionsFollowsRoundSize(long size, long rounded) {
    assertEquals(rounded, model("roundup_power2_divisions:4").roundSize(size));
  }

  @ParameterizedTest(name = "round_size({0}) = {1} by default")
  @CsvSource({"1, 512", "511, 512", "512, 512", "1000, 1024", "1048577, 1049088", "104857601, 104858112"})
  void defaultRoundingIsToMultiplesOf512(long size, long rounded) {
    assertEquals(rounded, model("").roundSize(size));
  }

  @Test
  void theListFormRoundsEachIntervalWithItsOwnDivisions() {
    CachingAllocator m = model("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]");
    assertEquals(300 * MiB + 512, m.roundSize(300 * MiB + 1)); // below 512 MiB: 1 division = off
    assertEquals(768 * MiB, m.roundSize(600 * MiB)); // [512 MiB, 1 GiB): 2 divisions
    assertEquals(1280 * MiB, m.roundSize(1100 * MiB)); // [1, 2) GiB: 4 divisions
    assertEquals(2304 * MiB, m.roundSize(2100 * MiB)); // >= 2 GiB: 8 divisions
  }

  @ParameterizedTest(name = "a {0} B request gets a {1} B segment")
  @CsvSource({"1024, 2097152", "1048576, 2097152", "1049088, 20971520", "10485248, 20971520", "10485760, 10485760", "104858112, 106954752"})
  void segmentSizesFollowGetAllocationSize(long rounded, long segment) {
    assertEquals(segment, model("").allocationSize(rounded));
  }

  @Test
  void aSmallRequestSplitsANewTwoMebibyteSegment() {
    Harness h = new Harness("", GiB);
    AllocOutcome.Allocated a = h.alloc(1000);
    assertEquals(1024, a.allocatedBytes());
    assertEquals(List.of("segment_alloc 0 2"), h.events);
    SegmentLayout s = h.model.layout().get(0);
    assertEquals("small", s.pool());
    assertEquals(2, s.blocks().size());
    assertEquals(2 * MiB - 1024, s.blocks().get(1).sizeBytes());
    assertEquals(1024, s.blocks().get(1).addressBytes());
  }

  @Test
  void aOneMebibyteRequestIsSmallAndSplitsItsSegment() {
    Harness h = new Harness("", GiB);
    AllocOutcome.Allocated a = h.alloc(MiB);
    assertEquals(MiB, a.allocatedBytes());
    assertEquals("small", h.model.layout().get(0).pool());
    assertEquals(2, h.model.layout().get(0).blocks().size());
  }

  @Test
  void theFiveTwelveTwoAndAHalfRowsOfTheTableChain() {
    Harness h = new Harness("", GiB);
    AllocOutcome.Allocated five = h.alloc(5 * MiB);
    assertEquals(List.of("segment_alloc 0 20"), h.events);
    assertEquals(5 * MiB, five.allocatedBytes());
    AllocOutcome.Allocated twelve = h.alloc(12 * MiB);
    assertEquals(5 * MiB, addr(twelve), "best fit is the 15 MiB remainder");
    assertEquals(12 * MiB, twelve.allocatedBytes(), "3 MiB remain > 1 MiB: split");
    AllocOutcome.Allocated twoHalf = h.alloc(5 * MiB / 2);
    assertEquals(17 * MiB, addr(twoHalf));
    assertEquals(3 * MiB, twoHalf.allocatedBytes(), "0.5 MiB would remain: the whole 3 MiB block is handed out");
    assertEquals(1, h.events.size(), "no new segment after the first");
    assertEquals(20 * MiB, h.model.stats().allocatedBytes());
  }

  @Test
  void tenMebibytesGetASegmentOfExactlyTenMebibytes() {
    Harness h = new Harness("", GiB);
    assertEquals(10 * MiB, h.alloc(10 * MiB).allocatedBytes());
    assertEquals(List.of("segment_alloc 0 10"), h.events);
  }

  @Test
  void oneHundredMebibytesAndOneByteSplitA102MebibyteSegment() {
    Harness h = new Harness("", GiB);
    AllocOutcome.Allocated a = h.alloc(100 * MiB + 1);
    assertEquals(100 * MiB + 512, a.allocatedBytes());
    assertEquals(List.of("segment_alloc 0 102"), h.events);
    assertEquals(2, h.model.layout().get(0).blocks().size());
  }

  @Test
  void ninetyNineAndAHalfMebibytesTakeTheWholeHundredMebibyteSegment() {
    Harness h = new Harness("", GiB);
    AllocOutcome.Allocated a = h.alloc(99 * MiB + MiB / 2);
    assertEquals(100 * MiB, a.allocatedBytes());
    assertEquals(1, h.model.layout().get(0).blocks().size());
    assertEquals(99 * MiB + MiB / 2, h.model.stats().requestedBytes());
  }

  @Test
  void anOversizeRequestMissesABlockTwentyMebibytesLarger() {
    Harness h = new Harness("max_split_size_mb:200", GiB);
    h.free(h.alloc(300 * MiB));
    AllocOutcome.Allocated a = h.alloc(250 * MiB);
    assertEquals(300 * MiB, addr(a), "300 >= 250 + 20: miss, new segment after the cached one");
    assertEquals(List.of("segment_alloc 0 300", "segment_alloc 300 250"), h.events);
  }

  @Test
  void anOversizeRequestTakesAnOversizeBlockWithinTheSlackWhole() {
    Harness h = new Harness("max_split_size_mb:200", GiB);
    h.free(h.alloc(260 * MiB));
    AllocOutcome.Allocated a = h.alloc(250 * MiB);
    assertEquals(0, addr(a));
    assertEquals(260 * MiB, a.allocatedBytes(), "oversize blocks are never split");
    assertEquals(1, h.events.size());
    assertEquals(1, h.stat("oversize_allocations.current"));
    assertEquals(1, h.stat("oversize_segments.current"));
  }

  @Test
  void aNormalRequestNeverTakesAnOversizeBlock() {
    Harness h = new Harness("max_split_size_mb:200", GiB);
    h.free(h.alloc(300 * MiB));
    AllocOutcome.Allocated a = h.alloc(150 * MiB);
    assertEquals(300 * MiB, addr(a));
    assertEquals(List.of("segment_alloc 0 300", "segment_alloc 300 150"), h.events);
  }

  @Test
  void theMaxNonSplitRoundingOptionWidensTheSlack() {
    Harness h = new Harness("max_split_size_mb:200,max_non_split_rounding_mb:64", GiB);
    h.free(h.alloc(300 * MiB));
    assertEquals(0, addr(h.alloc(250 * MiB)), "300 < 250 + 64: hit");
  }

  @Test
  void aMaxNonSplitRoundingNearTwoToTheSixtyThirdStillMeansAHit() {
    // 8796093022207 MiB is just below 2^63 B: size + rounding used to wrap negative and miss.
    Harness h = new Harness("max_split_size_mb:200,max_non_split_rounding_mb:8796093022207", GiB);
    h.free(h.alloc(900 * MiB));
    assertEquals(0, addr(h.alloc(250 * MiB)), "900 < 250 + 2^63 - 1 MiB: hit, as PyTorch's unsigned sum says");
    assertEquals(List.of("segment_alloc 0 900"), h.events);
  }

  @Test
  void blocksOfOneStreamAreNeverReusedByAnother() {
    Harness h = new Harness("", GiB);
    h.free(h.alloc(5 * MiB, 7));
    AllocOutcome.Allocated other = h.alloc(5 * MiB, 0);
    assertEquals(20 * MiB, addr(other));
    AllocOutcome.Allocated same = h.alloc(5 * MiB, 7);
    assertEquals(0, addr(same));
  }

  @Test
  void freeMergesWithBothNeighboursAndKeepsNoTwoAdjacentFreeBlocks() {
    Harness h = new Harness("", GiB);
    AllocOutcome.Allocated a = h.alloc(4 * MiB);
    AllocOutcome.Allocated b = h.alloc(4 * MiB);
    AllocOutcome.Allocated c = h.alloc(4 * MiB);
    h.free(a);
    h.free(c);
    assertEquals(3, h.model.layout().get(0).blocks().size(), "a, b, c+tail");
    h.free(b);
    List<SegmentLayout.Block> blocks = h.model.layout().get(0).blocks();
    assertEquals(1, blocks.size());
    assertEquals(20 * MiB, blocks.get(0).sizeBytes());
  }

  @Test
  void inactiveSplitCountsFreeSplitBlocksAsPyTorchsStatsDo() {
    Harness h = new Harness("", GiB);
    AllocOutcome.Allocated five = h.alloc(5 * MiB);
    assertEquals(1, h.stat("inactive_split.all.current"));
    assertEquals(15 * MiB, h.stat("inactive_split_bytes.large_pool.current"));
    AllocOutcome.Allocated twelve = h.alloc(12 * MiB);
    assertEquals(1, h.stat("inactive_split.all.current"), "a split block split again keeps its count");
    assertEquals(3 * MiB, h.stat("inactive_split_bytes.all.current"));
    AllocOutcome.Allocated three = h.alloc(5 * MiB / 2);
    assertEquals(0, h.stat("inactive_split.all.current"), "taken whole: -1");
    assertEquals(0, h.stat("inactive_split_bytes.all.current"));
    h.free(twelve);
    assertEquals(1, h.stat("inactive_split.all.current"));
    assertEquals(12 * MiB, h.stat("inactive_split_bytes.all.current"));
    h.free(three);
    assertEquals(1, h.stat("inactive_split.all.current"), "merged neighbour -1, still split +1");
    assertEquals(15 * MiB, h.stat("inactive_split_bytes.all.current"));
    h.free(five);
    assertEquals(0, h.stat("inactive_split.all.current"), "the whole segment is free: not split");
    assertEquals(0, h.stat("inactive_split_bytes.all.current"));
    assertEquals(15 * MiB + 12 * MiB + 3 * MiB, h.stat("inactive_split_bytes.all.allocated"), "net changes per free");
    assertEquals(15 * MiB, h.stat("inactive_split_bytes.all.peak"));
  }

  @Test
  void statisticsUsePyTorchsNamesAndBalance() {
    Harness h = new Harness("", GiB);
    AllocOutcome.Allocated a = h.alloc(1000);
    AllocOutcome.Allocated b = h.alloc(3 * MiB);
    assertEquals(1024 + 3 * MiB, h.stat("allocated_bytes.all.current"));
    assertEquals(1024, h.stat("allocated_bytes.small_pool.current"));
    assertEquals(1000 + 3 * MiB, h.stat("requested_bytes.all.current"));
    assertEquals(22 * MiB, h.stat("reserved_bytes.all.current"));
    assertEquals(2, h.stat("segment.all.current"));
    assertEquals(2, h.stat("num_device_alloc"));
    assertEquals(-1, h.stat("max_split_size"));
    h.free(a);
    h.free(b);
    assertEquals(0, h.stat("allocated_bytes.all.current"));
    assertEquals(1024 + 3 * MiB, h.stat("allocated_bytes.all.freed"));
    assertEquals(1024 + 3 * MiB, h.stat("active_bytes.all.peak"));
    assertEquals(22 * MiB, h.model.stats().reservedBytes(), "nothing goes back to the driver on free");
    assertEquals(22 * MiB, h.model.freeBytes() - (GiB - 22 * MiB));
  }

  @Test
  void emptyCacheReturnsWholeSegmentsOnlyLargePoolFirst() {
    Harness h = new Harness("", GiB);
    AllocOutcome.Allocated small = h.alloc(1000);
    AllocOutcome.Allocated keep = h.alloc(5 * MiB);
    AllocOutcome.Allocated whole = h.alloc(30 * MiB);
    h.free(small);
    h.free(whole);
    h.events.clear();
    h.model.emptyCache();
    h.model.checkInvariants();
    assertEquals(List.of("segment_free 22 30", "segment_free 0 2"), h.events, "pool order: large (by size), then small");
    assertEquals(20 * MiB, h.model.stats().reservedBytes(), "the split segment of 'keep' stays");
    assertEquals(1, h.stat("num_sync_all_streams"));
    h.free(keep);
  }

  @Test
  void theRetryLadderEmptiesTheCacheBeforeGivingUp() {
    Harness h = new Harness("", 60 * MiB);
    AllocOutcome.Allocated b = h.alloc(20 * MiB);
    AllocOutcome.Allocated a = h.alloc(30 * MiB);
    h.free(a);
    h.events.clear();
    AllocOutcome.Allocated big = h.alloc(40 * MiB);
    assertEquals(List.of("segment_free 20 30", "segment_alloc 20 40"), h.events);
    assertEquals(1, h.stat("num_alloc_retries"), "attempt 3 counts as a retry");
    AllocOutcome refused = h.tryAlloc(50 * MiB);
    assertFalse(refused.succeeded());
    AllocOutcome.OutOfMemory oom = (AllocOutcome.OutOfMemory) refused;
    assertEquals(OomReason.NO_MEMORY, oom.reason());
    assertEquals(1, h.stat("num_ooms"));
    assertEquals(2, h.stat("num_alloc_retries"));
    assertEquals(60 * MiB, h.model.stats().reservedBytes(), "an OOM keeps everything it did not release");
    h.free(big);
    h.free(b);
  }

  @Test
  void releaseAvailableCachedBlocksFreesOversizeSegmentsLargestFirstBeforeEmptyCache() {
    Harness h = new Harness("max_split_size_mb:20", 100 * MiB);
    AllocOutcome.Allocated s1 = h.alloc(30 * MiB);
    AllocOutcome.Allocated s2 = h.alloc(30 * MiB);
    AllocOutcome.Allocated s3 = h.alloc(30 * MiB);
    AllocOutcome.Allocated tiny = h.alloc(1000);
    h.free(s1);
    h.free(s2);
    h.events.clear();
    AllocOutcome.Allocated forty = h.alloc(40 * MiB);
    assertEquals(List.of("segment_free 30 30", "segment_free 0 30", "segment_alloc 0 40"), h.events);
    assertEquals(0, h.stat("num_alloc_retries"), "attempt 2 is no retry");
    assertEquals(0, h.stat("num_sync_all_streams"), "empty_cache was not needed");
    h.free(forty);
    h.free(s3);
    h.free(tiny);
  }

  @Test
  void aMemoryFractionRefusesSegmentsBeyondItWhateverTheDeviceHolds() {
    Harness h = new Harness("per_process_memory_fraction:0.25", 100 * MiB);
    h.alloc(20 * MiB);
    AllocOutcome o = h.tryAlloc(10 * MiB);
    assertFalse(o.succeeded(), "20 + 10 MiB exceed 25 MiB");
    assertEquals(1, h.stat("num_ooms"));
    assertEquals(20 * MiB, h.model.stats().reservedBytes());
  }

  @Test
  void throwOnCudamallocOomRejectsWithoutRetrying() {
    Harness h = new Harness("per_process_memory_fraction:0.25,throw_on_cudamalloc_oom:True", 100 * MiB);
    h.alloc(20 * MiB);
    assertFalse(h.tryAlloc(10 * MiB).succeeded());
    assertEquals(0, h.stat("num_alloc_retries"));
    assertEquals(1, h.stat("num_oom_rejections"));
  }

  @Test
  void garbageCollectionNeedsAMemoryFraction() {
    Harness h = new Harness("garbage_collection_threshold:0.5", 200 * MiB);
    h.free(h.alloc(30 * MiB));
    h.free(h.alloc(40 * MiB));
    assertEquals(70 * MiB, h.model.stats().reservedBytes(), "no fraction: no GC");
  }

  @Test
  void garbageCollectionFreesOldWholeSegmentsBeforeAttemptOne() {
    Harness h = new Harness("per_process_memory_fraction:0.5,garbage_collection_threshold:0.5", 200 * MiB);
    AllocOutcome.Allocated a = h.alloc(30 * MiB);
    AllocOutcome.Allocated b = h.alloc(30 * MiB);
    AllocOutcome.Allocated c = h.alloc(30 * MiB);
    h.free(a);
    h.free(b);
    h.free(c);
    h.events.clear();
    h.alloc(40 * MiB); // reserved 90 MiB > 0.5 × 100 MiB: GC before attempt 1
    assertEquals(List.of("segment_free 0 30", "segment_free 30 30", "segment_free 60 30", "segment_alloc 0 40"), h.events);
    assertEquals(0, h.stat("num_sync_all_streams"), "GC is not empty_cache");
    assertEquals(40 * MiB, h.model.stats().reservedBytes());
  }

  @Test
  void expandableSegmentsGrowAtTheFrontier() {
    Harness h = new Harness("expandable_segments:True", GiB);
    AllocOutcome.Allocated first = h.alloc(16 * MiB);
    assertEquals(0, addr(first));
    assertEquals(List.of("segment_map 0 20"), h.events);
    AllocOutcome.Allocated second = h.alloc(16 * MiB);
    assertEquals(16 * MiB, addr(second), "the free 4 MiB tail and 20 MiB more merge into 24 MiB at X+16 MiB");
    assertEquals(List.of("segment_map 0 20", "segment_map 20 20"), h.events);
    assertEquals(40 * MiB, h.model.stats().reservedBytes());
    assertEquals(0, h.stat("segment.all.current"), "mapping does not count segments");
    assertEquals(2, h.stat("num_device_alloc"));
    assertEquals(0, h.stat("inactive_split.all.current"), "expandable blocks never count in inactive_split");
    List<SegmentLayout> runs = h.model.layout();
    assertEquals(1, runs.size());
    assertTrue(runs.get(0).expandable());
    assertEquals(40 * MiB, runs.get(0).sizeBytes());
  }

  @Test
  void expandableBestFitSkipsTheFrontierBlockForAnInteriorOne() {
    Harness h = new Harness("expandable_segments:True", GiB);
    AllocOutcome.Allocated a = h.alloc(10 * MiB);
    h.alloc(10 * MiB);
    AllocOutcome.Allocated c = h.alloc(12 * MiB);
    assertEquals(20 * MiB, addr(c));
    h.free(a);
    // free blocks: [0,10) interior (reach 10 MiB), [32,40) at the frontier (reach 8 MiB + unmapped)
    AllocOutcome.Allocated six = h.alloc(6 * MiB);
    assertEquals(0, addr(six), "get_free_block: the frontier block's reach is larger, the interior block wins");
  }

  @Test
  void expandableSegmentsSplitAnyRemainderOfAtLeast512Bytes() {
    Harness h = new Harness("expandable_segments:True", GiB);
    AllocOutcome.Allocated a = h.alloc(19 * MiB + MiB / 2);
    assertEquals(19 * MiB + MiB / 2, a.allocatedBytes(), "the 0.5 MiB remainder is split off");
  }

  @Test
  void emptyCacheUnmapsWholePagesAndLeavesSlivers() {
    Harness h = new Harness("expandable_segments:True", GiB);
    AllocOutcome.Allocated a = h.alloc(30 * MiB); // maps [0,40)
    AllocOutcome.Allocated b = h.alloc(25 * MiB); // grows: maps [40,60), block at 30
    assertEquals(30 * MiB, addr(b));
    h.free(a);
    h.events.clear();
    h.model.emptyCache();
    h.model.checkInvariants();
    assertEquals(List.of("segment_unmap 0 20"), h.events, "only page [0,20) lies inside a free block");
    assertEquals(40 * MiB, h.model.stats().reservedBytes());
    List<SegmentLayout> runs = h.model.layout();
    assertEquals(1, runs.size());
    assertEquals(20 * MiB, runs.get(0).addressBytes());
    assertEquals(3, runs.get(0).blocks().size(), "sliver [20,30) free, b, tail [55,60) free");
    h.free(b);
    h.events.clear();
    h.model.emptyCache();
    assertEquals(List.of("segment_unmap 20 40"), h.events);
    assertEquals(0, h.model.stats().reservedBytes());
    assertTrue(h.model.layout().isEmpty(), "a fully unmapped segment is released");
    h.model.checkInvariants();
  }

  @Test
  void expandableGrowthStopsAtTheDeviceAndTheLadderUnmapsToMakeRoom() {
    Harness h = new Harness("expandable_segments:True", 100 * MiB);
    AllocOutcome.Allocated a = h.alloc(50 * MiB); // maps 60
    AllocOutcome.Allocated small = h.alloc(1000); // small pool: maps 2
    h.free(a);
    h.events.clear();
    assertFalse(h.tryAlloc(90 * MiB).succeeded(), "90 MiB map as 100 MiB of pages; 2 MiB are held by the small pool");
    // attempt 1 cannot map 40 MiB more; empty_cache unmaps the free 60 MiB, which releases the
    // reservation; attempt 3 opens a fresh reservation after the two earlier ones (120 MiB large,
    // 114 MiB small: 1.125 x 100 MiB rounded up to pages) but cannot map 100 MiB there either.
    assertEquals(List.of("segment_unmap 0 60"), h.events);
    h.events.clear();
    AllocOutcome.Allocated big = h.alloc(80 * MiB);
    assertEquals(List.of("segment_map 234 80"), h.events);
    assertEquals(234 * MiB, addr(big));
    assertEquals(1, h.stat("num_alloc_retries"), "the refused 90 MiB request unmapped the cache and retried once");
    assertEquals(1, h.stat("num_ooms"));
    h.free(big);
    h.free(small);
  }

  @Test
  void theTieBreakIsSelectableByVersion() {
    for (TieBreak t : TieBreak.values()) {
      Harness h = new Harness("", t, GiB);
      AllocOutcome.Allocated h1 = h.alloc(11 * MiB); // segment A [0,12)
      AllocOutcome.Allocated h2 = h.alloc(11 * MiB); // segment B [12,24)
      h.free(h1);
      h.model.emptyCache(); // A goes back to the driver
      AllocOutcome.Allocated h3 = h.alloc(11 * MiB); // segment C, the newest, at address 0
      assertEquals(0, addr(h3));
      h.free(h2);
      h.free(h3);
      AllocOutcome.Allocated pick = h.alloc(11 * MiB);
      long expected = t == TieBreak.ADDRESS ? 0 : 12 * MiB;
      assertEquals(expected, addr(pick), t + ": address picks the lowest address, segment-age the oldest segment");
    }
  }

  @Test
  void gaugesFollowTheSpi() {
    Harness h = new Harness("", 100 * MiB);
    AllocOutcome.Allocated a = h.alloc(5 * MiB);
    assertEquals(20 * MiB, h.model.stats().reservedBytes());
    assertEquals(5 * MiB, h.model.stats().allocatedBytes());
    assertEquals(100 * MiB - 5 * MiB, h.model.freeBytes());
    assertEquals(80 * MiB, h.model.largestFreeBytes(), "the driver can still give 80 MiB in one piece");
    AllocOutcome.Allocated b = h.alloc(80 * MiB);
    assertEquals(0, h.model.largestFreeBytes(), "even a 1-byte request would fail: it needs a new 2 MiB small segment");
    assertFalse(h.tryAlloc(1).succeeded());
    h.free(b);
    assertEquals(80 * MiB, h.model.largestFreeBytes(), "the ladder would release the whole free 80 MiB segment");
    assertEquals(1, h.model.stats().liveAllocations());
    assertEquals(a.extents(), h.model.extentsOf(a.handle()));
  }

  @Test
  void theLargestFreeRequestIsThePrefixOfSizesThatAllSucceed() {
    Harness h = new Harness("", 100 * MiB);
    h.alloc(1000); // a small segment with almost 2 MiB free
    h.alloc(5 * MiB); // a 20 MiB segment, 15 MiB free
    h.alloc(64 * MiB);
    // 14 MiB left on the device: a 12 MiB request gets its own segment, but a 2 MiB request would
    // need 20 MiB; the cached 15 MiB block serves everything up to 15 MiB.
    assertEquals(15 * MiB, h.model.largestFreeBytes());
    h.alloc(15 * MiB); // takes the cached block whole
    assertEquals(MiB, h.model.largestFreeBytes(), "small requests still succeed, a 1 MiB + 512 B one would not");
    assertFalse(h.tryAlloc(MiB + 1).succeeded());
    assertTrue(h.tryAlloc(12 * MiB).succeeded(), "a larger request can succeed above the prefix");
  }

  @Test
  void freeingAHandleTwiceIsMisuse() {
    Harness h = new Harness("", GiB);
    AllocOutcome.Allocated a = h.alloc(1000);
    h.free(a);
    assertThrows(AllocatorMisuseException.class, () -> h.model.free(a.handle()));
  }

  @Test
  void requestsOfAnExbibyteFailAtOnce() {
    Harness h = new Harness("", GiB);
    AllocOutcome o = h.tryAlloc(1L << 60);
    assertEquals(OomReason.TOO_LARGE, ((AllocOutcome.OutOfMemory) o).reason());
  }

  @ParameterizedTest(name = "{0} B with {1}")
  @CsvSource({
    "9223372036854775807, ''", "9223372036854775000, ''", "1152921504606846975, ''", "1152921504606846976, ''",
    "9223372036854775807, roundup_power2_divisions:8", "4611686018427387905, roundup_power2_divisions:8",
    "1152921504606846975, roundup_power2_divisions:8", "1152921504606846975, large_segment_size_mb:8796093022206"
  })
  void anyHugeRequestIsRefusedAndTheExbibyteOnesAreTooLarge(long size, String conf) {
    Harness h = new Harness(conf, GiB);
    h.alloc(12 * MiB);
    AllocOutcome.OutOfMemory oom = (AllocOutcome.OutOfMemory) h.tryAlloc(size);
    assertEquals(size >= CachingAllocator.MAX_REQUEST_BYTES ? OomReason.TOO_LARGE : OomReason.NO_MEMORY, oom.reason());
    assertEquals(size, oom.requestedBytes());
  }

  @Test
  void roundSizeIsExactOrThrowsNeverWraps() {
    CachingAllocator plain = model("");
    CachingAllocator divided = model("roundup_power2_divisions:8");
    assertEquals(Long.MAX_VALUE - 511, plain.roundSize(Long.MAX_VALUE - 511));
    assertThrows(ArithmeticException.class, () -> plain.roundSize(Long.MAX_VALUE - 510));
    assertThrows(ArithmeticException.class, () -> plain.roundSize(Long.MAX_VALUE));
    assertEquals((1L << 62) + (1L << 59), divided.roundSize((1L << 62) + 1));
    assertThrows(ArithmeticException.class, () -> divided.roundSize(Long.MAX_VALUE - (1L << 58)));
    assertEquals(1L << 61, divided.roundSize((1L << 60) + (7L << 57) + 1), "the last division rounds to the next power of two");
  }

  @Test
  void aHugeSegmentSizeIsRefusedByTheDriverNotWrapped() {
    // large_segment_size_mb just below 2^43: a 2 MiB request needs a segment of nearly 2^63 B.
    Harness h = new Harness("large_segment_size_mb:8796093022206,per_process_memory_fraction:0.5", GiB);
    assertEquals(Long.MAX_VALUE - (2L << 20) + 1, h.model.allocationSize(2 * MiB));
    h.alloc(12 * MiB); // own-size segments from 10 MiB are unaffected
    // reserved + that segment passes 2^63: the fraction check must not wrap into a pass.
    AllocOutcome o = h.tryAlloc(2 * MiB);
    assertEquals(OomReason.FRAGMENTATION, ((AllocOutcome.OutOfMemory) o).reason(), "free bytes, but no segment for them");
    assertEquals(12 * MiB, h.model.stats().reservedBytes());
    assertEquals(List.of("segment_alloc 0 12"), h.events);
  }

  @Test
  void aDeviceAboveOneExbibyteIsRejectedAtConstruction() {
    assertThrows(
        IllegalArgumentException.class,
        () -> new CachingAllocator(TorchAllocConf.parse("expandable_segments:True"), TieBreak.ADDRESS, new ReplayDriver(), Long.MAX_VALUE));
    new CachingAllocator(TorchAllocConf.parse("expandable_segments:True"), TieBreak.ADDRESS, new ReplayDriver(), CachingAllocator.MAX_REQUEST_BYTES);
  }

  @Test
  void cumulativeStatsSaturateInsteadOfWrapping() {
    TorchStats stats = new TorchStats();
    stats.increase(TorchStats.Kind.ALLOCATED_BYTES, false, Long.MAX_VALUE - 10);
    stats.decrease(TorchStats.Kind.ALLOCATED_BYTES, false, Long.MAX_VALUE - 10);
    stats.increase(TorchStats.Kind.ALLOCATED_BYTES, false, 100);
    stats.decrease(TorchStats.Kind.ALLOCATED_BYTES, false, 100);
    Map<String, Long> m = stats.asMap();
    assertEquals(Long.MAX_VALUE, m.get("allocated_bytes.all.allocated"));
    assertEquals(Long.MAX_VALUE, m.get("allocated_bytes.large_pool.freed"));
    assertEquals(0, m.get("allocated_bytes.all.current"));
    assertEquals(Long.MAX_VALUE - 10, m.get("allocated_bytes.all.peak"));
  }

  @Test
  void theRegistryBuildsTheModelFromItsOptions() {
    Region region = new Region("all", 0, GiB);
    AllocatorContext ctx =
        new AllocatorContext(
            "pytorch-caching",
            region,
            DeviceSpec.defaultDevice(),
            ModelPreset.presets().values().iterator().next(),
            Map.of("torch-alloc-conf", "expandable_segments:True,max_split_size_mb:512", "tie-break", "segment-age"));
    CachingAllocator m = (CachingAllocator) AllocatorRegistry.create(ctx);
    assertTrue(m.conf().expandableSegments());
    assertEquals(TieBreak.SEGMENT_AGE, m.tieBreak());
    assertEquals(512 * MiB, m.extraMetrics().get("max_split_size"));
  }

  @Test
  void aBadConfStringIsAnInputErrorNamingTheOption() {
    Region region = new Region("all", 0, GiB);
    AllocatorContext ctx =
        new AllocatorContext(
            "pytorch-caching",
            region,
            DeviceSpec.defaultDevice(),
            ModelPreset.presets().values().iterator().next(),
            Map.of("torch-alloc-conf", "max_split_size_mb:5"));
    InputException e = assertThrows(InputException.class, () -> AllocatorRegistry.create(ctx));
    assertTrue(e.getMessage().contains("torch-alloc-conf") && e.getMessage().contains("too small"), e.getMessage());
  }
}
