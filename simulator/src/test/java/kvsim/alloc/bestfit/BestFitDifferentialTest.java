package kvsim.alloc.bestfit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import kvsim.alloc.AllocOutcome;
import kvsim.alloc.AllocRequest;
import kvsim.alloc.OomReason;
import kvsim.core.Bytes;
import kvsim.core.Tag;
import kvsim.devicemodel.Region;
import org.junit.jupiter.api.Test;

/**
 * The indexed best fit against {@link NaiveBestFit}, the O(n) list it must agree with: the same
 * seeded random operations go to both, and every outcome (address, allocated bytes, refusal reason
 * and the free-byte counts it reports) and every gauge must be identical. Regions are small and not
 * powers of two, so the runs go through long stretches of refusals and fragmentation, and many
 * extents share a size (the tie on address matters).
 */
class BestFitDifferentialTest {

  /** Counts what a run went through, so a test can tell that it exercised what it claims. */
  private record Tally(int allocations, int frees, int noMemory, int fragmentation, int maxFreeExtents, int notFirstFit) {}

  @Test
  void theIndexedModelMatchesTheNaiveListOverOneHundredFiftyThousandOperations() {
    // Unaligned base and a tail shorter than the alignment at the top.
    Region region = new Region("kv", 12_345, 64 * Bytes.MiB + 300);
    Tally t = run(region, 512, 20240601L, 150_000, 1_000);
    assertTrue(t.allocations() > 50_000 && t.frees() > 50_000, t.toString());
    assertTrue(t.noMemory() > 1_000 && t.fragmentation() > 1_000, t.toString());
    assertTrue(t.maxFreeExtents() > 100, "the free trees stayed small: " + t);
    assertTrue(t.notFirstFit() > 10_000, "best fit seldom differed from first fit: " + t);
  }

  @Test
  void theModelsAgreeWithInvariantsCheckedAfterEveryOperation() {
    Tally t = run(new Region("kv", 0, 4 * Bytes.MiB + 8192), 4096, 7L, 10_000, 1);
    assertTrue(t.fragmentation() > 100 && t.noMemory() > 20, t.toString());
  }

  @Test
  void theModelsAgreeWithoutAnyRounding() {
    Tally t = run(new Region("kv", 1, Bytes.MiB + 1), 1, 99L, 30_000, 97);
    assertTrue(t.fragmentation() > 100, t.toString());
  }

  private static Tally run(Region region, long alignmentBytes, long seed, int operations, int checkEvery) {
    BestFitAllocator fast = new BestFitAllocator(region, alignmentBytes);
    NaiveBestFit slow = new NaiveBestFit(region, alignmentBytes);
    SplittableRandom random = new SplittableRandom(seed);
    List<long[]> live = new ArrayList<>(); // {fast handle, naive handle}
    int allocations = 0;
    int frees = 0;
    int noMemory = 0;
    int fragmentation = 0;
    int maxFreeExtents = 0;
    int notFirstFit = 0;
    for (int op = 0; op < operations; op++) {
      if (live.isEmpty() || random.nextInt(100) < 55) {
        long size = size(random, region.sizeBytes());
        long lowestFit = slow.firstFitOffset(size);
        AllocOutcome got = fast.allocate(new AllocRequest(size, Tag.ACTIVATION, false, 0));
        AllocOutcome expected = slow.allocate(size);
        if (expected instanceof AllocOutcome.Allocated e) {
          AllocOutcome.Allocated g = assertInstanceOf(AllocOutcome.Allocated.class, got, "op " + op);
          assertEquals(e.extents(), g.extents(), "op " + op + ": address of " + size + " B");
          assertEquals(e.allocatedBytes(), g.allocatedBytes(), "op " + op);
          live.add(new long[] {g.handle(), e.handle()});
          allocations++;
          if (g.extents().offsetBytes(0) != lowestFit) {
            notFirstFit++;
          }
        } else {
          assertEquals(expected, got, "op " + op + ": refusal of " + size + " B");
          if (((AllocOutcome.OutOfMemory) got).reason() == OomReason.FRAGMENTATION) {
            fragmentation++;
          } else {
            noMemory++;
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
      assertEquals((long) slow.freeExtentCount(), fast.extraMetrics().get("free_extents"), "op " + op);
      maxFreeExtents = Math.max(maxFreeExtents, slow.freeExtentCount());
      if (op % checkEvery == 0) {
        fast.checkInvariants();
      }
    }
    fast.checkInvariants();
    return new Tally(allocations, frees, noMemory, fragmentation, maxFreeExtents, notFirstFit);
  }

  /** Mostly small requests, some up to a quarter of the region; a few are exact alignments. */
  private static long size(SplittableRandom random, long regionBytes) {
    int bucket = random.nextInt(100);
    if (bucket < 55) {
      return 1 + random.nextLong(4096);
    }
    if (bucket < 80) {
      return 4096 + random.nextLong(60 * Bytes.KiB);
    }
    if (bucket < 97) {
      return 64 * Bytes.KiB + random.nextLong(Math.max(1, regionBytes / 64));
    }
    return 1 + random.nextLong(regionBytes / 4);
  }
}
