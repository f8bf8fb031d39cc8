package kvsim.alloc.buddy;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** The summary bitmap: lowest member, set and clear across levels, and agreement with a TreeSet. */
class BlockBitmapTest {

  @Test
  void anEmptyBitmapHasNoLowestMember() {
    assertEquals(-1, new BlockBitmap(0).lowest());
    assertEquals(-1, new BlockBitmap(1).lowest());
    assertEquals(-1, new BlockBitmap(1 << 20).lowest());
    new BlockBitmap(0).checkInvariants("test", "empty");
  }

  @Test
  void theLowestMemberIsFoundAcrossThreeLevels() {
    BlockBitmap bits = new BlockBitmap(300_000); // 4,688 words, 74 summary words, 2 above, 1 on top
    bits.set(299_999);
    assertEquals(299_999, bits.lowest());
    bits.set(4_097);
    bits.set(64);
    assertEquals(64, bits.lowest());
    bits.clear(64);
    assertEquals(4_097, bits.lowest());
    assertTrue(bits.get(4_097));
    assertFalse(bits.get(4_096));
    assertArrayEquals(new int[] {4_097, 299_999}, bits.members());
    assertEquals(2, bits.count());
    bits.checkInvariants("test", "three levels");
  }

  @Test
  void randomSetsAndClearsAgreeWithATreeSet() {
    for (int size : new int[] {1, 63, 64, 65, 4096, 4097, 262_145}) {
      BlockBitmap bits = new BlockBitmap(size);
      TreeSet<Integer> expected = new TreeSet<>();
      SplittableRandom random = new SplittableRandom(size);
      for (int op = 0; op < 50_000; op++) {
        int i = random.nextInt(size);
        if (expected.contains(i)) {
          bits.clear(i);
          expected.remove(i);
        } else {
          bits.set(i);
          expected.add(i);
        }
        assertEquals(expected.isEmpty() ? -1 : expected.first(), bits.lowest(), "size " + size + ", op " + op);
        if (op % 5_000 == 0) {
          bits.checkInvariants("test", "size " + size);
        }
      }
      assertArrayEquals(expected.stream().mapToInt(Integer::intValue).toArray(), bits.members());
      bits.checkInvariants("test", "size " + size);
    }
  }
}
