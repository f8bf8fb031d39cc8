package kvsim.alloc.vattention;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
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
 * The vAttention model against {@link NaiveVAttention}, the plain lists it must agree with: the same
 * seeded random operations go to both, and every outcome (virtual range, allocated bytes, refusal
 * reason and the free-byte counts it reports), the physical pages behind every allocation, the
 * order of the free pool, every gauge, the page counters and the modelled time must be identical.
 */
class VAttentionDifferentialTest {

  /** Counts what a run went through, so a test can tell that it exercised what it claims. */
  private record Tally(int allocations, int frees, int noMemory, int tooLarge, int maxLive, int nonAdjacent) {}

  @Test
  void theModelMatchesTheNaiveListsOverOneHundredFiftyThousandOperationsWithInvariantsAfterEach() {
    // 300 pages of 64 KiB and a 5000 B tail, at an unaligned base.
    Region region = new Region("kv", 3 * Bytes.MiB + 17, 300 * 64 * Bytes.KiB + 5000);
    Tally t = run(region, 64 * Bytes.KiB, 20240601L, 150_000, 1);
    assertTrue(t.allocations() > 40_000 && t.frees() > 40_000, t.toString());
    assertTrue(t.noMemory() > 1_000 && t.tooLarge() > 200, t.toString());
    assertTrue(t.maxLive() > 30 && t.nonAdjacent() > 10_000, t.toString());
  }

  @Test
  void theModelsAgreeWithTwoMebibytePagesOnALargerRegion() {
    Region region = new Region("kv", Bytes.GiB, 6 * Bytes.GiB + 3 * Bytes.MiB);
    Tally t = run(region, 2 * Bytes.MiB, 77L, 100_000, 5_000);
    assertTrue(t.allocations() > 30_000 && t.noMemory() > 100, t.toString());
  }

  @Test
  void theModelsAgreeForEveryPageSize() {
    for (long page = 64 * Bytes.KiB; page <= 2 * Bytes.MiB; page *= 2) {
      Region region = new Region("kv", 12_345, 200 * page + page / 3);
      Tally t = run(region, page, page, 20_000, 100);
      assertTrue(t.allocations() > 5_000 && t.noMemory() > 100, page + ": " + t);
    }
  }

  private static Tally run(Region region, long pageBytes, long seed, int operations, int checkEvery) {
    VAttentionAllocator fast = new VAttentionAllocator(region, pageBytes);
    NaiveVAttention slow = new NaiveVAttention(region, pageBytes);
    long poolBytes = fast.pageCount() * pageBytes;
    SplittableRandom random = new SplittableRandom(seed);
    List<long[]> live = new ArrayList<>(); // {fast handle, naive handle}
    int allocations = 0;
    int frees = 0;
    int noMemory = 0;
    int tooLarge = 0;
    int maxLive = 0;
    int nonAdjacent = 0;
    for (int op = 0; op < operations; op++) {
      if (live.isEmpty() || random.nextInt(100) < 55) {
        long size = size(random, pageBytes, poolBytes);
        AllocOutcome got = fast.allocate(new AllocRequest(size, Tag.KV, random.nextBoolean(), 0));
        AllocOutcome expected = slow.allocate(size);
        if (expected instanceof AllocOutcome.Allocated e) {
          AllocOutcome.Allocated g = assertInstanceOf(AllocOutcome.Allocated.class, got, "op " + op);
          assertEquals(e.extents(), g.extents(), "op " + op + ": virtual range of " + size + " B");
          assertEquals(e.allocatedBytes(), g.allocatedBytes(), "op " + op);
          int[] pages = slow.pagesOf(e.handle());
          assertArrayEquals(pages, fast.pagesOf(g.handle()), "op " + op + ": pages behind " + size + " B");
          for (int i = 1; i < pages.length; i++) {
            if (pages[i] != pages[i - 1] + 1) {
              nonAdjacent++;
              break;
            }
          }
          live.add(new long[] {g.handle(), e.handle()});
          allocations++;
        } else {
          assertEquals(expected, got, "op " + op + ": refusal of " + size + " B");
          switch (((AllocOutcome.OutOfMemory) got).reason()) {
            case NO_MEMORY -> noMemory++;
            case TOO_LARGE -> tooLarge++;
            case FRAGMENTATION -> throw new AssertionError("op " + op + ": a fragmentation refusal");
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
      maxLive = Math.max(maxLive, live.size());
      assertEquals(slow.freeBytes(), fast.freeBytes(), "op " + op);
      assertEquals(slow.freeBytes(), fast.largestFreeBytes(), "op " + op);
      assertEquals(slow.requestedBytes(), fast.stats().requestedBytes(), "op " + op);
      assertEquals(slow.allocatedBytes(), fast.stats().allocatedBytes(), "op " + op);
      assertEquals(slow.liveCount(), fast.stats().liveAllocations(), "op " + op);
      assertEquals(slow.modelledNanos(), fast.stats().modelledNanos(), "op " + op);
      assertEquals(slow.pagesMapped(), fast.extraMetrics().get("pages_mapped"), "op " + op);
      assertEquals(slow.pagesUnmapped(), fast.extraMetrics().get("pages_unmapped"), "op " + op);
      if (op % checkEvery == 0) {
        assertArrayEquals(slow.freePageOrder(), fast.freePageOrder(), "op " + op + ": the pool's order");
        fast.checkInvariants();
      }
    }
    fast.checkInvariants();
    return new Tally(allocations, frees, noMemory, tooLarge, maxLive, nonAdjacent);
  }

  /**
   * Sizes below a page, whole pages and one byte either side of them, many pages, and up to a fifth
   * more than the pool (so some are too large).
   */
  private static long size(SplittableRandom random, long pageBytes, long poolBytes) {
    int bucket = random.nextInt(100);
    if (bucket < 30) {
      return 1 + random.nextLong(pageBytes);
    }
    if (bucket < 50) {
      return pageBytes * (1 + random.nextInt(8)) + random.nextInt(3) - 1;
    }
    if (bucket < 85) {
      return 1 + random.nextLong(Math.max(1, poolBytes / 20));
    }
    if (bucket < 97) {
      return 1 + random.nextLong(Math.max(1, poolBytes / 3));
    }
    return 1 + random.nextLong(poolBytes + poolBytes / 5);
  }
}
