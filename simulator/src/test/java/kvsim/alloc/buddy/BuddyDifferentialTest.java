package kvsim.alloc.buddy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.core.Bytes;
import kvsim.core.Tag;
import kvsim.devicemodel.Region;
import org.junit.jupiter.api.Test;

/**
 * The bitmap buddy allocator against {@link NaiveBuddy}, the O(n) list it must agree with: the same
 * seeded random operations go to both, and every outcome (address, allocated bytes, refusal reason
 * and the free-byte counts it reports), every gauge and the split and merge counts must be
 * identical. Regions are not powers of two and start at unaligned addresses, so several top-level
 * blocks and an unusable tail are always in play.
 */
class BuddyDifferentialTest {

  /** Counts what a run went through, so a test can tell that it exercised what it claims. */
  private record Tally(
      int allocations, int frees, int noMemory, int fragmentation, int tooLarge, int maxFreeBlocks, long merges) {}

  @Test
  void theBitmapModelMatchesTheNaiveListOverOneHundredFiftyThousandOperations() {
    // 1317 blocks of 64 KiB: top-level blocks of 1024, 256, 32, 4 and 1 blocks, then a 3000 B tail.
    Region region = new Region("kv", 12_345, 1317 * 64 * Bytes.KiB + 3000);
    Tally t = run(region, 64 * Bytes.KiB, 20240601L, 150_000, 1_000);
    assertTrue(t.allocations() > 40_000 && t.frees() > 40_000, t.toString());
    assertTrue(t.noMemory() > 1_000 && t.fragmentation() > 1_000 && t.tooLarge() > 1_000, t.toString());
    assertTrue(t.maxFreeBlocks() > 30 && t.merges() > 5_000, t.toString());
  }

  @Test
  void theModelsAgreeWithSmallBlocksOnALargerRegion() {
    Region region = new Region("kv", 1, 3 * Bytes.GiB + 5 * Bytes.MiB + 12_288 + 77);
    Tally t = run(region, 4096, 77L, 100_000, 10_000);
    assertTrue(t.allocations() > 30_000 && t.fragmentation() > 100, t.toString());
  }

  @Test
  void theModelsAgreeWithInvariantsCheckedAfterEveryOperation() {
    // 13 blocks: top-level blocks of 8, 4 and 1.
    Tally t = run(new Region("kv", 3 * Bytes.MiB, 13 * 2 * Bytes.MiB + 1), 2 * Bytes.MiB, 7L, 20_000, 1);
    assertTrue(t.fragmentation() > 100 && t.noMemory() > 100 && t.tooLarge() > 100, t.toString());
  }

  private static Tally run(Region region, long minBlockBytes, long seed, int operations, int checkEvery) {
    BuddyAllocator fast = new BuddyAllocator(region, minBlockBytes);
    NaiveBuddy slow = new NaiveBuddy(region, minBlockBytes);
    SplittableRandom random = new SplittableRandom(seed);
    List<long[]> live = new ArrayList<>(); // {fast handle, naive handle}
    int allocations = 0;
    int frees = 0;
    int noMemory = 0;
    int fragmentation = 0;
    int tooLarge = 0;
    int maxFreeBlocks = 0;
    long largestTop = slow.largestTop();
    assertEquals(largestTop, fast.largestTopBlockBytes());
    for (int op = 0; op < operations; op++) {
      if (live.isEmpty() || random.nextInt(100) < 55) {
        long size = size(random, minBlockBytes, largestTop);
        AllocOutcome got = fast.allocate(new AllocRequest(size, Tag.KV, random.nextBoolean(), 0));
        AllocOutcome expected = slow.allocate(size);
        if (expected instanceof AllocOutcome.Allocated e) {
          AllocOutcome.Allocated g = assertInstanceOf(AllocOutcome.Allocated.class, got, "op " + op);
          assertEquals(e.extents(), g.extents(), "op " + op + ": address of " + size + " B");
          assertEquals(e.allocatedBytes(), g.allocatedBytes(), "op " + op);
          live.add(new long[] {g.handle(), e.handle()});
          allocations++;
        } else {
          assertEquals(expected, got, "op " + op + ": refusal of " + size + " B");
          switch (((AllocOutcome.OutOfMemory) got).reason()) {
            case FRAGMENTATION -> fragmentation++;
            case NO_MEMORY -> noMemory++;
            case TOO_LARGE -> tooLarge++;
          }
        }
      } else {
        int i = random.nextInt(live.size());
        long[] pair = live.get(i);
        live.set(i, live.get(live.size() - 1));
        live.remove(live.size() - 1);
        fast.free(pair[0]);
        slow.free(pair[1]);
        frees++;
      }
      assertEquals(slow.freeBytes(), fast.freeBytes(), "op " + op);
      assertEquals(slow.largestFreeBytes(), fast.largestFreeBytes(), "op " + op);
      assertEquals(slow.requestedBytes(), fast.stats().requestedBytes(), "op " + op);
      assertEquals(live.size(), fast.stats().liveAllocations(), "op " + op);
      var extra = fast.extraMetrics();
      assertEquals((long) slow.freeBlockCount(), extra.get("free_blocks"), "op " + op);
      assertEquals(slow.splits(), extra.get("splits"), "op " + op);
      assertEquals(slow.merges(), extra.get("merges"), "op " + op);
      maxFreeBlocks = Math.max(maxFreeBlocks, slow.freeBlockCount());
      if (op % checkEvery == 0) {
        fast.checkInvariants();
      }
    }
    fast.checkInvariants();
    return new Tally(allocations, frees, noMemory, fragmentation, tooLarge, maxFreeBlocks, slow.merges());
  }

  /**
   * Sizes below, at and above the minimum block, exact powers of two and one byte past them, up to
   * twice the largest top-level block (so some are too large).
   */
  private static long size(SplittableRandom random, long minBlockBytes, long largestTop) {
    int bucket = random.nextInt(100);
    if (bucket < 30) {
      return 1 + random.nextLong(minBlockBytes);
    }
    if (bucket < 45) {
      long power = minBlockBytes << random.nextInt(6);
      return power + random.nextInt(3) - 1; // one byte below, at, or above a power of two
    }
    if (bucket < 80) {
      return 1 + random.nextLong(16 * minBlockBytes);
    }
    if (bucket < 96) {
      return 1 + random.nextLong(Math.max(1, largestTop / 4));
    }
    return 1 + random.nextLong(2 * largestTop);
  }
}
