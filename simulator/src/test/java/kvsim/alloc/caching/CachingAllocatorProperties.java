package kvsim.alloc.caching;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.SegmentLayout;
import kvsim.core.Tag;
import kvsim.devicemodel.Region;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Random malloc/free sequences keep the model's invariants after every step (as PyTorch's {@code
 * free_block} keeps them: blocks tile each segment, no two adjacent free blocks; pools hold exactly
 * the free blocks; stats balance), under each family of options, on a device small enough for the
 * retry ladder to run.
 */
class CachingAllocatorProperties {
  private static final long MiB = 1L << 20;

  @Provide
  Arbitrary<String> confs() {
    return Arbitraries.of(
        "",
        "max_split_size_mb:40",
        "max_split_size_mb:20,max_non_split_rounding_mb:30",
        "roundup_power2_divisions:[1:4,8:2,>:8]",
        "expandable_segments:True",
        "expandable_segments:True,max_split_size_mb:40",
        "per_process_memory_fraction:0.5,garbage_collection_threshold:0.6");
  }

  @Provide
  Arbitrary<List<Long>> ops() {
    // Positive: allocate that many bytes; negative or zero: free live allocation number |op|.
    Arbitrary<Long> sizes =
        Arbitraries.frequencyOf(
            net.jqwik.api.Tuple.of(4, Arbitraries.longs().between(1, 1 * MiB)),
            net.jqwik.api.Tuple.of(4, Arbitraries.longs().between(MiB, 12 * MiB)),
            net.jqwik.api.Tuple.of(2, Arbitraries.longs().between(12 * MiB, 96 * MiB)));
    Arbitrary<Long> frees = Arbitraries.longs().between(-1000, 0);
    return Arbitraries.frequencyOf(net.jqwik.api.Tuple.of(3, sizes), net.jqwik.api.Tuple.of(2, frees)).list().ofMinSize(1).ofMaxSize(300);
  }

  @Property(tries = 200)
  void invariantsHoldAfterEveryStep(
      @ForAll("confs") String conf, @ForAll("ops") List<Long> ops, @ForAll boolean segmentAge, @ForAll boolean twoStreams) {
    CachingAllocator m =
        new CachingAllocator(
            TorchAllocConf.parse(conf), segmentAge ? TieBreak.SEGMENT_AGE : TieBreak.ADDRESS, new Region("all", 0, 400 * MiB));
    List<Long> live = new ArrayList<>();
    int i = 0;
    for (long op : ops) {
      if (op > 0) {
        long stream = twoStreams && (i++ % 3 == 0) ? 7 : 0;
        AllocOutcome o = m.allocate(new AllocRequest(op, Tag.TEMP, false, stream));
        if (o instanceof AllocOutcome.Allocated a) {
          assertTrue(a.allocatedBytes() >= op);
          live.add(a.handle());
        } else {
          AllocOutcome.OutOfMemory oom = (AllocOutcome.OutOfMemory) o;
          assertTrue(oom.largestFreeBytes() <= oom.freeBytes());
        }
      } else if (!live.isEmpty()) {
        m.free(live.remove((int) (-op % live.size())));
      }
      m.checkInvariants();
      assertNoAdjacentFreeBlocks(m.layout());
      assertTrue(m.largestFreeBytes() <= m.freeBytes());
    }
    for (long h : live) {
      m.free(h);
    }
    m.checkInvariants();
    assertEquals(0, m.stats().allocatedBytes());
    assertEquals(0, m.stats().requestedBytes());
    m.emptyCache();
    m.checkInvariants();
    assertEquals(0, m.stats().reservedBytes(), "with everything free, empty_cache returns every byte");
  }

  private static void assertNoAdjacentFreeBlocks(List<SegmentLayout> layout) {
    for (SegmentLayout s : layout) {
      SegmentLayout.Block prev = null;
      long cursor = s.addressBytes();
      for (SegmentLayout.Block b : s.blocks()) {
        assertEquals(cursor, b.addressBytes());
        cursor += b.sizeBytes();
        if (prev != null) {
          assertTrue(
              prev.state() == SegmentLayout.State.ACTIVE_ALLOCATED || b.state() == SegmentLayout.State.ACTIVE_ALLOCATED,
              "two adjacent free blocks at " + b.addressBytes());
        }
        prev = b;
      }
      assertEquals(s.addressBytes() + s.sizeBytes(), cursor);
    }
  }

  @Property(tries = 300)
  void roundingNeverCrossesTheSmallLargeBoundaryAndNeverShrinks(
      @ForAll("sizesAroundBoundaries") long size, @ForAll("divisions") int divisions) {
    CachingAllocator m =
        new CachingAllocator(
            TorchAllocConf.parse("roundup_power2_divisions:" + divisions), TieBreak.ADDRESS, new Region("all", 0, MiB * 64));
    long r = m.roundSize(size);
    assertTrue(r >= size);
    assertEquals(0, r % 512);
    assertEquals(size <= MiB, r <= MiB, "round_size never crosses 1 MiB: 1 MiB is a power of two");
    assertEquals(r, m.roundSize(r), "rounding is idempotent");
  }

  @Provide
  Arbitrary<Long> sizesAroundBoundaries() {
    return Arbitraries.oneOf(
        Arbitraries.longs().between(1, 4 * MiB), Arbitraries.longs().between(MiB - 4096, MiB + 4096), Arbitraries.longs().between(1, 1L << 40));
  }

  @Provide
  Arbitrary<Integer> divisions() {
    return Arbitraries.of(1, 2, 4, 8, 16, 64, 1024);
  }
}
