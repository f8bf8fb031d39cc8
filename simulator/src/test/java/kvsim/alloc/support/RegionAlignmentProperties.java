package kvsim.alloc.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import kvsim.devicemodel.Region;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

/**
 * {@link RegionAlignment#roundDown} and {@link RegionAlignment#roundUp} take masks for powers of
 * two; both must give what the plain arithmetic gives, for any alignment and, rounding down, any
 * size, negative ones included.
 */
class RegionAlignmentProperties {
  private static final Region REGION = new Region("hbm", 0, 80L << 30);

  @Property(tries = 500)
  void roundDownIsTheRemainderTakenAway(@ForAll @IntRange(min = 0, max = 30) int shift, @ForAll @IntRange(min = 0, max = 2) int kind, @ForAll long bytes) {
    long alignmentBytes = kind == 0 ? 1L << shift : kind == 1 ? (1L << shift) + 1 : 3L * (1 + shift);
    RegionAlignment a = new RegionAlignment(REGION, alignmentBytes);
    assertEquals(bytes - bytes % alignmentBytes, a.roundDown(bytes));
  }

  @Property(tries = 500)
  void roundUpIsTheSmallestMultipleAtOrAbove(@ForAll @IntRange(min = 0, max = 30) int shift, @ForAll @IntRange(min = 0, max = 1) int kind,
      @ForAll @LongRange(min = 0, max = 80L << 30) long sizeBytes) {
    long alignmentBytes = kind == 0 ? 1L << shift : (1L << shift) + 1;
    RegionAlignment a = new RegionAlignment(REGION, alignmentBytes);
    long up = a.roundUp(sizeBytes);
    assertEquals(0, up % alignmentBytes);
    assertTrue(up >= sizeBytes && up - sizeBytes < alignmentBytes, up + " for " + sizeBytes);
  }
}
