package kvsim.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Sizes parse with binary and decimal units and reject anything else. */
class BytesTest {
  @Test
  void binaryAndDecimalUnitsParse() {
    assertEquals(85_899_345_920L, Bytes.parse("80GiB"));
    assertEquals(40_000_000_000L, Bytes.parse("40GB"));
    assertEquals(512 * 1024L, Bytes.parse("512KiB"));
    assertEquals(4096, Bytes.parse("4096"));
    assertEquals(1536 * 1024L * 1024L, Bytes.parse("1.5GiB"));
  }

  @Test
  void junkAndFractionsOfBytesAreRejected() {
    assertThrows(IllegalArgumentException.class, () -> Bytes.parse("eighty"));
    assertThrows(IllegalArgumentException.class, () -> Bytes.parse("1.5"));
    assertThrows(IllegalArgumentException.class, () -> Bytes.parse("-4KiB"));
    assertThrows(IllegalArgumentException.class, () -> Bytes.parse("99999999TiB"));
  }

  @Test
  void sizesUpToLongMaxValueParseExactlyAndOneMoreIsTooLarge() {
    assertEquals(Long.MAX_VALUE, Bytes.parse("9223372036854775807"));
    assertEquals(Long.MAX_VALUE, Bytes.parse("9223372036854775807B"));
    assertEquals(8_388_607L * Bytes.TiB, Bytes.parse("8388607TiB"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Bytes.parse("9223372036854775808"));
    assertTrue(e.getMessage().contains("too large"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Bytes.parse("8388608TiB"), "2^63 B");
    assertThrows(IllegalArgumentException.class, () -> Bytes.parse("9223372036854775.808KB"));
  }

  @Test
  void hugeAndNegativeValuesFormatWithoutOverflow() {
    assertEquals("8388608.00 TiB", Bytes.format(Long.MAX_VALUE));
    assertEquals("-8388608.00 TiB", Bytes.format(Long.MIN_VALUE));
    assertEquals("1023 B", Bytes.format(1023));
    assertEquals("80.00 GiB", Bytes.format(80 * Bytes.GiB));
  }

  @Test
  void ceilDivAndRoundUpAreExactUpToLongMaxValue() {
    assertEquals(1, Bytes.ceilDiv(Long.MAX_VALUE, Long.MAX_VALUE));
    assertEquals(2, Bytes.ceilDiv(Long.MAX_VALUE, Long.MAX_VALUE - 1));
    assertEquals(Long.MAX_VALUE / (8 * Bytes.MiB) + 1, Bytes.ceilDiv(Long.MAX_VALUE, 8 * Bytes.MiB));
    assertEquals((1L << 40), Bytes.ceilDiv(1L << 62, 1L << 22));
    assertEquals(0, Bytes.ceilDiv(0, 7));
    assertEquals(Long.MAX_VALUE, Bytes.roundUp(Long.MAX_VALUE, 1));
    assertEquals(Long.MAX_VALUE - 511, Bytes.roundUp(Long.MAX_VALUE - 600, 512));
    assertThrows(ArithmeticException.class, () -> Bytes.roundUp(Long.MAX_VALUE - 510, 512));
  }
}
