package kvsim.alloc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The shared gauges: what each mutator moves, exact byte sums, saturating time, the check. */
class AllocatorStatsTest {

  @Test
  void allocationsAndFreesMoveTheAllocatedAndRequestedBytesAndTheLiveCountTogether() {
    AllocatorStats stats = AllocatorStats.reserving(1000);
    stats.onAlloc(100, 128);
    stats.onAlloc(1, 512);
    assertEquals(1000, stats.reservedBytes());
    assertEquals(640, stats.allocatedBytes());
    assertEquals(101, stats.requestedBytes());
    assertEquals(2, stats.liveAllocations());
    stats.onFree(100, 128);
    assertEquals(512, stats.allocatedBytes());
    assertEquals(1, stats.requestedBytes());
    assertEquals(1, stats.liveAllocations());
    stats.unreserve(1000);
    stats.reserve(20);
    assertEquals(20, stats.reservedBytes());
  }

  @Test
  void aByteSumPastLongMaxValueThrowsInsteadOfWrapping() {
    AllocatorStats stats = new AllocatorStats();
    stats.onAlloc(Long.MAX_VALUE, Long.MAX_VALUE);
    assertThrows(ArithmeticException.class, () -> stats.onAlloc(1, 1));
    stats.reserve(Long.MAX_VALUE);
    assertThrows(ArithmeticException.class, () -> stats.reserve(1));
  }

  @Test
  void modelledTimeSaturatesAtLongMaxValueAndNeverRunsBackwards() {
    AllocatorStats stats = new AllocatorStats();
    stats.addModelledNanos(50);
    assertEquals(50, stats.modelledNanos());
    stats.addModelledNanos(Long.MAX_VALUE - 10);
    assertEquals(Long.MAX_VALUE, stats.modelledNanos());
    stats.addModelledNanos(Long.MAX_VALUE);
    assertEquals(Long.MAX_VALUE, stats.modelledNanos());
  }

  @Test
  void theCheckNamesTheModelAndTheFirstGaugeThatDiffersFromTheWalk() {
    AllocatorStats stats = AllocatorStats.reserving(4096);
    stats.onAlloc(10, 512);
    stats.check("m", 4096, 512, 10, 1);
    InvariantViolation e = assertThrows(InvariantViolation.class, () -> stats.check("m", 4096, 512, 11, 1));
    assertTrue(e.getMessage().contains("m"), e.getMessage());
    assertTrue(e.getMessage().contains("requested bytes"), e.getMessage());
    assertThrows(InvariantViolation.class, () -> stats.check("m", 4095, 512, 10, 1));
    assertThrows(InvariantViolation.class, () -> stats.check("m", 4096, 0, 10, 1));
    assertThrows(InvariantViolation.class, () -> stats.check("m", 4096, 512, 10, 0));
  }
}
