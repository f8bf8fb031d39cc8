package kvsim.devicemodel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import kvsim.core.Bytes;
import org.junit.jupiter.api.Test;

/** Regions and memory plans hold addresses up to {@code Long.MAX_VALUE} and no further. */
class RegionTest {
  @Test
  void aRegionMayEndAtLongMaxValueButNotPastIt() {
    Region top = new Region("kv", Long.MAX_VALUE - Bytes.GiB, Bytes.GiB);
    assertEquals(Long.MAX_VALUE, top.endBytes());
    assertThrows(IllegalArgumentException.class, () -> new Region("kv", Long.MAX_VALUE - Bytes.GiB, Bytes.GiB + 1));
    assertThrows(IllegalArgumentException.class, () -> new Region("kv", 1, Long.MAX_VALUE));
  }

  @Test
  void containsComparesLengthsSoThatAHugeLengthCannotWrapIntoTheRegion() {
    Region r = new Region("kv", Bytes.GiB, 4 * Bytes.GiB);
    assertTrue(r.contains(Bytes.GiB, 4 * Bytes.GiB));
    assertTrue(r.contains(5 * Bytes.GiB, 0));
    assertFalse(r.contains(Bytes.GiB, 4 * Bytes.GiB + 1));
    assertFalse(r.contains(2 * Bytes.GiB, Long.MAX_VALUE), "offset + length wraps negative");
    assertFalse(r.contains(Long.MAX_VALUE, 1));
    assertFalse(r.contains(Bytes.GiB - 1, 1));
    assertFalse(r.contains(2 * Bytes.GiB, -1));
  }

  @Test
  void aPlanWhoseRegionsSumPastLongMaxValueIsRejectedNotWrapped() {
    DeviceSpec device = DeviceSpec.defaultDevice();
    assertThrows(IllegalArgumentException.class, () -> new MemoryPlan(device, Long.MAX_VALUE, 1));
    assertThrows(IllegalArgumentException.class, () -> new MemoryPlan(device, Long.MAX_VALUE / 2 + 1, Long.MAX_VALUE / 2 + 1));
    assertThrows(IllegalArgumentException.class, () -> new MemoryPlan(device, 40 * Bytes.GiB, 40 * Bytes.GiB));
    assertEquals(Bytes.GiB, new MemoryPlan(device, 40 * Bytes.GiB, 39 * Bytes.GiB).testedRegion().sizeBytes());
  }
}
